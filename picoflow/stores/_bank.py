"""The long-term memory bank's records, shared by every store (L1, L4, L5).

An entry is one thing worth keeping about an owner, across sessions: `{"id", "owner",
"text", "kind", "created_at", "updated_at", "source"}`, where `source` says where it came from
(`{"session_id", "message_ids"}`, or None for an entry the app wrote). Every store checks
entries here, so each refuses the same input with the same words, and ranks the same way
where it has no text index of its own.
"""

from __future__ import annotations

import heapq
import math
import operator
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any, TypedDict

from picoflow.errors import EmbeddingsMismatchError

__all__ = [
    "BankEntry",
    "MAX_TEXT",
    "MAX_KIND",
    "new_entry",
    "stamp",
    "checked_entry",
    "check_owner",
    "check_text",
    "check_kind",
    "check_page",
    "check_vector",
    "check_model",
    "nearest",
    "unit",
    "query_words",
    "rank",
]

MAX_TEXT = 2000
MAX_KIND = 32
_WORD = re.compile(r"\w+", re.UNICODE)
_KIND = re.compile(rf"[a-z][a-z0-9_-]{{0,{MAX_KIND - 1}}}")


class BankEntry(TypedDict):
    """One remembered thing of one owner."""

    id: str
    owner: str
    text: str
    kind: str
    created_at: str
    updated_at: str
    source: dict[str, Any] | None


def check_owner(owner: Any) -> str:
    """An owner is a non-empty string: the principal, or the app's user id."""
    if not isinstance(owner, str) or not owner.strip():
        raise ValueError(
            f"A memory bank belongs to an owner: a non-empty string (the principal, or "
            f"config.user_id), got {owner!r}."
        )
    return owner


def check_text(text: Any) -> str:
    """What is remembered: non-empty text of at most MAX_TEXT characters, stripped."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"A memory entry needs non-empty text, got {text!r}.")
    stripped: str = text.strip()
    if len(stripped) > MAX_TEXT:
        raise ValueError(
            f"A memory entry holds at most {MAX_TEXT} characters, got {len(stripped)}: keep one "
            "fact per entry."
        )
    return stripped


def check_kind(kind: Any) -> str:
    """A short lowercase label (`fact`, `preference`, `episode`, ...)."""
    if not isinstance(kind, str) or not _KIND.fullmatch(kind):
        raise ValueError(
            f"A memory entry's kind is a short lowercase label such as 'fact', 'preference' or "
            f"'episode' (letters, digits, '_' or '-', at most {MAX_KIND}), got {kind!r}."
        )
    return kind


def check_page(page: Any, page_size: Any) -> None:
    """Pages count from 1 and hold 1 to 100 entries."""
    ok = isinstance(page, int) and not isinstance(page, bool) and page >= 1
    ok = ok and isinstance(page_size, int) and not isinstance(page_size, bool)
    if not ok or not 1 <= page_size <= 100:
        raise ValueError(
            f"Memory bank pages count from 1 and hold 1 to 100 entries, got page={page!r}, "
            f"page_size={page_size!r}."
        )


def check_vector(vector: Any) -> list[float]:
    """An embedding (L4): a non-empty list of finite numbers, kept as floats."""
    ok = isinstance(vector, list | tuple) and bool(vector)
    ok = ok and all(isinstance(x, int | float) and not isinstance(x, bool) for x in vector)
    floats = [float(x) for x in vector] if ok else []
    if not ok or any(x != x or x in (float("inf"), float("-inf")) for x in floats):
        shown = type(vector).__name__ if not isinstance(vector, list | tuple) else "that list"
        raise ValueError(
            f"A memory entry's vector is a non-empty list of finite numbers (what an "
            f"Embeddings model returns), got {shown}."
        )
    return floats


def check_model(
    recorded: dict[str, Any] | None, model: str | None, dimensions: int
) -> dict[str, Any]:
    """The store's record of its embedding model, after a vector of `model` (L4).

    A store keeps one `{"model", "dimensions"}` record for its whole bank: the first vector
    sets it, a vector of another dimension or another named model is refused
    (`EmbeddingsMismatchError`, naming both), never mixed in. A model that was not named
    (None: a vector stored without one) is named by the first caller that names it.

    >>> check_model(None, "m", 3)
    {'model': 'm', 'dimensions': 3}
    >>> check_model({"model": None, "dimensions": 3}, "m", 3)
    {'model': 'm', 'dimensions': 3}
    """
    given: dict[str, Any] = {"model": model, "dimensions": dimensions}
    if recorded is None:
        return given
    other_model = model is not None and recorded.get("model") not in (None, model)
    if recorded.get("dimensions") != dimensions or other_model:
        raise EmbeddingsMismatchError(dict(recorded), given)
    return {"model": recorded.get("model") or model, "dimensions": dimensions}


def stamp() -> str:
    """UTC now in the format of every stored timestamp (ISO 8601, milliseconds, a Z)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_entry(
    owner: str, text: str, kind: str = "fact", source: dict[str, Any] | None = None
) -> BankEntry:
    """A checked entry with a fresh id, ready for a store's `bank_add`."""
    at = stamp()
    return {
        "id": secrets.token_hex(12),
        "owner": check_owner(owner),
        "text": check_text(text),
        "kind": check_kind(kind),
        "created_at": at,
        "updated_at": at,
        "source": source,
    }


