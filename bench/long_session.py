"""One HotelFlow session driven to 300 turns over HTTP, on SQLite and MongoDB (#25 item 3).

    python bench/long_session.py [--stores sqlite,mongo] [--turns 300]

The demo app (`HotelFlow` on its offline model, as `make serve` builds it) is served by
`create_app` and driven through its HTTP interface with httpx's ASGI transport (the whole
request path, routes, validation and JSON, without a socket). For each store it prints the
median turn time of turns 1-20 and 280-300, and the same for the store's own part alone
(every `load`, `revision`, `create`, `save`, `archive` and `search_archive` the engine
awaited), so the demo's own growth
(its prompts, its listings) is told apart from the store's, and the CPU time this process
spent on the turn (`time.process_time`: the app, the offline model and the store client, not
the database server), which other jobs on a shared machine disturb far less than the wall
clock. The target: the late median at most 1.5 times the early one. MongoDB runs on a
SecantusDB started here (or `MONGO_URI`).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "stores"))

import httpx  # noqa: E402

from picoflow import FlowEngine  # noqa: E402
from picoflow.server import create_app  # noqa: E402
from picoflow.stores import SQLiteStore, Store  # noqa: E402
from picoflow.stores.mongo import MongoStore  # noqa: E402

OPENING = [
    "Hi! I need a hotel in Portland.",
    "July 1 to July 6",
    "two beds, under $300 a night, with wifi and parking",
    "search now",
]
# Lines that keep the conversation going (none books, so the session never completes).
LOOP = [
    "more",
    "What do you have so far?",
    "does the Columbia Slough Lodge have a pool?",
    "compare 1,3,12 on price",
    "same hotels on amenities",
    "does the first one allow pets?",
]
STORE_CALLS = ("load", "revision", "create", "save", "archive", "search_archive")


def script(turns: int) -> list[str]:
    lines = list(OPENING)
    while len(lines) < turns:
        lines.append(LOOP[(len(lines) - len(OPENING)) % len(LOOP)])
    return lines[:turns]


class StoreClock:
    """The time the engine spends awaiting its store, per turn."""

    def __init__(self, store: Store) -> None:
        self.spent = 0.0
        for name in STORE_CALLS:
            original = getattr(store, name)

            async def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return await _original(*args, **kwargs)
                finally:
                    self.spent += time.perf_counter() - start

            setattr(store, name, timed)


async def drive(store: Store, turns: int) -> tuple[list[float], list[float], list[float]]:
    """(ms per turn over HTTP, ms of store calls per turn, CPU ms of this process per turn)."""
    from demo.hotel.flow import OFFLINE_MODEL, PROVIDERS, HotelFlow

    clock = StoreClock(store)
    engine = FlowEngine([HotelFlow.using(OFFLINE_MODEL)], store=store, providers=PROVIDERS)
    app = create_app(engine, expose_docs=False)
    totals, stores, cpus = [], [], []
    session = ""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for number, text in enumerate(script(turns)):
            body: dict[str, Any] = {"flowName": "HotelFlow", "message": text}
            if number == 0:
                body["config"] = {"today": "2026-05-15"}
            clock.spent = 0.0
            start, cpu = time.perf_counter(), time.process_time()
            reply = await client.post("/ai/run", json=body, headers={"chat-session-id": session})
            totals.append((time.perf_counter() - start) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            stores.append(clock.spent * 1000)
            answer = reply.json()
            if not answer.get("success") or answer.get("completed"):
                raise RuntimeError(f"turn {number + 1} ended the session: {answer}")
            session = answer["session"]
    await engine.aclose()
    return totals, stores, cpus


@contextmanager
def mongo_uri() -> Iterator[str]:
    external = os.environ.get("MONGO_URI")
    if external:
        yield external
        return
    from mongo_server import secantus_server

    with secantus_server() as uri:
        yield uri


def report(kind: str, totals: list[float], stores: list[float], cpus: list[float]) -> None:
    early, late = slice(0, 20), slice(279, 300)
    parts = (("turn over HTTP", totals), ("store part", stores), ("process CPU", cpus))
    for what, values in parts:
        first, last = statistics.median(values[early]), statistics.median(values[late])
        print(
            f"{kind:>6} {what:<15} turns 1-20 {first:7.2f} ms   turns 280-300 {last:7.2f} ms"
            f"   ratio {last / first:4.2f}"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,mongo")
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    if args.turns < 300:
        parser.error("--turns must be at least 300: the report compares turns 1-20 and 280-300")
    logging.disable(logging.WARNING)
    kinds = args.stores.split(",")
    with mongo_uri() if "mongo" in kinds else _nothing() as uri:
        for kind in kinds:
            if kind == "sqlite":
                store: Store = SQLiteStore(Path(tempfile.mkdtemp(prefix="long-")) / "s.db")
            else:
                store = MongoStore(uri, f"long_{time.monotonic_ns()}")
            report(kind, *await drive(store, args.turns))


@contextmanager
def _nothing() -> Iterator[str]:
    yield ""


if __name__ == "__main__":
    asyncio.run(main())
