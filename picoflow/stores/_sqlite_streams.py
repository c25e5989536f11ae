"""SQLiteStore's kept stream events (O5): two small tables, written in batches.

`stream_turns` holds one row per kept stream (owner, expiry, whether `done` is in);
`stream_events` its events, keyed by (turn id, n) without a rowid. An append is one IMMEDIATE
transaction (the events and the new expiry together), so a reader on another connection sees
a batch whole or not at all. Expired streams go in `purge` and, at most every minute, on a
`stream_open`: SQLite has no TTL monitor.
"""

from __future__ import annotations

import sqlite3
import time
from typing import TYPE_CHECKING, TypeVar

from picoflow.stores._sqlite_mixin import SQLiteParts
from picoflow.stores._streams import (
    KeptEvent,
    KeptStream,
    check_events,
    check_turn_id,
    purge_due,
    turn_in_use,
    unknown_turn,
)

if TYPE_CHECKING:
    from picoflow.stores._sqlite_worker import Gate

__all__ = ["STREAMS_SCHEMA", "SQLiteStreams"]

_T = TypeVar("_T")

STREAMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS stream_turns (
    turn_id TEXT PRIMARY KEY,
    owner TEXT,
    expires_at TEXT NOT NULL,
    ended INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS stream_turns_expiry ON stream_turns (expires_at);
CREATE TABLE IF NOT EXISTS stream_events (
    turn_id TEXT NOT NULL,
    n INTEGER NOT NULL,
    frame TEXT NOT NULL,
    PRIMARY KEY (turn_id, n)
) WITHOUT ROWID;
"""

_EXPIRED = "SELECT turn_id FROM stream_turns WHERE expires_at < ?"


class SQLiteStreams(SQLiteParts):
    """The kept-stream methods of `SQLiteStore`."""

    _streams_purged: float = 0.0

    async def stream_open(self, turn_id: str, owner: str | None, expires_at: str, now: str) -> None:
        """Start keeping a turn's stream for `owner` until `expires_at` (O5)."""
        check_turn_id(turn_id)
        purge = purge_due(self._streams_purged)
        if purge:
            self._streams_purged = time.monotonic()

        def open_turn(db: sqlite3.Connection, gate: Gate) -> bool:
            with self._transaction(db, gate):
                if purge:
                    _delete_expired(db, now)
                found = db.execute(
                    "INSERT INTO stream_turns (turn_id, owner, expires_at) VALUES (?, ?, ?) "
                    "ON CONFLICT (turn_id) DO NOTHING RETURNING 1",
                    (turn_id, owner, expires_at),
                ).fetchone()
                return found is not None

        if not await self._write(f"keep the stream of turn '{turn_id}'", open_turn):
            raise turn_in_use(turn_id)

    async def stream_append(
        self, turn_id: str, events: list[KeptEvent], expires_at: str, ended: bool = False
    ) -> None:
        """Add events after the last one kept; `ended` when `done` is among them."""
        checked = check_events(turn_id, events)

        def append(db: sqlite3.Connection, gate: Gate) -> bool:
            with self._transaction(db, gate):
                moved = db.execute(
                    "UPDATE stream_turns SET expires_at = ?, ended = max(ended, ?) "
                    "WHERE turn_id = ?",
                    (expires_at, int(ended), turn_id),
                ).rowcount
                if moved:
                    db.executemany(
                        "INSERT INTO stream_events (turn_id, n, frame) VALUES (?, ?, ?)",
                        [(turn_id, n, frame) for n, frame in checked],
                    )
                return bool(moved)

        if not await self._write(f"keep the events of turn '{turn_id}'", append):
            raise unknown_turn(turn_id)

    async def stream_read(self, turn_id: str, after: int, now: str) -> KeptStream | None:
        """The events after `after`, or None if no stream is kept for the turn."""

        def read(db: sqlite3.Connection) -> KeptStream | None:
            head = db.execute(
                "SELECT owner, ended, expires_at FROM stream_turns "
                "WHERE turn_id = ? AND expires_at >= ?",
                (turn_id, now),
            ).fetchone()
            if head is None:
                return None
            rows = db.execute(
                "SELECT n, frame FROM stream_events WHERE turn_id = ? AND n > ? ORDER BY n",
                (turn_id, after),
            ).fetchall()
            events = [(int(n), str(frame)) for n, frame in rows]
            return KeptStream(head[0], events, bool(head[1]), str(head[2]))

        return await self._read(f"read the stream of turn '{turn_id}'", read)

    async def stream_purge(self, now: str) -> int:
        """Delete the streams that expired before `now`; how many."""
        self._streams_purged = time.monotonic()

        job = self._in_transaction(lambda db: _delete_expired(db, now))
        return await self._write("delete expired streams", job)


def _delete_expired(db: sqlite3.Connection, now: str) -> int:
    gone = [row[0] for row in db.execute(_EXPIRED, (now,)).fetchall()]
    if gone:
        db.executemany("DELETE FROM stream_events WHERE turn_id = ?", [(t,) for t in gone])
        db.executemany("DELETE FROM stream_turns WHERE turn_id = ?", [(t,) for t in gone])
    return len(gone)
