"""Idle compaction (M14) on SQLite: what the `sessions_idle` index costs a save, and saves a page.

Three figures, each the median of `--runs` runs:

- a save of a session document (no messages: the part the index reads) with and without the
  partial index `sessions_idle` (json_extract of `updated_at` and `run_status` on every write);
- one `idle_sessions` page of 100 among `--sessions` stored sessions (a fifth of them
  completed), from the index and, for comparison, with the index dropped (a scan);
- `engine.compact_idle` over `--idle` idle sessions of 4 turns each (a scripted summariser, so
  the figure is picoflow's and the store's own cost per session, not a model's).

Run by hand:

    PYTHONPATH=. .venv/bin/python bench/idle_compaction.py [--sessions 100000] [--idle 200]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from picoflow import Flow, FlowEngine, Step, summarise
from picoflow.stores import SQLiteStore
from picoflow.testing import ScriptedChatModel


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _doc(index: int, updated_at: str) -> dict[str, Any]:
    return {
        "id": f"bench-{index:08d}",
        "schema_version": 1,
        "revision": 0,
        "flow": "HotelFlow",
        "run_status": "completed" if index % 5 == 0 else "running",
        "created_at": updated_at,
        "updated_at": updated_at,
        "expires_at": None,
        "context": {"config": {"tenant": "acme"}},
        "steps": {f"Step{k}": {"state": {"notes": "x" * 200}} for k in range(15)},
        "memory": {},
        "usage": {"model": {"calls": 3, "input_tokens": 900}},
    }


def _index(path: Path, present: bool) -> None:
    """Drop or re-create `sessions_idle` from outside, as a file without it would be."""
    from picoflow.stores._sqlite_extras import IDLE_SCHEMA

    db = sqlite3.connect(path)
    try:
        db.executescript(IDLE_SCHEMA if present else "DROP INDEX IF EXISTS sessions_idle;")
    finally:
        db.close()


async def saves(path: Path, samples: int) -> dict[bool, float]:
    """Median save, in microseconds, with and without the index."""
    store = SQLiteStore(path)
    doc = _doc(1, _stamp(datetime.now(UTC)))
    doc["id"] = "bench-save"
    await store.create(doc)
    out = {}
    for present in (False, True):
        _index(path, present)
        times = []
        for _ in range(samples):
            doc["updated_at"] = _stamp(datetime.now(UTC))
            started = time.perf_counter()
            doc["revision"] = await store.save(doc, doc["revision"])
            times.append(time.perf_counter() - started)
        out[present] = statistics.median(times) * 1e6
    await store.aclose()
    return out


async def pages(path: Path, count: int, samples: int) -> dict[bool, float]:
    """Median `idle_sessions` page of 100, in milliseconds, with and without the index."""
    store = SQLiteStore(path)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    for index in range(count):
        await store.create(_doc(index, _stamp(start + timedelta(seconds=index))))
    cutoff = _stamp(start + timedelta(seconds=count // 2))
    out = {}
    for present in (True, False):
        _index(path, present)
        times = []
        for _ in range(samples):
            late = _stamp(start + timedelta(seconds=random.randrange(count // 2 - 200)))
            started = time.perf_counter()
            page = await store.idle_sessions(cutoff, after=(late, ""), limit=100)
            times.append(time.perf_counter() - started)
            assert len(page) == 100 or late > cutoff
        out[present] = statistics.median(times) * 1e3
    _index(path, True)
    await store.aclose()
    return out


MODEL = ScriptedChatModel(
    policy=lambda m, t: "summary" if "Previous summary" in m[-1].text else "ok"
)


class Chat(Step):
    pass


class BenchFlow(Flow):
    def __init__(self) -> None:
        super().__init__()
        self.get_memory().set_summary_model(MODEL).set_policy("chat", summarise(16, 4))

    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [Chat(self).use_memory("chat")]


async def compaction(path: Path, idle: int) -> tuple[float, dict[str, Any]]:
    """Milliseconds per idle session compacted by one `compact_idle` call, and its report."""
    store = SQLiteStore(path)
    engine = FlowEngine([BenchFlow], store=store)
    old = _stamp(datetime.now(UTC) - timedelta(hours=2))
    for _ in range(idle):
        session = None
        for text in ("a", "b", "c", "d"):
            session = (await engine.run("BenchFlow", text, session_id=session)).session_id
        assert session is not None
        doc = await store.load(session)
        assert doc is not None
        doc["updated_at"] = old
        await store.save(doc, doc["revision"])
    started = time.perf_counter()
    report = await engine.compact_idle(timedelta(hours=1))
    elapsed = time.perf_counter() - started
    await store.aclose()
    return elapsed * 1e3 / idle, report


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100_000)
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder_path = Path(folder)
        save_runs = [await saves(folder_path / f"s{r}.db", args.samples) for r in range(args.runs)]
        page_runs = await pages(Path(folder) / "pages.db", args.sessions, 50)
        per_session, report = await compaction(Path(folder) / "idle.db", args.idle)
    for present in (False, True):
        median = statistics.median(run[present] for run in save_runs)
        print(f"save, {'with' if present else 'without'} sessions_idle: {median:.0f} us p50")
    print(f"idle_sessions page of 100 among {args.sessions}: index {page_runs[True]:.2f} ms, "
          f"scan {page_runs[False]:.1f} ms (p50)")
    print(f"compact_idle: {per_session:.1f} ms per idle session ({report['compacted']} compacted, "
          f"{report['compacted_count']} messages)")


if __name__ == "__main__":
    asyncio.run(main())
