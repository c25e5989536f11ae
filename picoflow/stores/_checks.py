"""Input checks and JSON handling shared by every store.

Every store runs the same checks with the same messages, so a flow behaves identically on
`MemoryStore` in tests and on `SQLiteStore` or `MongoStore` in production. The checks run before
anything is written: a refused call never leaves a partial write behind.
"""

from __future__ import annotations

import json
from typing import TypeGuard

from picoflow.errors import StoreError
from picoflow.stores._limits import check_archived_message
from picoflow.stores.base import ArchiveEntry, JSONDict, searchable_text

__all__ = [
    "check_entries",
    "check_new_doc",
    "check_open",
    "check_page",
    "check_saved_doc",
    "conflict_on_create_message",
    "decode",
    "encode",
    "search_text",
    "search_words",
]


def _is_int(value: object) -> TypeGuard[int]:
    # bool is an int subclass; True as a revision or a position is always a caller bug.
    return isinstance(value, int) and not isinstance(value, bool)


def check_new_doc(doc: JSONDict) -> str:
    """Return the id of a document fit for `create`, or raise ValueError saying what to fix."""
    session_id = doc.get("id")
    if not isinstance(session_id, str) or not session_id:
        raise ValueError(
            f"Cannot create a session: doc['id'] must be a non-empty string, got "
            f"{session_id!r}. Give the document its session id before storing it."
        )
    revision = doc.get("revision")
    if not _is_int(revision) or revision != 0:
        raise ValueError(
            f"Cannot create session '{session_id}': doc['revision'] must be 0 for a new "
            f"session, got {revision!r}. Use save() to update an existing session."
        )
    return session_id


def check_saved_doc(doc: JSONDict, expected_revision: int) -> str:
    """Return the id of a document fit for `save`, or raise ValueError saying what to fix."""
    session_id = doc.get("id")
    if not isinstance(session_id, str):
        raise ValueError(
            f"Cannot save a session: doc['id'] must be a string, got {session_id!r}. "
            "Save the document that create() stored or load() returned."
        )
    if not _is_int(expected_revision) or expected_revision < 0:
        raise ValueError(
            f"Cannot save session '{session_id}': expected_revision must be an integer >= 0, "
            f"got {expected_revision!r}. Pass the revision of the document you loaded."
        )
    return session_id


def conflict_on_create_message(session_id: str, actual_revision: int) -> str:
    """The SessionConflictError text for a `create` whose id is taken."""
    return (
        f"Session '{session_id}' already exists (revision {actual_revision}); create() never "
        "overwrites a session. Load it and save() instead, or create it under a new id."
    )


def check_entries(session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
    """Refuse malformed archive entries, or messages no store keeps (H7).

    Each entry must be `{"position": int >= 0, "message": dict}`, optionally with
    `"compacted_at"`: the ISO stamp of the compaction that evicted it (M16).
    """
    for entry in entries:
        position = entry.get("position")
        if not _is_int(position) or position < 0 or not isinstance(entry.get("message"), dict):
            raise ValueError(
                f"Cannot archive into session '{session_id}', namespace '{namespace}': each "
                "entry must be {'position': int >= 0, 'message': dict}, got "
                f"position={position!r} and message of type "
                f"{type(entry.get('message')).__name__}. Nothing was archived."
            )
        stamp = entry.get("compacted_at")
        if stamp is not None and (not isinstance(stamp, str) or not stamp):
            raise ValueError(
                f"Cannot archive into session '{session_id}', namespace '{namespace}': an "
                "entry's 'compacted_at' must be the ISO 8601 stamp of the compaction that "
                f"evicted it (e.g. '2026-01-01T00:00:00.000Z') or absent, got {stamp!r}. "
                "Nothing was archived."
            )
    for entry in entries:
        check_archived_message(session_id, namespace, entry["message"])


def check_page(page: int, page_size: int) -> None:
    """Refuse page numbers below 1 and page sizes below 1 (pages count from 1)."""
    if not _is_int(page) or page < 1 or not _is_int(page_size) or page_size < 1:
        raise ValueError(
            f"search_archive pages count from 1 and hold at least one entry, got "
            f"page={page!r}, page_size={page_size!r}."
        )


def check_open(store: object, closed: bool) -> None:
    """Raise StoreError if `aclose()` was called, so a shutdown bug shows up at once."""
    if closed:
        name = type(store).__name__
        raise StoreError(
            f"{name} was closed with aclose() and cannot be used again; create a new {name}."
        )


# One encoder for every call: `json.dumps` with options builds a new encoder each time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def encode(doc: object, session_id: str) -> str:
    """Serialise to strict JSON text, the one form every store keeps.

    Strict (no NaN/Infinity) because people query stored sessions with other tools, which
    reject those values (S5 keeps them out of state in the first place).
    """
    try:
        return _ENCODER.encode(doc)
    except TypeError as exc:  # "Object of type set is not JSON serializable"
        reason = str(exc)
        cause: Exception = exc
    except ValueError as exc:
        # NaN/Infinity or a reference cycle; Python versions differ in what follows the colon.
        reason = str(exc).split(":")[0]
        cause = exc
    raise TypeError(
        f"Session '{session_id}' is not plain JSON: {reason}. Store only dicts with string "
        "keys, lists, strings, finite numbers, booleans and None."
    ) from cause


def decode(text: str, session_id: str = "") -> JSONDict:
    """Parse stored JSON text into a fresh dict the caller owns.

    Text that is not a JSON object was changed outside picoflow: retrying cannot help (H3).
    """
    try:
        doc = json.loads(text)
    except (TypeError, ValueError):  # ValueError covers JSONDecodeError and bad UTF-8
        doc = None
    if not isinstance(doc, dict):
        raise StoreError(
            f"The stored document of session '{session_id}' is damaged: it is not a JSON "
            "object, so it was changed outside picoflow. Delete the session or restore it "
            "from a backup.",
            retryable=False,
        )
    return doc


def search_text(message: JSONDict) -> str:
    """The lowercased text a search runs against (content plus tool-call arguments)."""
    return searchable_text(message).lower()


def search_words(query: str) -> list[str]:
    """The lowercased words of a query; an entry matches when it contains all of them."""
    return query.lower().split()
