"""The `store` fixture: every conformance test runs once per entry of STORE_FACTORIES (P2).

To put a new store through the suite, add one factory below: an async context manager that takes
the pytest `request`, yields a fresh, empty store and closes it afterwards. A factory that needs a
server (MongoStore) asks for a *synchronous* fixture that provides it with
`request.getfixturevalue("mongo_server")`, for example:

    @asynccontextmanager
    async def mongo_store(request):
        server = request.getfixturevalue("mongo_server")
        store = MongoStore(server.url_for_fresh_database())
        try:
            yield store
        finally:
            await store.aclose()

    STORE_FACTORIES["mongo"] = mongo_store
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest

from picoflow.stores import MemoryStore, SQLiteStore, Store

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


STORE_FACTORIES: dict[str, StoreFactory] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
}


@pytest.fixture(params=list(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    async with STORE_FACTORIES[request.param](request) as fresh_store:
        yield fresh_store
