"""SQLiteStore: the embedded default store, one file, no server (P6).

Each session is one row of the `sessions` table, its document kept as JSON text (readable with
SQLite's `json_extract`) with each namespace's messages as rows of the `messages` table
(`_sqlite_rows`), so a save writes what a turn added; evicted messages live in the `archive`
table. The file is in WAL mode. What never waits runs on the event loop (`_sqlite_loop`): the
revision check before a turn, and a write that finds the write lock free. A write that would
wait runs on a writer thread, loads and searches on reader threads (`_sqlite_worker`), each
with a connection of its own: a write waiting for the lock never holds up a read. Several
processes (or several stores) may share the file: every write is one `BEGIN IMMEDIATE`
transaction and `save` is a compare-and-set on the revision inside it, so of two writers
holding the same revision exactly one wins (P4).

Durability: `synchronous=NORMAL` by default. In WAL mode a commit then survives the process being
killed (`kill -9`) or crashing; a power cut or an operating-system crash may lose the last turns
(never half a turn, never the file). `synchronous="FULL"` syncs the disk on every save as well, at
about 2 ms a save on an ordinary SSD.

The file is watched: before each call the store checks that its path still names the file it
opened (device and inode). A file deleted or replaced under a running store raises StoreError
instead of writing turns into a file nobody will ever read again (`_sqlite_file`, which also
holds the tables). The transaction and the statements of a call are in `_sqlite_sql`.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.stores import _checks, _history, _sqlite_history
from picoflow.stores._archive_index import archive_entry, search_rows
from picoflow.stores._codec import JSONCodec
from picoflow.stores._limits import DocumentChecker
from picoflow.stores._sqlite_extras import SQLiteExtras
from picoflow.stores._sqlite_file import SQLiteFile
from picoflow.stores._sqlite_history import SQLiteHistory
from picoflow.stores._sqlite_leases import SQLiteLeases
from picoflow.stores._sqlite_loop import LoopConnection
from picoflow.stores._sqlite_rows import Plan, RowMemory, fill
from picoflow.stores._sqlite_sql import (
    MISSING,
    WOULD_WAIT,
    all_lists,
    error_code,
    expires_at,
    immediate,
    load_snapshot,
    revision_of,
    write_row,
)
from picoflow.stores._sqlite_streams import SQLiteStreams
from picoflow.stores._sqlite_worker import Gate, ReaderPool, Worker, WouldWait
from picoflow.stores.base import ArchiveEntry, JSONDict

__all__ = ["SQLiteStore"]

_READERS = 2
_SYNCHRONOUS = ("NORMAL", "FULL")
_T = TypeVar("_T")


class SQLiteStore(SQLiteFile, SQLiteExtras, SQLiteHistory, SQLiteLeases, SQLiteStreams):
    """Keeps sessions in one SQLite file; `":memory:"` keeps them in RAM.

    The constructor only records the path: the engine may be built outside an event loop, so
    the parent directory, the tables and the connections are created on first use.

    Args:
        path: The database file. A missing parent directory is created.
        synchronous: "NORMAL" (default: a commit survives the process dying, see the module
            docstring) or "FULL" (a commit also survives a power cut; each save syncs the disk).

    Raises:
        ValueError: `synchronous` is neither "NORMAL" nor "FULL".
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> None:
        """Record the path; nothing touches the file system until the first call."""
        if synchronous not in _SYNCHRONOUS:
            raise ValueError(
                f"SQLiteStore synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}."
            )
        self._path = os.fspath(path)
        self._synchronous = synchronous
        self._identity: tuple[int, int] | None = None  # (device, inode) of the file opened
        # The event loop's own connection (`_sqlite_loop`); none for ":memory:".
        self._loop = None if self._path == ":memory:" else LoopConnection(self._path)
        self._thread_writes = 0  # writes queued on the writer thread: later ones queue too
        self._open_lock = asyncio.Lock()
        self._closed = False
        self._codec = JSONCodec()
        self._limits = DocumentChecker()
        self._rows = RowMemory()
        self.archive_limit: int | None = None  # W5: entries kept per namespace, newest
        self._writer = Worker(self._connect, "picoflow-sqlite-writer")
        # ":memory:" is one database per connection: reads must use the writer's.
        self._readers: ReaderPool | Worker = (
            self._writer
            if self._path == ":memory:"
            else ReaderPool(self._connect, _READERS, "picoflow-sqlite")
        )

    def __repr__(self) -> str:
        """Show the file path, the first thing to check when a store fails."""
        return f"SQLiteStore({self._path!r})"

    async def create(self, doc: JSONDict, *, note: JSONDict | None = None) -> None:
        """Store a new session at revision 0; an existing id is a conflict and changes nothing.

        Raises:
            ValueError: `doc["id"]` is not a non-empty string or `doc["revision"]` is not 0.
            TypeError: the document is not plain JSON.
            DocumentLimitError: the document breaks a limit every store keeps (H7).
            SessionConflictError: a session with this id already exists.
            StoreError: the database could not be opened or written.
        """
        session_id = _checks.check_new_doc(doc)
        full_note = _history.check_note(note, session_id)
        self._limits.check(doc, session_id)
        text, texts = self._codec.parts(doc, session_id)
        plan = self._rows.plan(session_id, None, doc.get("memory"), texts)
        history = (text, texts, full_note)
        insert = (
            "INSERT OR IGNORE INTO sessions (id, revision, doc, expires_at) VALUES (?, 0, ?, ?)"
        )
        params = (session_id, text, expires_at(doc))
        actual = await self._write_session(
            f"create session '{session_id}'", (insert, params), plan, doc, 0, history
        )
        if actual is not None:  # the id is taken
            message = _checks.conflict_on_create_message(session_id, actual)
            raise SessionConflictError(session_id, 0, actual, message)

    async def load(self, session_id: str) -> JSONDict | None:
        """Return a fresh copy of the stored document, or None if there is none."""
        action = f"load session '{session_id}'"
        stored = await self._read(action, lambda db: load_snapshot(db, session_id))
        if stored is None:
            return None
        doc = fill(_checks.decode(stored[0], session_id), stored[1], session_id)
        # The row's revision is what `save` compares against; a document edited by hand to say
        # otherwise would make every later save a conflict that never clears.
        doc["revision"] = stored[2]
        return doc

    async def revision(self, session_id: str) -> int | None:
        """The stored revision, or None, without reading the document.

        The engine asks this before every turn of a session it holds in memory, so it is read
        right here, on the event loop, by a connection of its own that never waits: one lookup
        of a row on a cached page costs microseconds, while a trip to a thread costs a context
        switch, on a busy machine a scheduler time slice (milliseconds). That connection has
        no busy timeout; in the rare case where a read would have to wait (a crashed writer's
        WAL being recovered), the read goes to a reader thread instead.
        """
        action = f"read the revision of session '{session_id}'"
        await self._opened()
        db = self._loop_connection(action)
        if db is not None:
            try:
                return revision_of(db, session_id)
            except sqlite3.OperationalError as exc:
                if error_code(exc) not in WOULD_WAIT:
                    raise self._failure(action, exc) from exc
        return await self._read(action, lambda db: revision_of(db, session_id))

    async def save(
        self, doc: JSONDict, expected_revision: int, *, note: JSONDict | None = None
    ) -> int:
        """Replace the session if its revision is still `expected_revision`; return the new one.

        Raises:
            ValueError: `doc["id"]` is not a string or `expected_revision` is not an int >= 0.
            TypeError: the document is not plain JSON.
            DocumentLimitError: the document breaks a limit every store keeps (H7).
            SessionNotFoundError: no session has this id.
            SessionConflictError: another writer saved first; nothing was written.
            StoreError: the database could not be opened or written.
        """
        session_id = _checks.check_saved_doc(doc, expected_revision)
        full_note = _history.check_note(note, session_id)
        self._limits.check(doc, session_id)
        revision = expected_revision + 1
        text, texts = self._codec.parts({**doc, "revision": revision}, session_id)
        plan = self._rows.plan(session_id, expected_revision, doc.get("memory"), texts)
        history = (text, texts, full_note)
        update = (
            "UPDATE sessions SET revision = ?, doc = ?, expires_at = ? "
            "WHERE id = ? AND revision = ?"
        )
        params = (revision, text, expires_at(doc), session_id, expected_revision)
        # P2/P4: the WHERE clause is the compare-and-set, judged holding the write lock.
        actual = await self._write_session(
            f"save session '{session_id}'", (update, params), plan, doc, revision, history
        )
        if actual is None:
            return revision
        if actual == MISSING:
            raise SessionNotFoundError(session_id)
        raise SessionConflictError(session_id, expected_revision, actual)

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its whole archive; True if a session document existed."""
        self._codec.forget(session_id)
        self._limits.forget(session_id)
        self._rows.forget(session_id)

        def delete(db: sqlite3.Connection, gate: Gate) -> bool:
            with immediate(db, gate):
                found = revision_of(db, session_id) is not None
                _sqlite_history.delete_history(db, [session_id])
                return found

        return await self._write(f"delete session '{session_id}'", delete)

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
                entry.get("compacted_at"),  # M16
            )
            for entry in entries
        ]

        limit = self.archive_limit

        def archive(db: sqlite3.Connection, gate: Gate) -> None:
            with immediate(db, gate):
                db.executemany(
                    "INSERT OR IGNORE INTO archive (session_id, namespace, position, message, "
                    "text, compacted_at) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
                _sqlite_history.trim_archive(db, session_id, namespace, limit)

        await self._write(f"archive messages of session '{session_id}'", archive)

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
        taken literally. A trigram index finds the rows of rare words (`_archive_index`).
        """
        _checks.check_page(page, page_size)
        words = _checks.search_words(query)

        def search(db: sqlite3.Connection) -> list[Any]:
            return search_rows(db, session_id, namespace, words, page, page_size)

        rows = await self._read(f"search the archive of session '{session_id}'", search)
        return [archive_entry(*row) for row in rows]

    async def aclose(self) -> None:
        """Close the connections; the store refuses further calls with StoreError."""
        self._closed = True
        self._codec.clear()
        self._limits.clear()
        self._rows.clear()
        if self._loop is not None:
            await self._loop.close()  # first: it waits for a checkpoint on the writer
        await self._writer.stop()
        await self._readers.stop()

    def _transaction(self, db: sqlite3.Connection, gate: Gate) -> immediate:
        return immediate(db, gate)

    async def _write_session(
        self,
        action: str,
        statement: tuple[str, tuple[Any, ...]],
        plan: Plan,
        doc: JSONDict,
        revision: int,
        history: tuple[str, dict[str, list[str]], JSONDict],
    ) -> int | None:
        """Write a session row and, if it matched, its message rows; remember what was written.

        Returns None on success, else what `write_row` found stored.
        """
        session_id, (sql, params) = doc["id"], statement

        def revision_rows(db: sqlite3.Connection) -> None:
            text, texts, note = history
            _sqlite_history.record(db, session_id, revision, text, texts, plan, note)

        try:
            actual = await self._write(
                action,
                lambda db, gate: write_row(db, gate, sql, params, session_id, plan, revision_rows),
            )
        except BaseException:
            self._rows.forget(session_id)  # the outcome is not known: rewrite in full next time
            raise
        memory = doc.get("memory")
        if actual is None and type(memory) is dict and all_lists(memory):
            self._rows.written(session_id, revision, memory)
        return actual

    async def _read(self, action: str, job: Callable[[sqlite3.Connection], _T]) -> _T:
        """Run a read on a reader connection (one trip); sqlite3 errors become StoreError."""
        await self._opened()
        return await self._readers.run(self._guarded(action, job), self._file_check(action))

    async def _write(self, action: str, job: Callable[[sqlite3.Connection, Gate], _T]) -> _T:
        """Run a write transaction: on the event loop if it need not wait, else on the writer.

        On the loop (`_sqlite_loop`) only with `synchronous="NORMAL"` and while no write is
        queued on the writer thread, so writes keep their order. On the writer, in one trip:
        if the caller is cancelled meanwhile, the job is told (it rolls back instead of
        committing) and a wait for the write lock is cut short.
        """
        await self._opened()
        loop = self._loop
        if loop is not None and self._synchronous == "NORMAL" and not self._thread_writes:
            db = self._loop_db(loop, action)
            try:
                result = self._guarded(action, lambda db: job(db, Gate(may_wait=False)))(db)
            except WouldWait:
                pass  # another connection holds the write lock: wait for it on a thread
            else:
                loop.checkpoint_when_due(self._writer)
                return result
        gate = Gate()
        self._thread_writes += 1
        try:
            return await self._writer.run(
                self._guarded(action, lambda db: job(db, gate)), self._file_check(action)
            )
        except asyncio.CancelledError:
            gate.cancelled = True
            self._writer.interrupt()
            raise
        finally:
            self._thread_writes -= 1

    def _guarded(
        self, action: str, job: Callable[[sqlite3.Connection], _T]
    ) -> Callable[[sqlite3.Connection], _T]:
        """`job` with sqlite3 errors as StoreError: here, at the store boundary, only."""

        def guarded(db: sqlite3.Connection) -> _T:
            try:
                return job(db)
            except sqlite3.Error as exc:
                raise self._failure(action, exc) from exc

        return guarded

    def _failure(self, action: str, exc: sqlite3.Error) -> StoreError:
        return StoreError(
            f"SQLiteStore could not {action} in SQLite file '{self._path}': {exc}. "
            "Check that the disk is not full, that no other program keeps the file "
            "locked, and that its tables were not changed by hand."
        )