def checked_entry(entry: Any) -> BankEntry:
    """The entry a store keeps: every field checked, a copy the caller cannot change."""
    if not isinstance(entry, dict):
        kind = type(entry).__name__
        raise TypeError(f"bank_add() takes an entry dict (see new_entry), got {kind}.")
    missing = sorted(set(BankEntry.__annotations__) - set(entry))
    if missing:
        raise ValueError(f"A memory entry lacks {', '.join(missing)}; build it with new_entry().")
    source = entry["source"]
    if source is not None and not isinstance(source, dict):
        raise ValueError(f"A memory entry's source is a dict or None, got {source!r}.")
    return {
        "id": str(entry["id"]),
        "owner": check_owner(entry["owner"]),
        "text": check_text(entry["text"]),
        "kind": check_kind(entry["kind"]),
        "created_at": str(entry["created_at"]),
        "updated_at": str(entry["updated_at"]),
        "source": dict(source) if source is not None else None,
    }


def query_words(query: str) -> list[str]:
    """The lowercased words of a search; punctuation is never query syntax."""
    return [word.lower() for word in _WORD.findall(query)]


def rank(entries: list[BankEntry], words: list[str]) -> list[BankEntry]:
    """Entries matching any word, the most relevant first (where no text index ranks them).

    Relevance: how many distinct query words the text holds, then how often they occur, then
    the newest first. A stand-in for bm25 that agrees with it on what comes first in the
    common cases (more of the query, then more of it).
    """
    scored = []
    for entry in entries:
        found = query_words(entry["text"])
        distinct = sum(1 for word in set(words) if any(f.startswith(word) for f in found))
        if not distinct:
            continue
        hits = sum(1 for f in found for word in words if f.startswith(word))
        scored.append(((distinct, hits, entry["updated_at"]), entry))
    scored.sort(key=lambda pair: pair[0], reverse=True)
    return [entry for _, entry in scored]


def unit(vector: list[float]) -> list[float]:
    """The vector scaled to length 1, as stores keep vectors (cosine is then a dot product).

    >>> unit([3.0, 4.0]), unit([0.0, 0.0])
    ([0.6, 0.8], [0.0, 0.0])
    """
    length = math.sqrt(sum(map(operator.mul, vector, vector)))
    return [x / length for x in vector] if length else list(vector)


def nearest(
    query: Sequence[float], vectors: Iterable[tuple[str, Sequence[float]]], limit: int
) -> list[tuple[str, float]]:
    """The ids of the `limit` stored vectors most similar to `query`, best first.

    Stored vectors are unit length (`unit`), so cosine is one dot product each, which `map`
    over `operator.mul` runs at C speed: how a store without a vector index scores its rows.
    Only a similarity above 0 counts; ties keep the order of `vectors`.

    >>> nearest([2.0, 0.0], [("a", [0.0, 1.0]), ("b", [0.6, 0.8]), ("c", [1.0, 0.0])], 5)
    [('c', 1.0), ('b', 0.6)]
    """
    wanted = unit(list(query))
    scored = []
    for key, vector in vectors:
        if len(vector) == len(wanted):
            similarity = sum(map(operator.mul, wanted, vector))
            if similarity > 0.0:
                scored.append((key, similarity))
    return heapq.nlargest(limit, scored, key=lambda pair: pair[1])
