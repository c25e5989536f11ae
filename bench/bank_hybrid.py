"""Hybrid memory-bank search on SQLite: the text index alone against text fused with cosine (L4).

    PYTHONPATH=. .venv/bin/python bench/bank_hybrid.py [--entries 1000 5000] [--dims 256]

One owner's bank of `--entries` entries (hotel-chat sentences), each with a `--dims` vector
from LangChain's `DeterministicFakeEmbedding`, stored beside the entry as the engine stores it.
Times `bank_search` (FTS5, bm25) and picoflow's hybrid search (the same, plus the query's
embedding, every vector of the owner read and scored in Python, reciprocal rank fusion), p50
over `--queries` queries. It checks the claim in docs/long-term-memory.md that no vector index
is needed at bank sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from pathlib import Path

from langchain_core.embeddings import DeterministicFakeEmbedding

from picoflow._bank import vectors
from picoflow.stores import SQLiteStore
from picoflow.stores._bank import new_entry

WORDS = (
    "hotel room double twin suite parking breakfast airport downtown budget night quiet "
    "balcony late early pool gym wifi dog pet view allergic feathers vegan van garage"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 10)))


async def one_bank(path: Path, entries: int, dims: int, queries: int) -> tuple[float, float]:
    rng = random.Random(entries)
    embeddings = DeterministicFakeEmbedding(size=dims)
    store = SQLiteStore(path)
    try:
        for _ in range(entries):
            entry = await store.bank_add(new_entry("ada", sentence(rng)))
            vector = embeddings.embed_query(entry["text"])
            await store.bank_set_vector("ada", entry["id"], vector)
        asked = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(queries)]
        text, hybrid = [], []
        for query in asked:
            start = time.perf_counter()
            await store.bank_search("ada", query)
            text.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()
            await vectors.search(store, embeddings, "ada", query)
            hybrid.append((time.perf_counter() - start) * 1000)
        return statistics.median(text), statistics.median(hybrid)
    finally:
        await store.aclose()


async def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--dims", type=int, default=256)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for count in args.entries:
            path = Path(folder) / f"bank{count}.db"
            text, hybrid = await one_bank(path, count, args.dims, args.queries)
            print(
                f"{count:>6} entries, {args.dims} dims: bank_search p50 {text:.2f} ms, "
                f"hybrid p50 {hybrid:.2f} ms"
            )


if __name__ == "__main__":
    asyncio.run(main())
