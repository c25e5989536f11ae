"""What keeping a streamed turn's events (O5) costs: `POST /ai/stream` with and without it.

A turn streams a reply of `--tokens` words from an instant model through the ASGI app (no
sockets, so the server's own work is what is timed). "kept" is the app as shipped: the events
go to the store in batches. "not kept" gives the keeper a store that drops every write, the
floor of the same route. "kept, no keep-alive" is the shipped app with
`create_app(stream_keepalive=None)`: what the keep-alive timer of a turn costs (O5). Reported,
medians over `--rounds` interleaved runs: wall time per
turn (noisy on a busy host), the process's CPU time per turn (background writes included;
a MongoDB server's own CPU is not), and store writes per turn.

    PYTHONPATH=. python bench/stream_keep.py --turns 200 --tokens 50 [--mongo mongodb://...]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from picoflow import Flow, FlowEngine, Step
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.stores._streams import KeptStream
from picoflow.testing import ScriptedChatModel


class Dropped:
    """A kept-stream store that keeps nothing: the cost of the route without O5's writes."""

    async def stream_open(self, *args: Any) -> None:
        return None

    async def stream_append(self, *args: Any) -> None:
        return None

    async def stream_read(self, *args: Any) -> KeptStream | None:
        return None


def flow_of(tokens: int) -> type[Flow]:
    reply = " ".join(f"word{n}" for n in range(tokens))
    model = ScriptedChatModel(policy=lambda messages, tools: reply)

    class TalkStep(Step):
        pass

    class TalkFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [TalkStep(self)]

    return TalkFlow


async def run(
    store: Any, kept: bool, turns: int, tokens: int, keepalive: bool = True
) -> tuple[float, float, float]:
    """Median ms per streamed turn, CPU ms per turn (background writes too), writes per turn."""
    engine = FlowEngine(flows=[flow_of(tokens)], store=store)
    app = create_app(engine) if keepalive else create_app(engine, stream_keepalive=None)
    keeper = app.state.picoflow.streams
    if not kept:
        keeper.store = Dropped()
    transport = httpx.ASGITransport(app=app)
    times = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        body = {"flowName": "TalkFlow", "message": "hi"}
        for n in range(turns + 20):
            if n == 20:  # after the warm-up
                cpu, writes = time.process_time(), keeper.writes
            start = time.perf_counter()
            reply = await client.post("/ai/stream", json=body)
            times.append(time.perf_counter() - start)
            assert reply.text.count("\nid: ") == tokens + 1
        while keeper.live:  # the last batches are written after `done` is sent
            await asyncio.sleep(0.01)
        cpu = (time.process_time() - cpu) / turns * 1000
    await engine.aclose()
    return statistics.median(times[20:]) * 1000, cpu, (keeper.writes - writes) / turns


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each, interleaved")
    parser.add_argument("--mongo", help="a MongoDB URI to measure MongoStore too")
    args = parser.parse_args()
    names = ["memory", "sqlite", *(["mongo"] if args.mongo else [])]
    found: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
    variants = {
        "kept": (True, True),
        "kept, no keep-alive": (True, False),
        "not kept": (False, True),
    }
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            for name in names:
                for n, (variant, (kept, keepalive)) in enumerate(variants.items()):
                    store = new_store(name, Path(folder) / f"{round_}-{n}.db", args.mongo)
                    found.setdefault((name, variant), []).append(
                        await run(store, kept, args.turns, args.tokens, keepalive)
                    )
    for (name, variant), runs in found.items():
        ms, cpu, writes = (statistics.median(column) for column in zip(*runs, strict=True))
        label = f"{variant}, {writes:.1f} writes/turn" if variants[variant][0] else variant
        print(f"{name:7} {ms:6.2f} ms/turn, {cpu:6.2f} ms CPU/turn  ({label})")


def new_store(name: str, path: Path, mongo: str | None) -> Any:
    if name == "memory":
        return MemoryStore()
    if name == "sqlite":
        return SQLiteStore(path)
    from picoflow.stores.mongo import MongoStore

    return MongoStore(mongo, f"bench_{path.stem.replace('-', '_')}_{time.monotonic_ns()}")


if __name__ == "__main__":
    asyncio.run(main())
