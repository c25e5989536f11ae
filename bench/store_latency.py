"""Store latency: what saving and loading one session costs on SQLite and on MongoDB.

Each sample is one `save(doc, revision)` followed by one `load(id)`, the store's share of a turn
whose session is not in the engine's cache. The documents are shaped like real sessions (a memory
namespace of LangChain messages with tool calls, some step state) at about 20 KB and 200 KB of
JSON. MongoDB is a SecantusDB server that this script starts on 127.0.0.1 (the one the tests
use: a MongoDB-compatible server written in Python, so expect a real mongod to be faster), with
`retryWrites=false`. Run by hand:

    .venv/bin/python bench/store_latency.py [--samples 200] [--runs 5]

Printed: the median over runs of each run's p50 and p99, in milliseconds, plus `revision()` (the
one small read the engine makes every turn to validate its cache), and MongoStore's own share:
encoding before a write (checks, key escaping, BSON, size guard) and decoding after a read.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import bson
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, message_to_dict

from picoflow.stores import SQLiteStore, Store
from picoflow.stores._mongo_docs import SessionEncoder, session_from_stored
from picoflow.stores.base import SavedMessages
from picoflow.stores.mongo import _CODEC, MongoStore

# The tests' SecantusDB launcher (start-up deadline, log on failure) and the shared percentile.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stores"))
from mongo_server import secantus_server  # noqa: E402
from turn_overhead import pct  # noqa: E402

SIZES = {"20 KB": 20_000, "200 KB": 200_000}


def session(size: int) -> dict[str, Any]:
    """A session document of about `size` bytes of JSON: explore, tool call, result, reply."""
    messages: list[dict[str, Any]] = []
    doc: dict[str, Any] = {
        "id": "bench-session-0001",
        "schema_version": 1,
        "revision": 0,
        "flow": "HotelFlow",
        "run_status": "running",
        "created_at": "2026-05-15T10:00:00.000Z",
        "updated_at": "2026-05-15T10:00:00.000Z",
        # In the future: MongoDB's TTL monitor would delete the session in the middle of a run.
        "expires_at": (datetime.now(UTC) + timedelta(days=1)).isoformat(),
        "context": {"config": {"tenant": "acme", "today": "2026-05-15"}},
        "current_step": "ExploreStep",
        "sequence": ["ExploreStep"],
        "steps": {"ExploreStep": {"state": {"criteria": {"city": "Portland", "nights": 5}}}},
        "memory": {"hotel-explore": {"messages": messages, "summary": None}},
        "usage": {"model": {"input_tokens": 0, "output_tokens": 0}},
        "warnings": [],
    }
    turn = 0
    while len(json.dumps(doc)) < size:
        call = {"name": "capture_choices", "args": {"city": "Portland", "nights": turn}}
        messages += [
            message_to_dict(HumanMessage(f"Turn {turn}: two beds under $300, wifi and parking.")),
            message_to_dict(AIMessage("", tool_calls=[{**call, "id": f"call_{turn}"}])),
            message_to_dict(ToolMessage("Criteria saved.", tool_call_id=f"call_{turn}")),
            message_to_dict(AIMessage(f"Here are {turn % 7 + 1} hotels that match, sorted.")),
        ]
        turn += 1
    return doc


async def sample(store: Store, doc: dict[str, Any], count: int) -> dict[str, list[float]]:
    """`count` save+load pairs and `revision()` reads, each timed in ms."""
    await store.create(doc)
    timings: dict[str, list[float]] = {"save+load": [], "revision": []}
    for revision in range(count):
        doc["updated_at"] = f"2026-05-15T10:{revision // 60 % 60:02d}:{revision % 60:02d}.000Z"
        start = time.perf_counter()
        await store.save(doc, revision)
        loaded = await store.load(doc["id"])
        middle = time.perf_counter()
        await store.revision(doc["id"])
        end = time.perf_counter()
        if loaded is None or loaded["revision"] != revision + 1:
            found = None if loaded is None else (loaded["revision"], loaded["updated_at"])
            raise SystemExit(
                f"{store!r} saved revision {revision + 1} ({doc['updated_at']}), then loaded "
                f"{found}"
            )
        timings["save+load"].append((middle - start) * 1000)
        timings["revision"].append((end - middle) * 1000)
    await store.delete(doc["id"])
    return timings


def encode_ms(doc: dict[str, Any], count: int, *, reuse: bool) -> list[float]:
    """MongoStore's client-side work per save: with the same message objects, or new ones.

    The messages go in as the engine hands them over, a `SavedMessages` list (its promise that
    the dicts are never edited is what allows the reuse).
    """
    memory = {
        ns: {**entry, "messages": SavedMessages(entry["messages"])}
        for ns, entry in doc["memory"].items()
    }
    doc = {**doc, "memory": memory}
    encoder, out = SessionEncoder(), []
    for _ in range(count):
        if not reuse:
            encoder = SessionEncoder()
        start = time.perf_counter()
        encoder.record(doc, doc["id"], 1)
        out.append((time.perf_counter() - start) * 1000)
    return out


def decode_ms(doc: dict[str, Any], count: int) -> list[float]:
    """MongoStore's client-side work per load: BSON to dicts, internal fields dropped."""
    data = SessionEncoder().record(doc, doc["id"], 1).raw
    out = []
    for _ in range(count):
        start = time.perf_counter()
        session_from_stored(bson.decode(data, _CODEC))
        out.append((time.perf_counter() - start) * 1000)
    return out


async def measure(
    make_store: Callable[[int], Store], size: int, samples: int, runs: int
) -> dict[str, float]:
    per_run: dict[str, list[float]] = {}
    for run in range(runs):
        store = make_store(run)
        timings = await sample(store, session(size), samples)
        await store.aclose()
        for name, values in timings.items():
            per_run.setdefault(f"{name} p50", []).append(pct(values, 0.5))
            per_run.setdefault(f"{name} p99", []).append(pct(values, 0.99))
    return {name: statistics.median(values) for name, values in per_run.items()}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(f"{args.runs} runs x {args.samples} samples; medians over runs of each run's percentile")
    print("| store | session | save+load p50 | save+load p99 | revision() p50 |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp, secantus_server() as uri:
        stores: dict[str, Callable[[int], Store]] = {
            "SQLiteStore": lambda run: SQLiteStore(Path(tmp) / f"bench-{run}-{time.time_ns()}.db"),
            "MongoStore (SecantusDB)": lambda run: MongoStore(uri, f"bench_{run}"),
        }
        for name, make_store in stores.items():
            for label, size in SIZES.items():
                result = await measure(make_store, size, args.samples, args.runs)
                print(
                    f"| {name} | {label} | {result['save+load p50']:.2f} ms | "
                    f"{result['save+load p99']:.2f} ms | {result['revision p50']:.2f} ms |"
                )
    for label, size in SIZES.items():
        doc = session(size)
        first = pct(encode_ms(doc, args.samples, reuse=False), 0.5)
        again = pct(encode_ms(doc, args.samples, reuse=True), 0.5)
        decode = pct(decode_ms(doc, args.samples), 0.5)
        print(
            f"MongoStore client side, {label}: encoding p50 {first:.2f} ms for a session it "
            f"has not saved before, {again:.2f} ms when the same message objects come back; "
            f"decoding a load p50 {decode:.2f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
