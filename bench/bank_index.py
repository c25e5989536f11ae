"""The memory bank at scale on SQLite: the vec0 index (picoflow[vectors]) against the Python scan.

    PYTHONPATH=. .venv/bin/python bench/bank_index.py [--sizes 1000 10000] [--owners 1000]
        [--per-owner 100] [--dims 256] [--queries 50] [--paths index python]

For each path (`index`: sqlite-vec's vec0 table partitioned by owner; `python`: the store as
without the extra, every vector of the owner scored in Python) and each bank: one owner with
`--sizes` entries, and `--owners` owners with `--per-owner` entries each. Entries are
hotel-chat sentences (bench/bank_hybrid.py's words), each with a `--dims` vector from
LangChain's `DeterministicFakeEmbedding`, written through the public API
(`MemoryBank(store, owner, embeddings).add`). It reports, through `MemoryBank.search`, p50 and
p95 of a text-only search (no embeddings) and of a hybrid one (text fused with the nearest
vectors), p50/p95 of adding an entry, recall@10 of `bank_nearest` against the exact ranking
(every vector of the owner scored in doubles, `stores._bank.nearest`), and the file's bytes per
entry. Results are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import statistics
import tempfile
import time
from array import array
from contextlib import closing
from pathlib import Path

from bank_hybrid import WORDS, sentence
from langchain_core.embeddings import DeterministicFakeEmbedding

from picoflow._bank import MemoryBank
from picoflow.stores import SQLiteStore, _sqlite_driver
from picoflow.stores._bank import nearest


def quantiles(samples: list[float]) -> tuple[float, float]:
    """p50 and p95, in milliseconds."""
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))]


async def build(store: SQLiteStore, owners: list[str], per_owner: int, dims: int) -> list[float]:
    """Fill the bank through `MemoryBank.add`; the times of the last 200 adds, in ms."""
    rng = random.Random(per_owner * len(owners))
    embeddings = DeterministicFakeEmbedding(size=dims)
    banks = [MemoryBank(store, owner, embeddings) for owner in owners]
    times = []
    left = per_owner * len(banks)
    for _ in range(per_owner):
        for bank in banks:
            start = time.perf_counter()
            await bank.add(sentence(rng))
            left -= 1
            if left < 200:
                times.append((time.perf_counter() - start) * 1000)
    return times


def exact_top(path: Path, owner: str, query: list[float], k: int) -> list[str]:
    """The exact ranking: every vector of the owner, in doubles, as the Python path scores."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT entry_id, vector FROM bank_vector WHERE owner = ?", (owner,)
        ).fetchall()
    return [key for key, _ in nearest(query, ((r[0], array("d", r[1])) for r in rows), k)]


async def measure(
    store: SQLiteStore, path: Path, owners: list[str], args: argparse.Namespace
) -> tuple[list[float], list[float], list[float], float]:
    """Text and hybrid search latencies, hybrid CPU time (ms), recall@10, over random queries.

    CPU time is the process's (every thread's): on a shared machine it is what a search
    costs, where the wall time also holds the time other programs had the cores.
    """
    rng = random.Random(7)
    embeddings = DeterministicFakeEmbedding(size=args.dims)
    text: list[float] = []
    hybrid: list[float] = []
    cpu: list[float] = []
    recall: list[float] = []
    for _ in range(args.queries):
        owner = rng.choice(owners)
        query = " ".join(rng.sample(WORDS, rng.randint(1, 3)))
        start = time.perf_counter()
        await MemoryBank(store, owner).search(query)
        text.append((time.perf_counter() - start) * 1000)
        start, used = time.perf_counter(), time.process_time()
        await MemoryBank(store, owner, embeddings).search(query)
        hybrid.append((time.perf_counter() - start) * 1000)
        cpu.append((time.process_time() - used) * 1000)
        if len(recall) < 20:
            vector = embeddings.embed_query(query)
            found = await store.bank_nearest(owner, vector, limit=10)
            exact = exact_top(path, owner, vector, 10)
            recall.append(len({e["id"] for e, _ in found} & set(exact)) / max(1, len(exact)))
    return text, hybrid, cpu, statistics.mean(recall)


def bytes_per_entry(path: Path, entries: int) -> float:
    """The file's size (its WAL copied in first) over its entries."""
    with closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path) / entries


async def one(
    folder: Path, path_kind: str, owners: list[str], per: int, args: argparse.Namespace
) -> str:
    """One bank on one path: its row of the results table."""
    _sqlite_driver.use_index(path_kind == "index")
    path = folder / f"{path_kind}-{len(owners)}x{per}.db"
    store = SQLiteStore(path)
    try:
        adds = await build(store, owners, per, args.dims)
        text, hybrid, cpu, recall = await measure(store, path, owners, args)
    finally:
        await store.aclose()
        _sqlite_driver.use_index(True)
    size = bytes_per_entry(path, len(owners) * per)
    path.unlink()
    (t50, t95), (h50, h95), (a50, a95) = quantiles(text), quantiles(hybrid), quantiles(adds)
    return (
        f"| {path_kind} | {len(owners):,} × {per:,} | {t50:.1f} / {t95:.1f} | "
        f"{h50:.1f} / {h95:.1f} | {statistics.median(cpu):.1f} | {a50:.2f} / {a95:.2f} | "
        f"{recall:.3f} | {size:,.0f} |"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--owners", type=int, default=1000)
    parser.add_argument("--per-owner", type=int, default=100)
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--paths", nargs="+", default=["index", "python"])
    args = parser.parse_args()
    if "index" in args.paths and not _sqlite_driver.available():
        raise SystemExit("the index path needs picoflow[vectors]: pip install -e '.[vectors]'")
    banks = [(["ada"], size) for size in args.sizes]
    if args.owners:
        banks.append(([f"user-{i:04d}" for i in range(args.owners)], args.per_owner))
    print(f"{args.dims} dims, {args.queries} queries, p50 / p95 in ms")
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    print(
        "| path | owners × entries | text search | hybrid search | hybrid CPU p50 | add | "
        "recall@10 | B/entry |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for owners, per in banks:
            for path_kind in args.paths:
                print(await one(Path(folder), path_kind, owners, per, args), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
