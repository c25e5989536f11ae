"""The `store` fixture: every conformance test runs once per entry of STORE_FACTORIES (P2).

To put a new store through the suite, add one factory below: an async context manager that takes
the pytest `request`, yields a fresh, empty store and closes it afterwards. A factory that needs a
server asks for a *synchronous* session-scoped fixture that provides it, as `mongo_store` does
with `request.getfixturevalue("mongo_server")`.

MongoStore runs against a SecantusDB server started once per test session on 127.0.0.1, or
against the server `MONGO_URI` names (see `mongo_server.py`); each test gets its own database
and its own client, because a PyMongo async client belongs to the event loop that created it.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest
from mongo_server import MongoServer
from mongo_server import mongo_server as run_mongo_server

from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore

StoreFactory = Callable[[pytest.FixtureRequest], AbstractAsyncContextManager[Store]]


@asynccontextmanager
async def memory_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    store = MemoryStore()
    try:
        yield store
    finally:
        await store.aclose()


@asynccontextmanager
async def sqlite_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    tmp_path = request.getfixturevalue("tmp_path")
    store = SQLiteStore(tmp_path / "sessions.db")
    try:
        yield store
    finally:
        await store.aclose()


@asynccontextmanager
async def mongo_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    server: MongoServer = request.getfixturevalue("mongo_server")
    database = server.fresh_database()
    store = MongoStore(server.uri, database)
    try:
        yield store
    finally:
        await store.aclose()
        server.drop(database)


@asynccontextmanager
async def motor_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """MongoStore on a Motor database handle (Motor is end-of-life, but users still pass it)."""
    from motor.motor_asyncio import AsyncIOMotorClient

    server: MongoServer = request.getfixturevalue("mongo_server")
    database = server.fresh_database()
    client = AsyncIOMotorClient(server.uri)
    store = MongoStore(client[database])
    try:
        yield store
    finally:
        await store.aclose()
        client.close()  # the store never closes a handle it was given
        server.drop(database)


STORE_FACTORIES: dict[str, StoreFactory] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
    "mongo": mongo_store,
    "mongo-motor": motor_store,
}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "drops_connections: a Mongo test whose server goes away or hangs up on it"
    )


@pytest.fixture(autouse=True)
def _collect_sockets_leaked_by_pymongo(request: pytest.FixtureRequest) -> Iterator[None]:
    """Collect, quietly, the sockets PyMongo's async client leaks when it is closed mid-connect.

    pymongo 4.20's `_async_create_connection` closes its socket on OSError and TimeoutError but
    not on CancelledError, which is what `client.close()` raises in a monitor that is just
    reconnecting (a stopped server, a closed port, a dropped connection). The socket then sits
    in a reference cycle, and whichever test happens to trigger the garbage collector later
    would fail on its ResourceWarning. Collecting here, after the test's own teardown, keeps
    that upstream leak inside the tests that provoke it (marked `drops_connections`; a full
    collection costs tens of milliseconds, too much for every test).
    """
    yield
    if request.node.get_closest_marker("drops_connections") is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            gc.collect()


@pytest.fixture(scope="session")
def mongo_server() -> Iterator[MongoServer]:
    """SecantusDB for the whole test session (or MONGO_URI's server); sync, so any loop works."""
    with run_mongo_server() as server:
        yield server


@pytest.fixture
def mongo_database(mongo_server: MongoServer) -> Iterator[str]:
    """The name of a database of this test's own, dropped afterwards."""
    name = mongo_server.fresh_database()
    yield name
    mongo_server.drop(name)


@pytest.fixture
async def open_mongo_store() -> AsyncIterator[Callable[..., MongoStore]]:
    """Build MongoStores (same arguments) that are closed after the test, whatever happens."""
    stores: list[MongoStore] = []

    def build(*args: Any, **kwargs: Any) -> MongoStore:
        stores.append(MongoStore(*args, **kwargs))
        return stores[-1]

    yield build
    for store in stores:
        await store.aclose()


@pytest.fixture
def mongo(
    open_mongo_store: Callable[..., MongoStore], mongo_server: MongoServer, mongo_database: str
) -> MongoStore:
    """A MongoStore on this test's own database."""
    return open_mongo_store(mongo_server.uri, mongo_database)


@pytest.fixture(params=list(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    async with STORE_FACTORIES[request.param](request) as fresh_store:
        yield fresh_store
