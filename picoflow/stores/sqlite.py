"""SQLiteStore: the embedded default store, one file, no server (P6).

Each session is one row of the `sessions` table, its document kept as JSON text (readable with
SQLite's `json_extract`); evicted messages live in the `archive` table. The file uses WAL mode,
so readers never block the writer, and several processes (or several stores) may share it: every
write is one transaction (a save or a create is a single statement; deletes and archive
writes are `BEGIN IMMEDIATE` blocks) and `save` is a compare-and-set on the revision, so of
two writers holding the same revision exactly one wins (P4). Saves reuse the JSON text of
messages saved before (`_codec`), so encoding costs what a turn added.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import aiosqlite

from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.stores import _checks
from picoflow.stores._codec import JSONCodec
from picoflow.stores.base import ArchiveEntry, JSONDict

__all__ = ["SQLiteStore"]

# How long a write waits for another connection's write lock before giving up. Writes hold the
# lock for milliseconds, so reaching this means something else holds the file.
_BUSY_TIMEOUT_SECONDS = 10.0

_SCHEMA = """
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
    PRIMARY KEY (session_id, namespace, position)
);
"""

# `\` escapes `%` and `_` in the LIKE patterns built by _like_pattern.
_LIKE_CLAUSE = " AND text LIKE ? ESCAPE '\\'"


class SQLiteStore:
    """Keeps sessions in one SQLite file through aiosqlite; `":memory:"` keeps them in RAM.

    The constructor only records the path: the engine may be built outside an event loop, so
    the parent directory and the connection are created on first use. Calls on one store share
    one connection and run one at a time, which keeps each call's transaction its own.

    Args:
        path: The database file. A missing parent directory is created.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Record the path; nothing touches the file system until the first call."""
        self._path = os.fspath(path)
        self._connection: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()
        self._closed = False
        self._codec = JSONCodec()

    def __repr__(self) -> str:
        """Show the file path, the first thing to check when a store fails."""
        return f"SQLiteStore({self._path!r})"

    async def create(self, doc: JSONDict) -> None:
        """Store a new session at revision 0; an existing id is a conflict and changes nothing.

        Raises:
            ValueError: `doc["id"]` is not a non-empty string or `doc["revision"]` is not 0.
            SessionConflictError: a session with this id already exists.
            StoreError: the database could not be opened or written.
        """
        session_id = _checks.check_new_doc(doc)
        text = self._codec.text(doc, session_id)
        insert = (
            "INSERT OR IGNORE INTO sessions (id, revision, doc, expires_at) VALUES (?, 0, ?, ?)"
        )
        params = (session_id, text, _expires_at(doc))
        async with self._connected(f"create session '{session_id}'") as connection:
            actual = await _write(connection, insert, params, session_id)
        if actual is not None:  # the id is taken
            message = _checks.conflict_on_create_message(session_id, actual)
            raise SessionConflictError(session_id, 0, actual, message)

    async def load(self, session_id: str) -> JSONDict | None:
        """Return a fresh copy of the stored document, or None if there is none."""
        async with self._connected(f"load session '{session_id}'") as connection:
            async with connection.execute(
                "SELECT doc FROM sessions WHERE id = ?", (session_id,)
            ) as cursor:
                row = await cursor.fetchone()
        return None if row is None else _checks.decode(row[0], session_id)

    async def revision(self, session_id: str) -> int | None:
        """The stored revision, or None, without reading the document."""
        async with self._connected(f"read the revision of session '{session_id}'") as connection:
            return await _revision_of(connection, session_id)

    async def save(self, doc: JSONDict, expected_revision: int) -> int:
        """Replace the session if its revision is still `expected_revision`; return the new one.

        Raises:
            ValueError: `doc["id"]` is not a string or `expected_revision` is not an int >= 0.
            SessionNotFoundError: no session has this id.
            SessionConflictError: another writer saved first; nothing was written.
            StoreError: the database could not be opened or written.
        """
        session_id = _checks.check_saved_doc(doc, expected_revision)
        revision = expected_revision + 1
        text = self._codec.text({**doc, "revision": revision}, session_id)
        update = (
            "UPDATE sessions SET revision = ?, doc = ?, expires_at = ? "
            "WHERE id = ? AND revision = ?"
        )
        params = (revision, text, _expires_at(doc), session_id, expected_revision)
        async with self._connected(f"save session '{session_id}'") as connection:
            # P2/P4: the WHERE clause is the compare-and-set (see `_write`).
            actual = await _write(connection, update, params, session_id)
        if actual is None:
            return revision
        if actual == _MISSING:
            raise SessionNotFoundError(session_id)
        raise SessionConflictError(session_id, expected_revision, actual)

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its whole archive; True if a session document existed."""
        self._codec.forget(session_id)
        async with self._transaction(f"delete session '{session_id}'") as connection:
            deleted = await _rowcount(
                connection, "DELETE FROM sessions WHERE id = ?", (session_id,)
            )
            await _rowcount(connection, "DELETE FROM archive WHERE session_id = ?", (session_id,))
        return deleted > 0

    async def archive(self, session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
        """Keep evicted messages by position; a position already archived keeps its first entry.

        The session document need not exist yet: compaction of a session's first turn archives
        before the engine creates the document.
        """
        _checks.check_entries(session_id, namespace, entries)
        rows = [
            (
                session_id,
                namespace,
                entry["position"],
                _checks.encode(entry["message"], session_id),
                _checks.search_text(entry["message"]),
            )
            for entry in entries
        ]
        action = f"archive messages of session '{session_id}'"
        async with self._transaction(action) as connection:
            await connection.executemany(
                "INSERT OR IGNORE INTO archive (session_id, namespace, position, message, text) "
                "VALUES (?, ?, ?, ?, ?)",
                rows,
            )

    async def search_archive(
        self,
        session_id: str,
        namespace: str,
        query: str,
        *,
        page: int = 1,
        page_size: int = 10,
    ) -> list[ArchiveEntry]:
        """Entries containing every word of `query` (any case), newest first, one page.

        One `LIKE` per word over the lowercased `text` column; `%` and `_` in the query are
        taken literally.
        """
        _checks.check_page(page, page_size)
        words = _checks.search_words(query)
        sql = (
            "SELECT position, message FROM archive WHERE session_id = ? AND namespace = ?"
            + _LIKE_CLAUSE * len(words)
            + " ORDER BY position DESC LIMIT ? OFFSET ?"
        )
        params: list[Any] = [session_id, namespace, *map(_like_pattern, words)]
        params += [page_size, (page - 1) * page_size]
        action = f"search the archive of session '{session_id}'"
        async with self._connected(action) as connection:
            rows = await connection.execute_fetchall(sql, params)
        return [{"position": row[0], "message": _checks.decode(row[1])} for row in rows]

    async def aclose(self) -> None:
        """Close the connection; the store refuses further calls with StoreError."""
        async with self._lock:
            self._closed = True
            self._codec.clear()
            connection, self._connection = self._connection, None
            if connection is not None:
                await connection.close()

    @asynccontextmanager
    async def _connected(self, action: str) -> AsyncIterator[aiosqlite.Connection]:
        """Hold the store's connection for one call, opening it on first use.

        The lock keeps calls from interleaving statements on the shared connection (one call's
        transaction must not swallow another's). sqlite3 errors become StoreError here, at the
        store boundary, and nowhere else.
        """
        async with self._lock:
            _checks.check_open(self, self._closed)
            if self._connection is None:
                self._connection = await self._open()
            try:
                yield self._connection
            except sqlite3.Error as exc:
                raise StoreError(
                    f"SQLiteStore could not {action} in SQLite file '{self._path}': {exc}. "
                    "Check that the disk is not full, that no other program keeps the file "
                    "locked, and that its tables were not changed by hand."
                ) from exc

    @asynccontextmanager
    async def _transaction(self, action: str) -> AsyncIterator[aiosqlite.Connection]:
        """Run a write of several statements as one transaction (see `_immediate`)."""
        async with self._connected(action) as connection, _immediate(connection):
            yield connection

    async def _open(self) -> aiosqlite.Connection:
        """Create the parent directory and the tables, switch to WAL, then connect."""
        try:
            if self._path != ":memory:":
                # With plain sqlite3 first: a failed aiosqlite.connect leaves its worker thread
                # to report to an event loop that may be gone, so only a file that is known to
                # open is handed to aiosqlite.
                await asyncio.to_thread(_prepare_file, self._path)
            # isolation_level=None: no implicit transactions; writes open theirs explicitly.
            connection = await aiosqlite.connect(
                self._path, isolation_level=None, timeout=_BUSY_TIMEOUT_SECONDS
            )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(self._open_failure(exc)) from exc
        try:
            await connection.executescript(_SCHEMA)  # again, for ":memory:"
        except sqlite3.Error as exc:
            await connection.close()
            raise StoreError(self._open_failure(exc)) from exc
        return connection

    def _open_failure(self, exc: Exception) -> str:
        return (
            f"SQLiteStore could not open SQLite file '{self._path}': {exc}. "
            "Check the path is writable and is an SQLite database or does not exist yet."
        )


def _prepare_file(path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(path, timeout=_BUSY_TIMEOUT_SECONDS)) as db:
        db.execute("PRAGMA journal_mode=WAL")  # persists in the file for every later connection
        db.executescript(_SCHEMA)


@asynccontextmanager
async def _immediate(connection: aiosqlite.Connection) -> AsyncIterator[None]:
    """One transaction that takes the file's write lock up front.

    IMMEDIATE (not the default DEFERRED) so two connections never both read, then both try to
    upgrade to a write: the second waits for the lock and then sees the first's commit.
    """
    try:
        await connection.execute("BEGIN IMMEDIATE")
        yield
    except BaseException:
        # Also when the caller was cancelled while BEGIN waited for the lock: aiosqlite's thread
        # still runs a queued BEGIN, so the ROLLBACK is queued behind it unconditionally (and
        # shielded from a second cancellation) instead of trusting `in_transaction` now.
        await asyncio.shield(_rollback(connection))
        raise
    await connection.execute("COMMIT")


async def _rollback(connection: aiosqlite.Connection) -> None:
    try:
        await connection.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        if "no transaction is active" not in str(exc):  # BEGIN itself failed: nothing to undo
            raise


_MISSING = -1  # what `_write` reports for a session that is not stored


async def _write(
    connection: aiosqlite.Connection, sql: str, params: Iterable[Any], session_id: str
) -> int | None:
    """Run a one-row write; None if it matched, else the stored revision (`_MISSING`: none).

    One statement is one implicit transaction, which takes the write lock before it reads the
    row: the fast path, a single trip to aiosqlite's thread. A write that matches nothing is
    tried once more holding the lock, so that what is reported is what is stored then, even if
    another process created or deleted the session in between.
    """
    if await _rowcount(connection, sql, params):
        return None
    async with _immediate(connection):
        if await _rowcount(connection, sql, params):
            return None
        actual = await _revision_of(connection, session_id)
        return _MISSING if actual is None else actual


async def _rowcount(connection: aiosqlite.Connection, sql: str, params: Iterable[Any]) -> int:
    # The cursor is not closed: closing is one more trip to aiosqlite's thread, and a cursor of
    # a write holds no rows; sqlite3 closes it when it is collected.
    cursor = await connection.execute(sql, params)
    return cursor.rowcount


async def _revision_of(connection: aiosqlite.Connection, session_id: str) -> int | None:
    # execute_fetchall is one trip to aiosqlite's thread; execute, fetchone, close are three.
    rows = list(
        await connection.execute_fetchall(
            "SELECT revision FROM sessions WHERE id = ?", (session_id,)
        )
    )
    return int(rows[0][0]) if rows else None


def _expires_at(doc: JSONDict) -> str | None:
    # A column of its own so expired sessions can be found without parsing every document.
    value = doc.get("expires_at")
    return value if isinstance(value, str) else None


def _like_pattern(word: str) -> str:
    r"""A `LIKE ... ESCAPE '\'` pattern matching `word` anywhere, taken literally.

    Example: `_like_pattern("50%_off")` is `%50\%\_off%`, so a `%` or `_` the user typed
    matches itself instead of acting as a wildcard.
    """
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
