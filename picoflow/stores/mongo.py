"""MongoStore: sessions in MongoDB, the production store for several app processes (P6).

Sessions live in one collection (one document per session, `_id` = session id), evicted
messages in another. `save` is one `replace_one` filtered on `_id` *and* `revision`: MongoDB
applies it atomically to one document, so of two processes holding the same revision exactly one
wins and the other gets `SessionConflictError` (P4); no write is ever an upsert, so a stale or
mistyped id can never invent a second document. How documents map to BSON (internal fields, key
escaping, the 15 MB guard) is described in `picoflow.stores._mongo_docs`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from bson.codec_options import CodecOptions
from bson.errors import InvalidDocument
from pymongo import AsyncMongoClient, MongoClient
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.database import Database
from pymongo.errors import (
    BulkWriteError,
    ConfigurationError,
    DuplicateKeyError,
    PyMongoError,
)

from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.stores import _checks, _history
from picoflow.stores import _mongo_rows as rows
from picoflow.stores._mongo_docs import (
    SessionEncoder,
    archive_record,
    entry_from_stored,
    session_from_stored,
)
from picoflow.stores._mongo_errors import describe_failure
from picoflow.stores._mongo_extras import MongoExtras
from picoflow.stores._mongo_leases import MongoLeases
from picoflow.stores._mongo_streams import MongoStreams
from picoflow.stores.base import ArchiveEntry, JSONDict

__all__ = ["MongoStore"]

DEFAULT_DATABASE = "picoflow"
_ARCHIVE_KEY = [("session_id", 1), ("namespace", 1), ("position", 1)]
_ROWS_KEY = [("s", 1), ("t", 1)]
_DUPLICATE_KEY = 11000
# Plain dicts whatever the caller's handle was configured with; dates come back aware (UTC).
_CODEC: CodecOptions[dict[str, Any]] = CodecOptions(document_class=dict, tz_aware=True)
_URI_HOSTS = re.compile(r"^mongodb(?:\+srv)?://(?:[^@/]*@)?([^/?]*)/?([^?]*)")
_CREDENTIALS = re.compile(r"(://[^/@:]*):[^/@]*@")
_MOTOR_CLIENT, _MOTOR_DATABASE = "AsyncIOMotorClient", "AsyncIOMotorDatabase"

# A pymongo AsyncCollection or a Motor collection; both offer the calls this store makes.
_Collection = Any


class MongoStore(MongoExtras, MongoLeases, MongoStreams):
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
        self._uri, self._client, self._database, self._database_name = _accept(
            uri_or_client, database
        )
        self._names = (sessions, archive, history)
        self._usage_ready = False  # the owner ledger's TTL index is made on first use (O3)
        # L4: whether the server has text indexes (SecantusDB has none): None until tried.
        self._bank_text: bool | None = None
        self._client_options = _client_options(self._uri, server_selection_timeout, timeout)
        self._encoder = SessionEncoder()
        self._written = rows.WrittenMemory()
        self.archive_limit: int | None = None  # W5: entries kept per namespace, newest
        self._ready: tuple[_Collection, _Collection, _Collection] | None = None
        self._init_lock = asyncio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        """Show the URI (password masked) or the handle, and the database."""
        target = _masked(self._uri) if self._uri else None
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
            before: JSONDict = {"history": [], "rows_x": None, "parts": {}, "retired": []}
            written, token, _ = await self._write_rows(
                collections, doc, record, lists, None, full_note, before
            )
            try:
                await sessions.insert_one(record)
            except DuplicateKeyError as exc:
                await history.delete_many({"s": session_id, "t": token})
                actual = await _revision_in(sessions, session_id) or 0
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
            return await _revision_in(sessions, session_id)

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
            sessions, _, history = collections
            if known is None:
                found = await sessions.find_one(
                    {"_id": session_id},
                    {"revision": 1, "_history": 1, "_rows_x": 1, "_parts": 1, "_retired": 1},
                )
                if found is None:
                    raise SessionNotFoundError(session_id)
                if found["revision"] != expected_revision:
                    raise SessionConflictError(session_id, expected_revision, found["revision"])
                before: JSONDict = {
                    "history": list(found.get("_history", [])),
                    "rows_x": found.get("_rows_x"),
                    "parts": found.get("_parts", {}),
                    "retired": found.get("_retired", []),
                }
            else:
                before = {
                    "history": known.history,
                    "rows_x": known.rows_x,
                    "parts": known.parts,
                    "retired": known.retired,
                }
            written, token, gone = await self._write_rows(
                collections, doc, record, lists, known, full_note, before
            )
            # P2/P4: the filter is the compare-and-set; without upsert, no match writes nothing.
            result = await sessions.replace_one(
                {"_id": session_id, "revision": expected_revision}, record
            )
            if result.matched_count == 0:
                await history.delete_many({"s": session_id, "t": token})
                actual = await _revision_in(sessions, session_id)
                if actual is None:
                    raise SessionNotFoundError(session_id)
                raise SessionConflictError(session_id, expected_revision, actual)
            if gone:  # W5: rows no kept revision names any more (see `_mongo_rows`)
                await history.delete_many({"s": session_id, "t": {"$in": gone}})
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

    async def _write_rows(
        self,
        collections: tuple[_Collection, _Collection, _Collection],
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
        past, rows_x = before["history"], before["rows_x"]
        _, archive, history = collections
        session_id, revision = record["_id"], record["revision"]
        token = rows.new_token(revision)
        parts, new_rows = rows.plan_rows(session_id, revision, token, lists, known)
        saved_at = _history.now_stamp()
        listed = [*past, [revision, token, saved_at]]
        oldest = _history.kept([(r, at) for r, _, at in listed], note)
        dropped = [item[1] for item in listed if item[0] < oldest]
        listed = [item for item in listed if item[0] >= oldest]
        retired, gone = rows.retire(
            before["parts"], parts, before["retired"], revision, dropped, listed[0][0]
        )
        expires = record.get("_expires_at")
        if expires is not None and (rows_x is None or rows.aware(expires) > rows.aware(rows_x)):
            rows_x = rows.rows_expiry(doc, expires)
            await history.update_many({"s": session_id}, {"$set": {"x": rows_x}})
            await archive.update_many({"session_id": session_id}, {"$set": {"x": rows_x}})
        if parts:
            record["_parts"] = parts
        if retired:
            record["_retired"] = retired
        if rows_x is not None:
            record["_rows_x"] = rows_x
        revision_row: JSONDict = {
            "s": session_id,
            "t": token,
            "w": revision,
            "r": revision,
            "at": saved_at,
            "note": {name: note[name] for name in _history.NOTE_FIELDS},
            "doc": dict(record),
        }
        record["_history"] = listed
        inserted = [*new_rows, revision_row]
        if rows_x is not None:
            for row in inserted:
                row["x"] = rows_x
        await history.insert_many(inserted, ordered=False)
        lists_saved = {key: messages for key, (messages, _) in lists.items()}
        return rows.Written(revision, lists_saved, parts, listed, rows_x, retired), token, gone

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

    @asynccontextmanager
    async def _collections(
        self, action: str
    ) -> AsyncIterator[tuple[_Collection, _Collection, _Collection]]:
        """The sessions and archive collections for one call; driver errors become StoreError.

        PyMongo errors are translated here, at the store boundary, and nowhere else.
        """
        try:
            yield await self._prepared()
        except (PyMongoError, InvalidDocument) as exc:
            message = describe_failure(
                exc, action, self._hosts(), self._selection_timeout(), self._database_name
            )
            raise StoreError(message) from exc

    async def _prepared(self) -> tuple[_Collection, _Collection, _Collection]:
        """Connect and create the indexes once; a failed attempt is retried by the next call."""
        if self._ready is not None:
            return self._ready
        async with self._init_lock:
            if self._ready is None:
                _checks.check_open(self, self._closed)
                if self._uri is not None and self._client is None:
                    self._client = _new_client(self._uri, self._client_options)
                database = self._database
                if database is None:
                    database = self._client[self._database_name]
                sessions = database.get_collection(self._names[0], codec_options=_CODEC)
                archive = database.get_collection(self._names[1], codec_options=_CODEC)
                history = database.get_collection(self._names[2], codec_options=_CODEC)
                # P5/P6: MongoDB's TTL monitor removes expired sessions; the engine also
                # treats them as new on load, so the monitor's delay never matters.
                await sessions.create_index("_expires_at", expireAfterSeconds=0)
                await archive.create_index(_ARCHIVE_KEY, unique=True)
                await archive.create_index("x", expireAfterSeconds=0)
                await history.create_index(_ROWS_KEY)
                await history.create_index("x", expireAfterSeconds=0)
                self._ready = (sessions, archive, history)
            return self._ready

    def _hosts(self) -> str:
        """The servers as the driver knows them (an SRV name before it resolved has no port)."""
        addresses = self._client.topology_description.server_descriptions()
        return ",".join(sorted(f"{host}:{port}" if port else host for host, port in addresses))

    def _selection_timeout(self) -> float:
        return float(self._client.options.server_selection_timeout)


def _accept(target: Any, database: str | None) -> tuple[str | None, Any, Any, str]:
    """(URI, client, database handle, database name) for what the caller passed in."""
    if isinstance(target, str):
        if not target.startswith(("mongodb://", "mongodb+srv://")):
            raise ValueError(
                f"MongoStore needs a MongoDB URI such as 'mongodb://localhost:27017', got "
                f"{_masked(target)!r}."
            )
        match = _URI_HOSTS.match(target)
        named = unquote(match.group(2)) if match else ""
        return target, None, None, database or named or DEFAULT_DATABASE
    if isinstance(target, AsyncMongoClient) or _is_motor(target, _MOTOR_CLIENT):
        named = str(target.get_default_database(DEFAULT_DATABASE).name)
        return None, target, None, database or named
    if isinstance(target, AsyncDatabase) or _is_motor(target, _MOTOR_DATABASE):
        if database is not None:
            raise ValueError(
                f"MongoStore got a database handle for '{target.name}' and database="
                f"{database!r}; pass one or the other."
            )
        return None, target.client, target, str(target.name)
    if isinstance(target, (MongoClient, Database)):
        raise TypeError(
            f"MongoStore needs PyMongo's async API, got a synchronous {type(target).__name__}, "
            "which would block the event loop. Pass pymongo.AsyncMongoClient(...), one of its "
            "databases, or the URI itself."
        )
    raise TypeError(
        "MongoStore takes a MongoDB URI, a pymongo.AsyncMongoClient, an AsyncDatabase or a "
        f"Motor database, got {type(target).__name__}."
    )


def _new_client(uri: str, options: dict[str, Any]) -> AsyncMongoClient[Any]:
    """The store's own client; a URI PyMongo cannot parse fails here, before any I/O."""
    try:
        return AsyncMongoClient(uri, **options)
    except (ValueError, ConfigurationError) as exc:
        raise StoreError(
            f"MongoStore cannot use the URI {_masked(uri)!r}: {exc}. Fix the URI; its options "
            "are PyMongo's connection string options."
        ) from exc


def _masked(uri: str) -> str:
    """`uri` with its password replaced by `***`, fit for messages and logs."""
    return _CREDENTIALS.sub(r"\1:***@", uri)


def _is_motor(target: object, class_name: str) -> bool:
    # Motor is end-of-life and optional: recognise its handles without importing it.
    kind = type(target)
    return kind.__module__.startswith("motor.") and kind.__name__ == class_name


def _client_options(
    uri: str | None, server_selection_timeout: float, timeout: float | None
) -> dict[str, Any]:
    """Keyword options for a client built from `uri`; options the URI spells out win."""
    if uri is None:
        return {}
    named = {key.lower() for key in parse_qs(urlsplit(uri).query)}
    options: dict[str, Any] = {"appname": "picoflow"} if "appname" not in named else {}
    if "serverselectiontimeoutms" not in named:
        options["serverSelectionTimeoutMS"] = round(server_selection_timeout * 1000)
    if timeout is not None and "sockettimeoutms" not in named:
        options["socketTimeoutMS"] = round(timeout * 1000)
    return options


async def _revision_in(sessions: _Collection, session_id: str) -> int | None:
    found = await sessions.find_one({"_id": session_id}, {"revision": 1, "_id": 0})
    return None if found is None else int(found["revision"])
