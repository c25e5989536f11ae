"""SQLiteStore's file: its tables, opening it and its connections, and watching that it stays.

The constructor only records the path; the first call creates the parent directory and the
tables and switches the file to WAL (`prepare_file`), and remembers the file's device and inode.
Before each call the store checks that its path still names that file: a connection opened on a
replacement would share the old file's WAL and corrupt both, and a deleted file would swallow
every later turn.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path

from picoflow.errors import StoreError
from picoflow.stores import _bank_vec
from picoflow.stores._archive_index import ARCHIVE_INDEX_SCHEMA, ensure_archive_index
from picoflow.stores._bank_sqlite import BANK_SCHEMA
from picoflow.stores._checks import check_open
from picoflow.stores._sqlite_driver import connect
from picoflow.stores._sqlite_extras import EXTRAS_SCHEMA
from picoflow.stores._sqlite_history import HISTORY_SCHEMA
from picoflow.stores._sqlite_loop import LoopConnection
from picoflow.stores._sqlite_rows import MESSAGES_SCHEMA
from picoflow.stores._sqlite_streams import STREAMS_SCHEMA

__all__ = ["BUSY_TIMEOUT_SECONDS", "SCHEMA", "SQLiteFile", "prepare_file"]

# How long a write waits for another connection's write lock before giving up. Writes hold the
# lock for milliseconds, so reaching this means something else holds the file.
BUSY_TIMEOUT_SECONDS = 10.0

SCHEMA = (
    """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    revision INTEGER NOT NULL,
    doc TEXT NOT NULL,
    expires_at TEXT
);
CREATE TABLE IF NOT EXISTS archive (
    session_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    position INTEGER NOT NULL,
    message TEXT NOT NULL,
    text TEXT NOT NULL,
    compacted_at TEXT,
    PRIMARY KEY (session_id, namespace, position)
);
"""
    + MESSAGES_SCHEMA
    + BANK_SCHEMA
    + EXTRAS_SCHEMA
    + ARCHIVE_INDEX_SCHEMA
    + HISTORY_SCHEMA
    + STREAMS_SCHEMA
)


def prepare_file(path: str) -> tuple[int, int]:
    """Create the file's directory and tables, switch it to WAL; return (device, inode).

    With `picoflow[vectors]` it also makes the bank's vector index for vectors kept without it
    (a file written before the extra was installed, `_bank_vec.prepare`).
    """
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = connect(path, timeout=BUSY_TIMEOUT_SECONDS)
    try:
        db.execute("PRAGMA journal_mode=WAL")  # persists in the file for every later connection
        db.executescript(SCHEMA)
        ensure_archive_index(db)
        _bank_vec.prepare(db)
    finally:
        db.close()
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def _no_check() -> None:
    pass


class SQLiteFile:
    """The opening and watching part of `SQLiteStore`, over the attributes its constructor sets."""

    _path: str
    _synchronous: str
    _identity: tuple[int, int] | None  # (device, inode) of the file opened
    _loop: LoopConnection | None
    _open_lock: asyncio.Lock
    _closed: bool

    async def _opened(self) -> None:
        """Create the parent directory and the tables, switch to WAL, once (first call)."""
        check_open(self, self._closed)
        if self._identity is not None or self._path == ":memory:":
            return
        async with self._open_lock:
            if self._identity is None:
                try:
                    self._identity = await asyncio.to_thread(prepare_file, self._path)
                except (OSError, sqlite3.Error) as exc:
                    raise StoreError(self._open_failure(exc)) from exc

    def _connect(self) -> sqlite3.Connection:
        """Open one connection (on its worker's thread); ":memory:" gets its tables here."""
        try:
            # isolation_level=None: no implicit transactions; writes open theirs explicitly.
            # check_same_thread=False: `interrupt()` comes from the event loop's thread.
            # `_sqlite_driver`: with vec0 loaded where picoflow[vectors] is installed.
            db = connect(
                self._path,
                isolation_level=None,
                timeout=BUSY_TIMEOUT_SECONDS,
                check_same_thread=False,
            )
            db.execute(f"PRAGMA synchronous={self._synchronous}")
            if self._path == ":memory:":
                db.executescript(SCHEMA)
                ensure_archive_index(db)
        except sqlite3.Error as exc:
            raise StoreError(self._open_failure(exc)) from exc
        return db

    def _open_failure(self, exc: Exception) -> str:
        return (
            f"SQLiteStore could not open SQLite file '{self._path}': {exc}. "
            "Check the path is writable and is an SQLite database or does not exist yet."
        )

    def _loop_connection(self, action: str) -> sqlite3.Connection | None:
        """The event loop's connection (`_sqlite_loop`), after the file check.

        None for ":memory:", whose one database lives in the writer's connection.
        """
        return None if self._loop is None else self._loop_db(self._loop, action)

    def _loop_db(self, loop: LoopConnection, action: str) -> sqlite3.Connection:
        self._check_file(action)
        try:
            return loop.get()
        except sqlite3.Error as exc:
            raise StoreError(self._open_failure(exc)) from exc

    def _file_check(self, action: str) -> Callable[[], None]:
        """What a job runs first, before even a connection is opened (on its thread).

        It refuses to go on if the file was deleted or replaced since the store opened it: a
        connection opened on a replacement would share the old file's WAL and corrupt both.
        """
        if self._identity is None:
            return _no_check  # ":memory:"
        return lambda: self._check_file(action)

    def _check_file(self, action: str) -> None:
        try:
            stat = os.stat(self._path)
            found: tuple[int, int] | None = (stat.st_dev, stat.st_ino)
        except FileNotFoundError:
            found = None
        if found != self._identity:
            what = "deleted" if found is None else "replaced by another file"
            raise StoreError(
                f"SQLiteStore could not {action}: its SQLite file '{self._path}' was {what} "
                "while the store had it open, so nothing was read or written. Restore the "
                "file, or restart the application so that it opens the file now at that path."
            )
