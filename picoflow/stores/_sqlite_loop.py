"""SQLiteStore's connection on the event loop: the reads and writes that never wait.

A trip to a thread costs a context switch, and on a busy machine a scheduler time slice
(milliseconds), while SQLite's fast operations cost microseconds: reading a revision is one
lookup on a cached page, and a commit in WAL mode with `synchronous=NORMAL` appends a few pages
to the WAL without syncing the disk. So those run right on the event loop, on a connection that
never waits: it has no busy timeout (a write that finds the write lock taken raises `WouldWait`
and goes to the writer thread, which waits for it) and never checkpoints (a checkpoint copies
the WAL into the file and syncs the disk). Checkpoints run on the writer thread instead, in
the background, once the WAL has grown past 4 MB.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3

from picoflow.stores._sqlite_worker import Worker

__all__ = ["LoopConnection"]

logger = logging.getLogger(__name__)

# SQLite's own automatic checkpoint runs at 1000 pages of WAL, about 4 MB.
_CHECKPOINT_BYTES = 4 * 1024 * 1024


class LoopConnection:
    """The event loop's connection to one SQLite file, opened on first use.

    Args:
        path: The database file (which exists: the store prepared it).
    """

    def __init__(self, path: str) -> None:
        """Open nothing yet."""
        self._path = path
        self._db: sqlite3.Connection | None = None
        self._checkpoint: asyncio.Future[object] | None = None

    def get(self) -> sqlite3.Connection:
        """The connection; sqlite3 errors of opening it are the caller's to report."""
        if self._db is None:
            db = sqlite3.connect(
                self._path, isolation_level=None, timeout=0, check_same_thread=False
            )
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA wal_autocheckpoint=0")
            self._db = db
        return self._db

    def checkpoint_when_due(self, writer: Worker) -> None:
        """After a commit here: if the WAL passed 4 MB, checkpoint it on the writer thread."""
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        try:
            size = os.stat(self._path + "-wal").st_size
        except OSError:
            return
        if size >= _CHECKPOINT_BYTES:
            self._checkpoint = asyncio.ensure_future(writer.run(_checkpoint))
            self._checkpoint.add_done_callback(_report)

    async def close(self) -> None:
        """Wait for a checkpoint under way, then close the connection."""
        if self._checkpoint is not None:
            await asyncio.gather(self._checkpoint, return_exceptions=True)
        db, self._db = self._db, None
        if db is not None:
            db.close()


def _checkpoint(db: sqlite3.Connection) -> object:
    # PASSIVE: copies what no reader still needs, and never waits for readers or writers.
    return db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def _report(done: asyncio.Future[object]) -> None:
    if not done.cancelled() and done.exception() is not None:
        # The next checkpoint tries again; the WAL keeps every commit meanwhile.
        logger.warning("SQLite checkpoint failed: %s", done.exception())
