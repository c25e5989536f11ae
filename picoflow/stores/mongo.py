"""MongoStore: sessions in MongoDB, the production store for several app processes (P6).

Sessions live in one collection (one document per session, `_id` = session id), evicted
messages in another. `save` is one `replace_one` filtered on `_id` *and* `revision`: MongoDB
applies it atomically to one document, so of two processes holding the same revision exactly one
wins and the other gets `SessionConflictError` (P4); no write is ever an upsert, so a stale or
mistyped id can never invent a second document. How documents map to BSON (internal fields, key
escaping, the 15 MB guard) is described in `picoflow.stores._mongo_docs`, how the store connects
in `_mongo_connect`, and the rows and compare-and-set of a save in `_mongo_save`.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError, DuplicateKeyError

from picoflow.errors import SessionConflictError
from picoflow.stores import _checks, _history
from picoflow.stores import _mongo_rows as rows
from picoflow.stores._mongo_connect import (
    DEFAULT_DATABASE as DEFAULT_DATABASE,  # importable from here, as before
)
from picoflow.stores._mongo_connect import (
    Collection,
    MongoConnection,
    accept,
    client_options,
    masked,
)
from picoflow.stores._mongo_docs import (
    SessionEncoder,
    archive_record,
    entry_from_stored,
    session_from_stored,
)
from picoflow.stores._mongo_extras import MongoExtras
from picoflow.stores._mongo_leases import MongoLeases
from picoflow.stores._mongo_save import (
    nothing_before,
    replace_session,
    revision_in,
    stored_before,
    write_rows,
)
from picoflow.stores._mongo_streams import MongoStreams
from picoflow.stores.base import ArchiveEntry, JSONDict

__all__ = ["MongoStore"]

_DUPLICATE_KEY = 11000


class MongoStore(MongoConnection, MongoExtras, MongoLeases, MongoStreams):
    """Keeps sessions in MongoDB through PyMongo's async API (or a Motor handle).

    Give it a URI, a `pymongo.AsyncMongoClient`, a pymongo `AsyncDatabase`, or a Motor
    `AsyncIOMotorDatabase`/`AsyncIOMotorClient`. From a URI the store creates its own client on
    first use, inside the running event loop (so the store and the engine can be built outside
    one), and `aclose()` closes it. A client or database you pass in stays yours: the store
    never closes it. The two indexes (TTL on `_expires_at`, unique `(session_id, namespace,
    position)` on the archive) are created once per store, before its first operation.

    Args:
        uri_or_client: `mongodb://...`/`mongodb+srv://...`, or a client or database handle.
        database: The database name; default the one the URI or client names, else
            "picoflow". Not accepted together with a database handle.
        sessions: The collection of session documents.
        archive: The collection of archived (compacted-away) messages.
        history: The collection of message rows and revisions (`_mongo_rows`).
        server_selection_timeout: Seconds to wait for a reachable server before a call fails
            with StoreError (URI only; an explicit `serverSelectionTimeoutMS` in it wins).
        timeout: Seconds to wait for the server's reply to one request before the call fails
            with StoreError, PyMongo's `socketTimeoutMS` (URI only; an explicit
            `socketTimeoutMS` in it wins); None waits forever.

    Raises:
        ValueError: a string that is not a MongoDB URI, or `database` with a database handle.
        TypeError: a handle of another kind, e.g. a synchronous `pymongo.MongoClient`.
    """

    def __init__(
        self,
        uri_or_client: str | AsyncMongoClient[Any] | AsyncDatabase[Any] | Any,
        database: str | None = None,
        sessions: str = "sessions",
        archive: str = "session_archive",
        *,
        history: str = "session_history",
        server_selection_timeout: float = 2.0,
        timeout: float | None = 10.0,
    ) -> None:
        """Record where sessions go; nothing connects until the first call."""
        self._uri, self._client, self._database, self._database_name = accept(
            uri_or_client, database
        )
        self._names = (sessions, archive, history)
        self._usage_ready = False  # the owner ledger's TTL index is made on first use (O3)
        # L4: whether the server has text indexes (SecantusDB has none): None until tried.
        self._bank_text: bool | None = None
        self._client_options = client_options(self._uri, server_selection_timeout, timeout)
        self._encoder = SessionEncoder()
        self._written = rows.WrittenMemory()
        self.archive_limit: int | None = None  # W5: entries kept per namespace, newest
        self._ready: tuple[Collection, Collection, Collection] | None = None
        self._init_lock = asyncio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        """Show the URI (password masked) or the handle, and the database."""
        target = masked(self._uri) if self._uri else None
        handle = self._client if self._database is None else self._database
        shown = repr(target) if target else type(handle).__name__
        return f"MongoStore({shown}, database={self._database_name!r})"

    async def create(self, doc: JSONDict, *, note: JSONDict | None = None) -> None:
        """Store a new session at revision 0; an existing id is a conflict and changes nothing.

        Raises:
            ValueError: `doc["id"]` is not a non-empty string or `doc["revision"]` is not 0.
            TypeError: the document is not plain JSON.
            SessionConflictError: a session with this id already exists.
            StoreError: MongoDB failed or the document is over 15 MB; nothing was written.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_new_doc(doc)
        full_note = _history.check_note(note, session_id)
        record, lists = self._encoder.split(doc, session_id, 0)
        async with self._collections(f"create session '{session_id}'") as collections:
            sessions, archive, history = collections
            written, token, _ = await write_rows(
                collections, doc, record, lists, None, full_note, nothing_before()
            )
            try:
                await sessions.insert_one(record)
            except DuplicateKeyError as exc:
                await history.delete_many({"s": session_id, "t": token})
                actual = await revision_in(sessions, session_id) or 0
                message = _checks.conflict_on_create_message(session_id, actual)
                raise SessionConflictError(session_id, 0, actual, message) from exc
        self._written.keep(session_id, written)

    async def load(self, session_id: str) -> JSONDict | None:
        """Return a fresh copy of the stored document, or None if there is none."""
        _checks.check_open(self, self._closed)
        async with self._collections(f"load session '{session_id}'") as (sessions, _, history):
            stored = await sessions.find_one({"_id": session_id})
            if stored is not None:
                await rows.fill(history, session_id, stored)
        return None if stored is None else session_from_stored(stored)

    async def revision(self, session_id: str) -> int | None:
        """The stored revision, or None: the server sends back one small field."""
        _checks.check_open(self, self._closed)
        action = f"read the revision of session '{session_id}'"
        async with self._collections(action) as (sessions, _, _):
            return await revision_in(sessions, session_id)

    async def save(
        self, doc: JSONDict, expected_revision: int, *, note: JSONDict | None = None
    ) -> int:
        """Replace the session if its revision is still `expected_revision`; return the new one.

        Raises:
            ValueError: `doc["id"]` is not a string or `expected_revision` is not an int >= 0.
            TypeError: the document is not plain JSON.
            SessionNotFoundError: no session has this id.
            SessionConflictError: another writer saved first; nothing was written.
            StoreError: MongoDB failed or the document is over 15 MB; nothing was written.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_saved_doc(doc, expected_revision)
        full_note = _history.check_note(note, session_id)
        revision = expected_revision + 1
        record, lists = self._encoder.split(doc, session_id, revision)
        known = self._written.at(session_id, expected_revision)
        self._written.forget(session_id)  # known again only once this save succeeded
        async with self._collections(f"save session '{session_id}'") as collections:
            before = await stored_before(collections[0], session_id, expected_revision, known)
            written, token, gone = await write_rows(
                collections, doc, record, lists, known, full_note, before
            )
            await replace_session(collections, record, expected_revision, token, gone)
        self._written.keep(session_id, written)
        return revision

    async def history(self, session_id: str, *, limit: int | None = None) -> list[JSONDict]:
        """The session's kept revisions, newest first: what each turn was (W1)."""
        _checks.check_open(self, self._closed)
        action = f"read the history of session '{session_id}'"
        async with self._collections(action) as (sessions, _, history):
            found = await sessions.find_one({"_id": session_id}, {"_history": 1})
            kept = list(reversed(found.get("_history", []))) if found is not None else []
            kept = kept if limit is None else kept[:limit]
            tokens = [token for _, token, _ in kept]
            notes = {
                row["t"]: row["note"]
                async for row in rows.by_tokens(history, session_id, tokens, {"t": 1, "note": 1})
                if "note" in row
            }
        return [
            _history.entry(revision, saved_at, notes.get(token, {}))
            for revision, token, saved_at in kept
        ]

    async def load_revision(self, session_id: str, revision: int) -> JSONDict | None:
        """The document exactly as `revision` saved it, or None if it is not kept (W1)."""
        _checks.check_open(self, self._closed)
        _history.check_revision(revision)
        action = f"load revision {revision} of session '{session_id}'"
        async with self._collections(action) as (sessions, _, history):
            found = await sessions.find_one({"_id": session_id}, {"_history": 1})
            tokens = [t for r, t, _ in (found or {}).get("_history", []) if r == revision]
            if not tokens:
                return None
            row = None  # the batch's message rows come back empty and are skipped
            fields = {"r": 1, "doc": 1}
            async for candidate in rows.by_tokens(history, session_id, tokens[:1], fields):
                if candidate.get("r") == revision:
                    row = candidate
            if row is None:
                return None
            stored = dict(row["doc"])
            await rows.fill(history, session_id, stored)
        return session_from_stored(stored)

    async def purge(self, now: str) -> int:
        """Delete every session that expired before `now` (ISO), with all it left (W5).

        MongoDB's TTL monitor does the same within a minute or so (sessions on `_expires_at`,
        rows and archive on `x`); this does it now.
        """
        _checks.check_open(self, self._closed)
        moment = rows.date_of(now)
        async with self._collections("purge expired sessions") as (sessions, archive, history):
            ids = [
                found["_id"]
                async for found in sessions.find({"_expires_at": {"$lt": moment}}, {"_id": 1})
            ]
            await history.delete_many({"x": {"$lt": moment}})
            await archive.delete_many({"x": {"$lt": moment}})
        for session_id in ids:
            await self.delete(session_id)
        await self.stream_purge(now)  # O5: kept streams, before the TTL monitor comes by
        return len(ids)

    async def delete_owner(self, owner: str) -> int:
        """Delete every session `owner` owns, with its history and archive (W5)."""
        _checks.check_open(self, self._closed)
        async with self._collections("delete the sessions of an owner") as (sessions, _, _):
            ids = [found["_id"] async for found in sessions.find({"owner": owner}, {"_id": 1})]
        for session_id in ids:
            await self.delete(session_id)
        return len(ids)

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its whole archive; True if a session document existed.

        The document goes first: if the archive cleanup then fails, the session is already
        gone and a repeated `delete` finishes the cleanup.
        """
        _checks.check_open(self, self._closed)
        self._encoder.forget(session_id)
        self._written.forget(session_id)
        action = f"delete session '{session_id}'"
        async with self._collections(action) as (sessions, archive, history):
            deleted = await sessions.delete_one({"_id": session_id})
            await archive.delete_many({"session_id": session_id})
            await history.delete_many({"s": session_id})
        return bool(deleted.deleted_count)

    async def archive(self, session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
        """Keep evicted messages by position; a position already archived keeps its first entry.

        The session document need not exist yet: compaction of a session's first turn archives
        before the engine creates the document.
        """
        _checks.check_open(self, self._closed)
        _checks.check_entries(session_id, namespace, entries)
        if not entries:
            return
        action = f"archive messages of session '{session_id}'"
        async with self._collections(action) as (sessions, archive, _):
            # W5: archived messages expire with the session's rows (its TTL field `x`).
            known = self._written.latest(session_id)
            if known is None:
                found = await sessions.find_one({"_id": session_id}, {"_rows_x": 1})
                expiry = None if found is None else found.get("_rows_x")
            else:
                expiry = known.rows_x
            extra = {} if expiry is None else {"x": expiry}
            records = [archive_record(session_id, namespace, entry, extra) for entry in entries]
            try:
                await archive.insert_many(records, ordered=False)
            except BulkWriteError as exc:
                # M9: a position archived before (a retried compaction) keeps its first entry.
                errors = exc.details.get("writeErrors", [])
                if exc.details.get("writeConcernErrors") or any(
                    error.get("code") != _DUPLICATE_KEY for error in errors
                ):
                    raise
            if self.archive_limit is not None:
                newest = max(entry["position"] for entry in entries)
                await archive.delete_many(
                    {
                        "session_id": session_id,
                        "namespace": namespace,
                        "position": {"$lte": newest - self.archive_limit},
                    }
                )

    async def oldest_archived(self, session_id: str, namespace: str) -> int | None:
        """The lowest archived position (above 1: older entries were trimmed, W5), or None."""
        _checks.check_open(self, self._closed)
        action = f"read the archive of session '{session_id}'"
        async with self._collections(action) as (_, archive, _):
            found = await archive.find_one(
                {"session_id": session_id, "namespace": namespace},
                {"position": 1},
                sort=[("position", 1)],
            )
        return None if found is None else int(found["position"])

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

        One `$regex` per word over the lowercased `text` field, each word taken literally;
        the unique archive index narrows the scan to this session's namespace.
        """
        _checks.check_open(self, self._closed)
        _checks.check_page(page, page_size)
        words = _checks.search_words(query)
        selector: JSONDict = {"session_id": session_id, "namespace": namespace}
        if words:
            selector["$and"] = [{"text": {"$regex": re.escape(word)}} for word in words]
        action = f"search the archive of session '{session_id}'"
        async with self._collections(action) as (_, archive, _):
            cursor = (
                archive.find(selector, {"_id": 0, "text": 0})
                .sort("position", -1)
                .skip((page - 1) * page_size)
                .limit(page_size)
            )
            return [entry_from_stored(stored) async for stored in cursor]

    async def aclose(self) -> None:
        """Close the client the store created; a client passed in is left open for its owner."""
        if self._closed:
            return
        self._closed = True
        self._ready = None
        self._encoder.clear()
        self._written.clear()
        if self._uri is not None and self._client is not None:
            await self._client.close()
