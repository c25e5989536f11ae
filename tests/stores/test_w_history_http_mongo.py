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

import pytest
from conftest import mongo_store

from picoflow.stores import Store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
import test_w6_history_http as over_http  # noqa: E402


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
