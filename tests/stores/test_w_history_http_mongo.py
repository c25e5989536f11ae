"""The HTTP history routes (W1-W4, H4, H5) on MongoStore: tests/server/test_w6_history_http.py.

That module's tests run here once more, with this module's `store` fixture, which gives a
MongoStore on SecantusDB (or on `MONGO_URI`'s server): a fresh database per test, as for the
store suites. Tests that build their own MemoryStore run there only.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from conftest import mongo_store
from mongo_server import MongoServer

from picoflow.stores import MongoStore, Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
import test_w6_history_http as over_http  # noqa: E402
from server_flows import client_for  # noqa: E402
from test_api_errors import error_body, failure  # noqa: E402


@pytest.fixture
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    async with mongo_store(request) as fresh:
        yield fresh


ON_MONGO = [
    name
    for name, test in vars(over_http).items()
    if name.startswith("test_") and "store" in inspect.signature(test).parameters
]
globals().update({name: getattr(over_http, name) for name in ON_MONGO})


def test_w_the_http_history_tests_that_take_a_store_run_here() -> None:
    """A guard: if the module is renamed or its tests stop taking `store`, this says so."""
    assert len(ON_MONGO) >= 10, ON_MONGO


@pytest.mark.parametrize(("method", "tail", "body"), over_http.ROUTES)
async def test_w2_a_session_mongodb_swept_when_it_expired_stays_gone(
    store: Store, mongo_server: MongoServer, method: str, tail: str, body: Any
) -> None:
    """MongoDB's TTL monitor deletes an expired session on its own (P5); no history route then
    brings it back: each is a 404, as for an unknown session, and nothing is written."""
    assert isinstance(store, MongoStore)
    _, app = over_http.served(store)
    async with client_for(app) as client:
        session = await over_http.talk(client, "one", "two")
        doc = await store.load(session)
        assert doc is not None
        doc["expires_at"] = "2020-01-01T00:00:00.000Z"
        await store.save(doc, doc["revision"])
        assert mongo_server.sweep_expired(store._database_name) >= 1
        assert await store.load(session) is None
        reply = await client.request(method, over_http.at(session, tail), json=body)
    assert reply.status_code == 404
    expected = failure(over_http.no_session(session), session, code="session_not_found")
    assert error_body(reply) == expected
    assert await store.load(session) is None
