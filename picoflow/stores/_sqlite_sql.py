"""SQLiteStore's statements on one connection: its transaction, the session row, the snapshot.

Everything here runs on a connection the store already holds (on the event loop or on a worker
thread); none of it knows which. Kept apart from `sqlite.py` so the store reads as what each
call does, and this module as how SQLite is made to do it atomically.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from picoflow.stores._sqlite_rows import Plan, apply
from picoflow.stores._sqlite_worker import Gate, WouldWait
from picoflow.stores.base import JSONDict

__all__ = [
    "MISSING",
    "WOULD_WAIT",
    "all_lists",
    "error_code",
    "expires_at",
    "immediate",
    "load_snapshot",
    "revision_of",
    "write_row",
]

WOULD_WAIT = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
MISSING = -1  # what `write_row` reports for a session that is not stored


def error_code(exc: sqlite3.Error) -> int:
    """SQLite's primary result code of an error (SQLITE_BUSY for all its extended codes)."""
    return int(getattr(exc, "sqlite_errorcode", 0)) & 0xFF


class immediate:  # noqa: N801 - used as a statement: `with immediate(db, gate):`
    """One transaction that takes the file's write lock up front.

    It commits unless the caller was cancelled meanwhile (then, or on any error, it rolls
    back).

    IMMEDIATE (not the default DEFERRED) so two connections never both read, then both try to
    upgrade to a write: the second waits for the lock and then sees the first's commit.
    """

    def __init__(self, db: sqlite3.Connection, gate: Gate) -> None:
        self._db = db
        self._gate = gate

    def __enter__(self) -> None:
        try:
            self._db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if not self._gate.may_wait and error_code(exc) in WOULD_WAIT:
                raise WouldWait from exc
            raise

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is None and not self._gate.cancelled:
                self._db.execute("COMMIT")
        finally:
            if self._db.in_transaction:  # an error, a cancelled caller, or a failed COMMIT
                self._db.execute("ROLLBACK")


def write_row(
    db: sqlite3.Connection,
    gate: Gate,
    sql: str,
    params: tuple[Any, ...],
    session_id: str,
    plan: Plan,
    history: Callable[[sqlite3.Connection], None],
) -> int | None:
    """Write the session row holding the lock, and its message rows if it matched.

    Returns None if it did, else the stored revision (`MISSING`: none), read under the same
    lock.
    """
    with immediate(db, gate):
        if db.execute(sql, params).rowcount:
            apply(db, session_id, plan)
            history(db)  # W1: the revision, in the same transaction
            return None
        actual = revision_of(db, session_id)
        return MISSING if actual is None else actual


def load_snapshot(
    db: sqlite3.Connection, session_id: str
) -> tuple[str, list[tuple[str, str]], int] | None:
    """The session row's text, its message rows and its revision, read in one snapshot.

    One read transaction: WAL readers see one commit, whatever writers do meanwhile.
    """
    db.execute("BEGIN")
    try:
        row = db.execute(
            "SELECT doc, revision FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        if row is None:
            return None
        messages = db.execute(
            "SELECT namespace, message FROM messages WHERE session_id = ? "
            "ORDER BY namespace, position",
            (session_id,),
        ).fetchall()
        return row[0], messages, int(row[1])
    finally:
        db.execute("ROLLBACK")


def all_lists(memory: dict[Any, Any]) -> bool:
    """Whether every namespace holds a message list, the only shape the row memory keeps."""
    return all(
        type(entry) is dict and isinstance(entry.get("messages"), list) for entry in memory.values()
    )


def revision_of(db: sqlite3.Connection, session_id: str) -> int | None:
    """The stored revision, or None."""
    # fetchall: the statement runs to its end, so no read transaction stays open after it.
    rows = db.execute("SELECT revision FROM sessions WHERE id = ?", (session_id,)).fetchall()
    return int(rows[0][0]) if rows else None


def expires_at(doc: JSONDict) -> str | None:
    """The document's expiry for its own column, so expired sessions are found without parsing."""
    value = doc.get("expires_at")
    return value if isinstance(value, str) else None
