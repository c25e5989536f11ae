"""SQLiteStore's connection on the event loop: the reads and writes that never wait.

A trip to a thread costs a context switch, and on a busy machine a scheduler time slice
(milliseconds), while SQLite's fast operations cost microseconds: reading a revision is one
lookup on a cached page, and a commit in WAL mode with `synchronous=NORMAL` appends a few pages
to the WAL without syncing the disk. So those run right on the event loop, on a connection that
never waits: it has no busy timeout (a write that finds the write lock taken raises `WouldWait`
and goes to the writer thread, which waits for it) and never checkpoints (a checkpoint copies
the WAL into the file and syncs the disk). Checkpoints run on the writer thread instead, in
the background, about every 1000 pages (4 MB) of WAL, SQLite's own default. Two signs tell: the
WAL file growing 4 MB since the last checkpoint began, and, because the file keeps its size
once written (SQLite writes it again from the start), a count of commits, learned from each
checkpoint's report of the pages it found.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
from typing import Any

from picoflow.stores._sqlite_driver import connect
from picoflow.stores._sqlite_worker import Worker

__all__ = ["LoopConnection"]

logger = logging.getLogger(__name__)

# SQLite's own automatic checkpoint runs at 1000 pages of WAL, about 4 MB.
_CHECKPOINT_PAGES = 1000
_CHECKPOINT_BYTES = 4 * 1024 * 1024
_FIRST_GUESS = 100  # commits between checkpoints until a checkpoint has counted pages


class LoopConnection:
    """The event loop's connection to one SQLite file, opened on first use.

    Args:
        path: The database file (which exists: the store prepared it).
    """

    def __init__(self, path: str) -> None:
        """Open nothing yet."""
        self._path = path
        self._db: sqlite3.Connection | None = None
        self._checkpoint: asyncio.Future[Any] | None = None
        self._commits = 0  # since the last checkpoint was started
        self._wal_size = 0  # the WAL file's size when the last checkpoint was started
        self._every = _FIRST_GUESS

    def get(self) -> sqlite3.Connection:
        """The connection; sqlite3 errors of opening it are the caller's to report."""
        if self._db is None:
            db = connect(self._path, isolation_level=None, timeout=0, check_same_thread=False)
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA wal_autocheckpoint=0")
            self._db = db
        return self._db

    def checkpoint_when_due(self, writer: Worker) -> None:
        """After a commit here: about every 1000 pages, checkpoint on the writer thread."""
        self._commits += 1
        if self._checkpoint is not None and not self._checkpoint.done():
            return
        try:
            size = os.stat(self._path + "-wal").st_size
        except OSError:
            size = self._wal_size
        if self._commits < self._every and size < self._wal_size + _CHECKPOINT_BYTES:
            return
        commits, self._commits, self._wal_size = self._commits, 0, size
        self._checkpoint = asyncio.ensure_future(writer.run(_checkpoint))
        self._checkpoint.add_done_callback(lambda done: self._learn(done, commits))

    def _learn(self, done: asyncio.Future[Any], commits: int) -> None:
        """Set how many commits make 1000 pages, from the pages this checkpoint found."""
        if done.cancelled():
            return
        if done.exception() is not None:
            # The next checkpoint tries again; the WAL keeps every commit meanwhile.
            logger.warning("SQLite checkpoint failed: %s", done.exception())
            return
        pages = done.result()[1]  # (busy, pages in the WAL, pages checkpointed)
        if pages > 0:
            self._every = max(1, min(10 * _FIRST_GUESS, commits * _CHECKPOINT_PAGES // pages))

    async def close(self) -> None:
        """Wait for a checkpoint under way, then close the connection."""
        if self._checkpoint is not None:
            await asyncio.gather(self._checkpoint, return_exceptions=True)
        db, self._db = self._db, None
        if db is not None:
            db.close()


def _checkpoint(db: sqlite3.Connection) -> tuple[int, int, int]:
    # PASSIVE: copies what no reader still needs, and never waits for readers or writers.
    busy, pages, done = db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(busy), int(pages), int(done)
