"""MongoStore's save path: what the stored document had, this save's rows, the compare-and-set.

A save writes its rows first, under a fresh token, then replaces the session document filtered
on its revision (`replace_session`): nothing names the rows until that succeeds, so a save that
lost (or crashed) leaves them invisible (see `_mongo_rows`).
"""

from __future__ import annotations

from typing import Any

from picoflow.errors import SessionConflictError, SessionNotFoundError
from picoflow.stores import _history
from picoflow.stores import _mongo_rows as rows
from picoflow.stores._mongo_connect import Collection
from picoflow.stores.base import JSONDict

__all__ = ["nothing_before", "replace_session", "revision_in", "stored_before", "write_rows"]

_BEFORE_FIELDS = {"revision": 1, "_history": 1, "_rows_x": 1, "_parts": 1, "_retired": 1}


def nothing_before() -> JSONDict:
    """What a brand-new session's document had: no revisions, rows, batches or expiry."""
    return {"history": [], "rows_x": None, "parts": {}, "retired": []}


async def stored_before(
    sessions: Collection, session_id: str, expected_revision: int, known: rows.Written | None
) -> JSONDict:
    """What the stored document says of its rows; from memory if this store wrote it last.

    Reading it also tells a missing session or a stale revision before any row is written.
    """
    if known is not None:
        return {
            "history": known.history,
            "rows_x": known.rows_x,
            "parts": known.parts,
            "retired": known.retired,
        }
    found = await sessions.find_one({"_id": session_id}, _BEFORE_FIELDS)
    if found is None:
        raise SessionNotFoundError(session_id)
    if found["revision"] != expected_revision:
        raise SessionConflictError(session_id, expected_revision, found["revision"])
    return {
        "history": list(found.get("_history", [])),
        "rows_x": found.get("_rows_x"),
        "parts": found.get("_parts", {}),
        "retired": found.get("_retired", []),
    }


async def replace_session(
    collections: tuple[Collection, Collection, Collection],
    record: JSONDict,
    expected_revision: int,
    token: str,
    gone: list[str],
) -> None:
    """Store `record` if the revision is still `expected_revision`, else drop this save's rows.

    Raises:
        SessionNotFoundError: the session is gone.
        SessionConflictError: another writer saved first.
    """
    sessions, _, history = collections
    session_id = record["_id"]
    # P2/P4: the filter is the compare-and-set; without upsert, no match writes nothing.
    result = await sessions.replace_one({"_id": session_id, "revision": expected_revision}, record)
    if result.matched_count == 0:
        await history.delete_many({"s": session_id, "t": token})
        actual = await revision_in(sessions, session_id)
        if actual is None:
            raise SessionNotFoundError(session_id)
        raise SessionConflictError(session_id, expected_revision, actual)
    if gone:  # W5: rows no kept revision names any more (see `_mongo_rows`)
        await history.delete_many({"s": session_id, "t": {"$in": gone}})


async def write_rows(
    collections: tuple[Collection, Collection, Collection],
    doc: JSONDict,
    record: JSONDict,
    lists: dict[str, tuple[list[Any], list[Any]]],
    known: rows.Written | None,
    note: JSONDict,
    before: JSONDict,
) -> tuple[rows.Written, str, list[str]]:
    """Insert this save's rows and revision, and finish `record`.

    Returns what it wrote, its token, and the tokens whose rows may be deleted once the
    save succeeded. `before` is what the stored document had: `history`, `rows_x`,
    `parts`, `retired`. Nothing names the rows until `record` is stored, so a failed save
    leaves them invisible (see `_mongo_rows`).
    """
    session_id, revision = record["_id"], record["revision"]
    token = rows.new_token(revision)
    parts, new_rows = rows.plan_rows(session_id, revision, token, lists, known)
    saved_at = _history.now_stamp()
    listed, dropped = _kept_revisions(before["history"], [revision, token, saved_at], note)
    retired, gone = rows.retire(
        before["parts"], parts, before["retired"], revision, dropped, listed[0][0]
    )
    rows_x = await _extended_expiry(collections, doc, record, before["rows_x"])
    _finish_record(record, parts, retired, rows_x)
    revision_row = _revision_row(record, token, saved_at, note)
    record["_history"] = listed
    inserted = [*new_rows, revision_row]
    if rows_x is not None:
        for row in inserted:
            row["x"] = rows_x
    await collections[2].insert_many(inserted, ordered=False)
    lists_saved = {key: messages for key, (messages, _) in lists.items()}
    return rows.Written(revision, lists_saved, parts, listed, rows_x, retired), token, gone


def _kept_revisions(
    past: list[Any], newest: list[Any], note: JSONDict
) -> tuple[list[Any], list[Any]]:
    """The revisions retention keeps once `newest` is saved, and the tokens it drops (W5)."""
    listed = [*past, newest]
    oldest = _history.kept([(r, at) for r, _, at in listed], note)
    dropped = [item[1] for item in listed if item[0] < oldest]
    return [item for item in listed if item[0] >= oldest], dropped


async def _extended_expiry(
    collections: tuple[Collection, Collection, Collection],
    doc: JSONDict,
    record: JSONDict,
    rows_x: Any,
) -> Any:
    """The rows' expiry, moved later (on every row and archived message) if the session's is.

    W5: a session's rows and archive expire with it, through MongoDB's TTL monitor on `x`.
    """
    _, archive, history = collections
    session_id, expires = record["_id"], record.get("_expires_at")
    if expires is not None and (rows_x is None or rows.aware(expires) > rows.aware(rows_x)):
        rows_x = rows.rows_expiry(doc, expires)
        await history.update_many({"s": session_id}, {"$set": {"x": rows_x}})
        await archive.update_many({"session_id": session_id}, {"$set": {"x": rows_x}})
    return rows_x


def _finish_record(record: JSONDict, parts: JSONDict, retired: list[Any], rows_x: Any) -> None:
    """Name this save's batches, retirements and row expiry in the session document."""
    if parts:
        record["_parts"] = parts
    if retired:
        record["_retired"] = retired
    if rows_x is not None:
        record["_rows_x"] = rows_x


def _revision_row(record: JSONDict, token: str, saved_at: str, note: JSONDict) -> JSONDict:
    """The row that keeps this revision (W1): the document as saved, before `_history`."""
    revision = record["revision"]
    return {
        "s": record["_id"],
        "t": token,
        "w": revision,
        "r": revision,
        "at": saved_at,
        "note": {name: note[name] for name in _history.NOTE_FIELDS},
        "doc": dict(record),
    }


async def revision_in(sessions: Collection, session_id: str) -> int | None:
    """The stored revision, or None: the server sends back one small field."""
    found = await sessions.find_one({"_id": session_id}, {"revision": 1, "_id": 0})
    return None if found is None else int(found["revision"])
