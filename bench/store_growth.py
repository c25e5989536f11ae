"""Store size and per-turn time as history accumulates, with the default retention (W1, W5).

    python bench/store_growth.py [--stores sqlite,mongo] [--turns 1000] [--sessions 1000]

Two workloads on each store, with a flow whose memory is compacted (a rolling summary from a
scripted summariser, so a session's document stays bounded as a real app's does):

- one session driven to `--turns` turns: median turn time and store size per tenth;
- `--sessions` sessions of 10 turns each: the same per tenth of the sessions;
- `--pairs` times, one session at turn `--turns`/2 (the limits reached) and one at 9/10 of
  it, each in a store of its own (MongoDB: a SecantusDB each), their next tenth of turns
  alternating: the late turns' median over the early ones'
  (1.0 is flat), for the whole turn and for the store's save alone.

With `history_limit=50` (the default) the size must stop growing per session once 50
revisions are kept, and the per-turn time stay flat. On SQLite the same single-session run is
repeated with the history write switched off, which gives what history costs a turn (the
target: at most 0.2 ms). MongoDB runs on a SecantusDB started here (or `MONGO_URI`).
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
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "stores"))

from langchain_core.messages import BaseMessage  # noqa: E402

from picoflow import Flow, FlowEngine, Step  # noqa: E402
from picoflow.stores import SQLiteStore, Store, _sqlite_history  # noqa: E402
from picoflow.stores.mongo import MongoStore  # noqa: E402
from picoflow.testing import ScriptedChatModel  # noqa: E402


def policy(messages: list[BaseMessage], tools: list[str]) -> str:
    first = str(messages[0].content)
    if "summar" in first.lower() and len(messages) <= 3:
        return "The user talked about hotels; nothing else matters."
    return f"Noted: {str(messages[-1].content)[:60]}"


MODEL = ScriptedChatModel(policy=policy)


class Chat(Step):
    def get_prompt(self) -> str:
        return "You are a terse hotel assistant. Acknowledge what the user says."


class GrowthFlow(Flow):
    def __init__(self) -> None:
        super().__init__()
        self.get_memory().set_summary_model(MODEL).set_summary_config(16, 8).enable_summary("Chat")

    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [Chat(self)]


WORDS = ["Lisbon", "Porto", "Faro", "Braga", "Coimbra", "Evora", "Sintra"]


def line(turn: int) -> str:
    # Words only: numbers the summary drops would be warned about on every compaction.
    return f"A double room in {WORDS[turn % len(WORDS)]} near the river, with wifi and parking."


async def size_of(store: Store, path: str | None) -> int:
    """Bytes the store holds: the SQLite file (after a checkpoint), or every Mongo document."""
    if isinstance(store, SQLiteStore):
        assert path is not None
        import sqlite3

        db = sqlite3.connect(path)
        try:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages, free = (
                db.execute("PRAGMA page_count").fetchone()[0],
                db.execute("PRAGMA freelist_count").fetchone()[0],
            )
            page = db.execute("PRAGMA page_size").fetchone()[0]
        finally:
            db.close()
        return int((pages - free) * page)
    assert isinstance(store, MongoStore)
    import bson

    total = 0
    for collection in await store._prepared():
        async for raw in collection.find({}):
            total += len(bson.encode(raw))
    return total


async def one_session(store: Store, path: str | None, turns: int) -> list[tuple[int, float, int]]:
    """(turn, median ms of the tenth ending there, store bytes) per tenth of the turns."""
    engine = FlowEngine([GrowthFlow], store=store)
    session_id: str | None = None
    timings: list[float] = []
    out = []
    timed_saves(store)
    for turn in range(1, turns + 1):
        start = time.perf_counter()
        result = await engine.run("GrowthFlow", line(turn), session_id)
        timings.append((time.perf_counter() - start) * 1000)
        assert result.success, result.message
        session_id = result.session_id
        if turn % (turns // 10) == 0:
            tenth = timings[-(turns // 10) :]
            out.append((turn, statistics.median(tenth), await size_of(store, path)))
    await engine.aclose()
    return out


async def many_sessions(
    store: Store, path: str | None, sessions: int
) -> list[tuple[int, float, int]]:
    """(sessions so far, median turn ms of the tenth, store bytes) per tenth of the sessions."""
    engine = FlowEngine([GrowthFlow], store=store)
    timings: list[float] = []
    out = []
    timed_saves(store)
    for number in range(1, sessions + 1):
        session_id: str | None = None
        for turn in range(10):
            start = time.perf_counter()
            result = await engine.run("GrowthFlow", line(turn), session_id)
            timings.append((time.perf_counter() - start) * 1000)
            session_id = result.session_id
        if number % (sessions // 10) == 0:
            tenth = timings[-(sessions // 10) * 10 :]
            out.append((number, statistics.median(tenth), await size_of(store, path)))
    await engine.aclose()
    return out


async def paired(
    stores: tuple[Store, Store], early: int, late: int, span: int
) -> tuple[float, float]:
    """(median turn ms, median save ms) of turns late+1.. over those of turns early+1..

    One session is driven to `early` turns in the first store and another to `late` in the
    second (a store of its own, on MongoDB a server of its own, so whatever a store or server
    accumulates with its age counts too), then their next `span` turns alternate, so both see
    the same machine load: on two shared cores the load drifts more over a 1,000-turn run than
    the store's cost does, and tenths measured one after the other read that drift as growth.
    """
    engines = [FlowEngine([GrowthFlow], store=store) for store in stores]
    sessions: list[str | None] = []
    for engine, turns in zip(engines, (early, late), strict=True):
        session_id: str | None = None
        for turn in range(1, turns + 1):
            session_id = (await engine.run("GrowthFlow", line(turn), session_id)).session_id
        sessions.append(session_id)
    SAVES.clear()
    for store in stores:
        timed_saves(store, reset=False)
    turn_ms: list[list[float]] = [[], []]
    save_ms: list[list[float]] = [[], []]
    for step in range(span):
        for which, (session_id, done) in enumerate(zip(sessions, (early, late), strict=True)):
            before = len(SAVES)
            start = time.perf_counter()
            result = await engines[which].run("GrowthFlow", line(done + step + 1), session_id)
            turn_ms[which].append((time.perf_counter() - start) * 1000)
            save_ms[which] += SAVES[before:]
            assert result.success, result.message
    for engine in engines:
        await engine.aclose()
    ratio = statistics.median(turn_ms[1]) / statistics.median(turn_ms[0])
    return ratio, statistics.median(save_ms[1]) / statistics.median(save_ms[0])


SAVES: list[float] = []  # ms of every store save/create since the last reset


def timed_saves(store: Store, *, reset: bool = True) -> None:
    """Record how long each of the store's saves takes: the store's part of a turn."""
    if reset:
        SAVES.clear()
    for name in ("save", "create"):
        original = getattr(store, name)

        async def timed(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return await _original(*args, **kwargs)
            finally:
                SAVES.append((time.perf_counter() - start) * 1000)

        setattr(store, name, timed)


@contextmanager
def history_off() -> Iterator[None]:
    """SQLiteStore without its revision rows: what a turn cost before history (W1)."""
    original = _sqlite_history.record
    _sqlite_history.record = lambda *args, **kwargs: None  # type: ignore[assignment]
    try:
        yield
    finally:
        _sqlite_history.record = original


@contextmanager
def mongo_uri() -> Iterator[str]:
    external = os.environ.get("MONGO_URI")
    if external:
        yield external
        return
    from mongo_server import secantus_server

    with secantus_server() as uri:
        yield uri


def report(title: str, rows: list[tuple[int, float, int]], unit: str) -> None:
    print(f"\n{title}")
    print(f"  {unit:>9}  median turn ms  store KB")
    for count, median, size in rows:
        print(f"  {count:>9}  {median:>14.2f}  {size / 1024:>8.0f}")
    print(f"  median store save: {statistics.median(SAVES):.3f} ms")


async def run_store(
    kind: str, turns: int, sessions: int, uri: str | None, pairs: int
) -> None:
    def fresh(server: str | None = uri) -> tuple[Store, str | None]:
        if kind == "sqlite":
            path = str(Path(tempfile.mkdtemp(prefix="growth-")) / "sessions.db")
            return SQLiteStore(path), path
        assert server is not None
        return MongoStore(server, f"growth_{time.monotonic_ns()}"), None

    store, path = fresh()
    report(f"{kind}: one session, {turns} turns", await one_session(store, path, turns), "turn")
    store, path = fresh()
    rows = await many_sessions(store, path, sessions)
    report(f"{kind}: {sessions} sessions of 10 turns", rows, "sessions")
    if pairs:
        early, late, span = turns // 2, turns * 9 // 10, turns // 10
        ratios = []
        with mongo_uri() if kind == "mongo" else nullcontext(uri) as other:
            for _ in range(pairs):
                stores = (fresh(other)[0], fresh(uri)[0])
                ratios.append(await paired(stores, early, late, span))
        for turn, save in ratios:
            print(f"{kind}: turns {late + 1}-{late + span} against {early + 1}-{early + span}, "
                  f"alternating: turn {turn:.3f}x, save {save:.3f}x")  # fmt: skip
        print(f"{kind}: median of {pairs}: turn {statistics.median(r for r, _ in ratios):.3f}x, "
              f"save {statistics.median(s for _, s in ratios):.3f}x")  # fmt: skip
    if kind == "sqlite":
        pairs = []
        for _ in range(3):  # alternate, so both runs see the same machine load
            store, path = fresh()
            await one_session(store, path, turns)
            with_history = statistics.median(SAVES)
            store, path = fresh()
            with history_off():
                await one_session(store, path, turns)
            pairs.append((with_history, statistics.median(SAVES)))
        for on, off in pairs:
            print(f"sqlite: median save {on:.3f} ms with history, {off:.3f} ms without")
        delta = statistics.median(on - off for on, off in pairs)
        print(f"sqlite: history costs a save (so a turn) {delta:+.3f} ms (median of 3 pairs)")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", default="sqlite,mongo")
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument(
        "--pairs", type=int, default=3, help="paired late-against-early runs per store (0: none)"
    )
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    kinds = args.stores.split(",")
    if "mongo" in kinds:
        with mongo_uri() as uri:
            for kind in kinds:
                await run_store(kind, args.turns, args.sessions, uri, args.pairs)
    else:
        for kind in kinds:
            await run_store(kind, args.turns, args.sessions, None, args.pairs)


if __name__ == "__main__":
    asyncio.run(main())
