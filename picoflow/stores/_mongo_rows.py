"""MongoStore's message rows and revisions: a save writes what the turn added (#25, W1).

Rewriting the whole session document every turn made a turn's cost grow with the conversation
(408 KB at turn 300 of HotelFlow, a server that re-encodes it on every update). So the messages
of a session live in the history collection, as immutable rows written once, and the session
document keeps, per namespace, how many messages it has and which batches of rows hold them:

    session: {..., "memory": {"explore": {"messages": [], ...}},
              "_parts": {"explore": {"n": 42, "t": ["1.9f2c", "7.03ab", ...]}},
              "_history": [[revision, token, saved_at], ...]}
    message row: {"s": session id, "t": token, "w": revision, "n": namespace, "p": position,
                  "m": message, "x": expiry}
    revision row: {"s", "t", "w", "r": revision, "at": saved_at, "note": {...}, "doc": the
                   session document as saved, without `_history`, "x"}

A save draws a fresh token, inserts the rows of what changed (new messages, a changed system
slot) and its revision row under that token, then replaces the (small) session document with a
compare-and-set on the revision. A namespace's messages are its batches applied in order (each
row sets its position) and cut to `n`. Only the session document decides which rows count: the
rows of a writer that lost the compare-and-set (or crashed before it) carry a token no
document names, are invisible, and are deleted by the loser or by the next sweep. Reading an
old revision is the same assembly from its revision row's `_parts`.

A batch is named by a contiguous run of revisions: from the save that wrote it to the one
whose document no longer lists it (its *retirement*, recorded in `_retired`). Its rows (and
the revision row of the save that wrote it, which shares its token) are deleted once retention
drops every revision that named it: an indexed delete by token, no scan.

When this store does not know what it wrote at the expected revision (another process saved,
a restart, a plain list), or a namespace has `MAX_BATCHES` batches, the namespace is written in
full under one token, so the batch list stays short.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from picoflow.errors import StoreError
from picoflow.stores.base import REMEMBERED_SESSIONS, JSONDict, SavedMessages, unchanged

__all__ = [
    "MAX_BATCHES",
    "aware",
    "date_of",
    "fill",
    "Written",
    "WrittenMemory",
    "assemble",
    "by_tokens",
    "new_token",
    "plan_rows",
    "rows_expiry",
]

MAX_BATCHES = 32


@dataclass(slots=True)
class Written:
    """What this store wrote at `revision`: the lists saved, their batches, the history."""

    revision: int
    lists: dict[str, list[Any]]  # stored namespace key -> the SavedMessages object saved
    parts: dict[str, JSONDict]  # stored namespace key -> {"n": count, "t": [tokens]}
    history: list[list[Any]]  # [[revision, token, saved_at], ...] oldest first
    rows_x: datetime | None  # the expiry the session's rows carry
    retired: list[list[Any]]  # [[revision, token], ...]: batches no longer named from then on


class WrittenMemory:
    """The last `Written` of the most recently saved sessions."""

    def __init__(self, capacity: int = REMEMBERED_SESSIONS) -> None:
        self._capacity = capacity
        self._sessions: OrderedDict[str, Written] = OrderedDict()

    def at(self, session_id: str, revision: int) -> Written | None:
        known = self._sessions.get(session_id)
        return known if known is not None and known.revision == revision else None

    def latest(self, session_id: str) -> Written | None:
        """What this store last wrote of the session, whatever revision it is at now."""
        return self._sessions.get(session_id)

    def keep(self, session_id: str, written: Written) -> None:
        self._sessions[session_id] = written
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self._capacity:
            self._sessions.popitem(last=False)

    def forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)

    def clear(self) -> None:
        self._sessions.clear()


def new_token(revision: int) -> str:
    """A batch name no other writer draws: the revision, and 32 random bits."""
    return f"{revision}.{secrets.token_hex(4)}"


def plan_rows(
    session_id: str,
    revision: int,
    token: str,
    lists: dict[str, tuple[list[Any], list[Any]]],
    known: Written | None,
) -> tuple[dict[str, JSONDict], list[JSONDict]]:
    """The `_parts` of the new document and the message rows to insert.

    `lists` maps each stored namespace key to (the messages object, their encoded values).
    """
    parts: dict[str, JSONDict] = {}
    rows: list[JSONDict] = []
    for key, (messages, encoded) in lists.items():
        old = known.lists.get(key) if known is not None else None
        old_part = known.parts.get(key) if known is not None else None
        positions: list[int] | range
        if (
            old is not None
            and old_part is not None
            and isinstance(messages, SavedMessages)
            and len(old_part["t"]) < MAX_BATCHES
        ):
            positions = _changed(messages, old)
            tokens = list(old_part["t"]) + ([token] if positions else [])
        else:
            positions = range(len(encoded))
            tokens = [token] if encoded else []
        parts[key] = {"n": len(encoded), "t": tokens}
        rows += [
            {"s": session_id, "t": token, "w": revision, "n": key, "p": p, "m": encoded[p]}
            for p in positions
        ]
    return parts, rows


def retire(
    old_parts: JSONDict,
    parts: JSONDict,
    retired: list[list[Any]],
    revision: int,
    dropped: list[str],
    oldest: int,
) -> tuple[list[list[Any]], list[str]]:
    """(batches still retired but named by a kept revision, tokens whose rows may go now).

    `dropped` are the tokens of the revisions retention just removed, `oldest` the oldest
    revision kept.
    """
    before = {token for part in old_parts.values() for token in part["t"]}
    now = {token for part in parts.values() for token in part["t"]}
    retired = [*retired, *([revision, token] for token in sorted(before - now))]
    pending = {token for at, token in retired if at > oldest}
    gone = {token for at, token in retired if at <= oldest}
    gone.update(token for token in dropped if token not in now and token not in pending)
    return [[at, token] for at, token in retired if at > oldest], sorted(gone)


def _changed(messages: list[Any], old: list[Any]) -> list[int]:
    """Positions whose object is not the one written last time (see `unchanged`)."""
    if not messages:
        return []
    keep, slot_kept = unchanged(messages, old)
    return ([] if slot_kept else [0]) + list(range(max(keep, 1), len(messages)))


def assemble(session_id: str, parts: JSONDict, rows: list[JSONDict]) -> dict[str, list[Any]]:
    """Each namespace's messages from its batches' rows, in order, cut to its count.

    Raises:
        StoreError: a batch a document names is missing rows (changed outside picoflow).
    """
    by_batch: dict[tuple[str, str], list[JSONDict]] = {}
    for row in rows:
        by_batch.setdefault((row["t"], row["n"]), []).append(row)
    out: dict[str, list[Any]] = {}
    for key, part in parts.items():
        messages: list[Any] = []
        for token in part["t"]:
            for row in sorted(by_batch.get((token, key), []), key=lambda r: r["p"]):
                position = row["p"]
                if position < len(messages):
                    messages[position] = row["m"]
                elif position == len(messages):
                    messages.append(row["m"])
                else:
                    raise _damaged(session_id, key)
        if len(messages) < part["n"]:
            raise _damaged(session_id, key)
        out[key] = messages[: part["n"]]
    return out


def _damaged(session_id: str, key: str) -> StoreError:
    return StoreError(
        f"The stored messages of session '{session_id}', namespace '{key}' are incomplete: "
        "rows its document names are missing from the history collection, so they were "
        "deleted outside picoflow. Delete the session or restore it from a backup.",
        retryable=False,
    )


def rows_expiry(doc: JSONDict, expires: datetime | None) -> datetime | None:
    """When the session's rows may go: its expiry plus its time to live again.

    Rows are stamped once and re-stamped only when the session's expiry passes their stamp,
    so an active session with a sliding expiry re-stamps its rows once per time to live.
    """
    if expires is None:
        return None
    try:
        updated = datetime.fromisoformat(str(doc.get("updated_at")).replace("Z", "+00:00"))
    except ValueError:
        return expires
    if updated.tzinfo is None:
        return expires
    ttl = expires - updated
    return expires + (ttl if ttl > timedelta(0) else timedelta(0))


async def fill(history: Any, session_id: str, stored: JSONDict) -> None:
    """Put the messages a stored document's `_parts` name back into it (see `_mongo_rows`)."""
    parts = stored.get("_parts")
    if not parts:
        return
    tokens = sorted({token for part in parts.values() for token in part["t"]})
    # Only the indexed fields in the filter (see `by_tokens`); revision rows sharing a token
    # come back as a bare `t` and are dropped here.
    found = [
        row
        async for row in by_tokens(history, session_id, tokens, {"t": 1, "n": 1, "p": 1, "m": 1})
        if "p" in row
    ]
    memory = stored["memory"]
    for key, messages in assemble(session_id, parts, found).items():
        memory[key] = {**memory[key], "messages": messages}


def by_tokens(history: Any, session_id: str, tokens: list[str], fields: JSONDict) -> Any:
    """The rows of these batches: a cursor filtered on the `(s, t)` index's fields alone.

    MongoDB answers a filter with one more field (`"p": {"$exists": True}`, `"r": 5`) from
    the index as well, but SecantusDB then plans a collection scan over every session's rows
    (its explain: 1,850 documents examined for 37 with 50 sessions stored). So the caller
    tells message rows (`p`) from revision rows (`r`) itself.
    """
    return history.find({"s": session_id, "t": {"$in": tokens}}, {"_id": 0, **fields})


def aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def date_of(stamp: str) -> datetime:
    return aware(datetime.fromisoformat(stamp.replace("Z", "+00:00")))
