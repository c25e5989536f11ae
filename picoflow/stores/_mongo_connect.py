"""How MongoStore reaches its database: what it accepts, its own client, its indexes.

The store takes a URI or a handle the caller owns (`accept`); from a URI it builds its own
client on first use, inside the running event loop, and creates its indexes once before its
first operation (`MongoConnection._prepared`). Every call goes through `_collections`, the one
place where driver errors become StoreError.
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
from pymongo.errors import ConfigurationError, PyMongoError

from picoflow.errors import StoreError
from picoflow.stores import _checks
from picoflow.stores._mongo_errors import describe_failure

__all__ = [
    "DEFAULT_DATABASE",
    "Collection",
    "MongoConnection",
    "accept",
    "client_options",
    "masked",
]

DEFAULT_DATABASE = "picoflow"
_ARCHIVE_KEY = [("session_id", 1), ("namespace", 1), ("position", 1)]
_ROWS_KEY = [("s", 1), ("t", 1)]
# Plain dicts whatever the caller's handle was configured with; dates come back aware (UTC).
_CODEC: CodecOptions[dict[str, Any]] = CodecOptions(document_class=dict, tz_aware=True)
_URI_HOSTS = re.compile(r"^mongodb(?:\+srv)?://(?:[^@/]*@)?([^/?]*)/?([^?]*)")
_CREDENTIALS = re.compile(r"(://[^/@:]*):[^/@]*@")
_MOTOR_CLIENT, _MOTOR_DATABASE = "AsyncIOMotorClient", "AsyncIOMotorDatabase"

# A pymongo AsyncCollection or a Motor collection; both offer the calls this store makes.
Collection = Any


class MongoConnection:
    """The connecting part of `MongoStore`, over the attributes its constructor sets."""

    _uri: str | None
    _client: Any
    _database: Any
    _database_name: str
    _names: tuple[str, ...]
    _client_options: dict[str, Any]
    _ready: tuple[Collection, Collection, Collection] | None
    _init_lock: asyncio.Lock
    _closed: bool

    @asynccontextmanager
    async def _collections(
        self, action: str
    ) -> AsyncIterator[tuple[Collection, Collection, Collection]]:
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

    async def _prepared(self) -> tuple[Collection, Collection, Collection]:
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
                self._ready = await _indexed(database, self._names)
            return self._ready

    def _hosts(self) -> str:
        """The servers as the driver knows them (an SRV name before it resolved has no port)."""
        addresses = self._client.topology_description.server_descriptions()
        return ",".join(sorted(f"{host}:{port}" if port else host for host, port in addresses))

    def _selection_timeout(self) -> float:
        return float(self._client.options.server_selection_timeout)


async def _indexed(
    database: Any, names: tuple[str, ...]
) -> tuple[Collection, Collection, Collection]:
    """The store's three collections, their indexes made (making an existing one is a no-op)."""
    sessions, archive, history = (
        database.get_collection(name, codec_options=_CODEC) for name in names
    )
    # P5/P6: MongoDB's TTL monitor removes expired sessions; the engine also
    # treats them as new on load, so the monitor's delay never matters.
    await sessions.create_index("_expires_at", expireAfterSeconds=0)
    await archive.create_index(_ARCHIVE_KEY, unique=True)
    await archive.create_index("x", expireAfterSeconds=0)
    await history.create_index(_ROWS_KEY)
    await history.create_index("x", expireAfterSeconds=0)
    return sessions, archive, history


def accept(target: Any, database: str | None) -> tuple[str | None, Any, Any, str]:
    """(URI, client, database handle, database name) for what the caller passed in."""
    if isinstance(target, str):
        if not target.startswith(("mongodb://", "mongodb+srv://")):
            raise ValueError(
                f"MongoStore needs a MongoDB URI such as 'mongodb://localhost:27017', got "
                f"{masked(target)!r}."
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
            f"MongoStore cannot use the URI {masked(uri)!r}: {exc}. Fix the URI; its options "
            "are PyMongo's connection string options."
        ) from exc


def masked(uri: str) -> str:
    """`uri` with its password replaced by `***`, fit for messages and logs."""
    return _CREDENTIALS.sub(r"\1:***@", uri)


def _is_motor(target: object, class_name: str) -> bool:
    # Motor is end-of-life and optional: recognise its handles without importing it.
    kind = type(target)
    return kind.__module__.startswith("motor.") and kind.__name__ == class_name


def client_options(
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
