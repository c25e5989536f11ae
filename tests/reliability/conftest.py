"""Fixtures of the reliability suite: sizes (small by default, full with `--long`) and stores.

The scenarios are the ones an adversarial run used against the engine: many concurrent turns on
one session, several processes on one session, `kill -9` in the middle of turns, a store that
dies mid-conversation, many sessions. Each asserts the same three things about what is stored:
nothing a client was told was saved is missing (0 lost), no message is stored twice
(0 duplicated), and every stored turn is whole (0 torn).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

STORES_TESTS = Path(__file__).resolve().parent.parent / "stores"
if str(STORES_TESTS) not in sys.path:  # the store tests' worker and Mongo server helpers
    sys.path.insert(0, str(STORES_TESTS))

from mongo_server import MongoServer  # noqa: E402
from mongo_server import mongo_server as run_mongo_server  # noqa: E402


@dataclass(frozen=True)
class Sizes:
    """How hard each scenario pushes: CI runs a few of each, `--long` the full numbers."""

    concurrent_turns: int
    kills: int
    sessions: int
    outage_turns: int


@pytest.fixture(scope="session")
def sizes(request: pytest.FixtureRequest) -> Sizes:
    if request.config.getoption("--long"):
        return Sizes(concurrent_turns=200, kills=40, sessions=10_000, outage_turns=40)
    return Sizes(concurrent_turns=50, kills=3, sessions=300, outage_turns=6)


@pytest.fixture(scope="session")
def reliability_mongo() -> Iterator[MongoServer]:
    """SecantusDB for the suite (or MONGO_URI's server), as the store tests use it."""
    with run_mongo_server() as server:
        yield server
