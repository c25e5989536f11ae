"""Archive and memory-bank search at scale on SQLite (issue 23, L4). Run by hand:

    .venv/bin/python bench/search.py [--messages 100000] [--queries 200] [--runs 3]

Fills one session's archive with `--messages` archived messages (varied hotel-chat sentences,
so words repeat as in a real conversation, and a confirmation code every 1,000 messages), then
times `search_archive` through the store (the trigram FTS5 index for selective queries, the
newest-first scan for common ones) and the `LIKE` scan the store used before, on the same file,
for two kinds of query: common words (one to three of the chat's words) and rare ones (a code
said once, or a word never said), which the scan has to read the whole archive for. Also
times a ranked `bank_search` in a bank of 10,000 entries of 200 owners. Budget: archive search p50
under 20 ms over 100k messages.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from picoflow.stores import SQLiteStore
from picoflow.stores._bank import new_entry

WORDS = (
    "hotel room double twin suite parking breakfast airport downtown budget night nights "
    "check-in checkout pool gym wifi dog pet view quiet balcony late early cancel refund "
    "portland seattle friday saturday monday price cheaper closer compare book booking"
).split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 16)))


def message(text: str, position: int) -> dict:
    kind = "human" if position % 2 else "ai"
    return {"type": kind, "data": {"content": text, "type": kind, "id": f"m{position}"}}


def code(position: int) -> str:
    return f"conf{position * 7919 % 1_000_003:07d}"


async def fill(store: SQLiteStore, count: int, rng: random.Random) -> None:
    batch = 2000
    for start in range(1, count + 1, batch):
        entries = []
        for p in range(start, min(start + batch, count + 1)):
            text = sentence(rng) + (f" your code is {code(p)}" if p % 1000 == 0 else "")
            entries.append({"position": p, "message": message(text, p)})
        await store.archive("bench-session", "chat", entries)


def queries(rng: random.Random, count: int, messages: int) -> dict[str, list[str]]:
    common = [" ".join(rng.sample(WORDS, rng.randint(1, 3))) for _ in range(count)]
    rare = [
        code(rng.randrange(1000, messages + 1, 1000)) if i % 2 else f"lobster{i}"
        for i in range(count)
    ]
    return {"common words": common, "rare words": rare}


def like_scan(path: str, query: str) -> float:
    db = sqlite3.connect(path)
    words = query.lower().split()
    sql = (
        "SELECT position, message FROM archive WHERE session_id = ? AND namespace = ?"
        + " AND text LIKE ?" * len(words)
        + " ORDER BY position DESC LIMIT 10"
    )
    start = time.perf_counter()
    db.execute(sql, ["bench-session", "chat", *(f"%{w}%" for w in words)]).fetchall()
    elapsed = (time.perf_counter() - start) * 1000
    db.close()
    return elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "search.db")
        store = SQLiteStore(path)
        started = time.perf_counter()
        await fill(store, args.messages, rng)
        print(f"archived {args.messages} messages in {time.perf_counter() - started:.1f} s")
        asked = queries(rng, args.queries, args.messages)
        print("| queries | search_archive p50 (ms) | LIKE scan before p50 (ms) |")
        print("| --- | --- | --- |")
        everything: list[float] = []
        for kind, batch in asked.items():
            indexed_runs, like_runs = [], []
            for _ in range(args.runs):
                timings = []
                for query in batch:
                    start = time.perf_counter()
                    await store.search_archive("bench-session", "chat", query)
                    timings.append((time.perf_counter() - start) * 1000)
                everything += timings
                indexed_runs.append(statistics.median(timings))
                like_runs.append(statistics.median(like_scan(path, q) for q in batch[:40]))
            indexed, scanned = statistics.median(indexed_runs), statistics.median(like_runs)
            print(f"| {kind} | {indexed:.2f} | {scanned:.2f} |")
        print(f"all queries, search_archive p50: {statistics.median(everything):.2f} ms")
        asked_bank = asked["common words"]
        for i in range(10_000):  # 200 owners of 50 entries; searches are for one of them
            await store.bank_add(new_entry(f"owner{i % 200}", sentence(rng)))
        bank = []
        for query in asked_bank:
            start = time.perf_counter()
            await store.bank_search("owner7", query)
            bank.append((time.perf_counter() - start) * 1000)
        p50 = statistics.median(bank)
        print(f"bank_search, 10,000 entries of 200 owners (bm25) p50: {p50:.2f} ms")
        await store.aclose()


if __name__ == "__main__":
    asyncio.run(main())
