"""A by-hand check of `$vectorSearch` (L4) against a MongoDB server that has vector search.

Not collected by the suite (no server here has search: SecantusDB and a plain `mongod` have
none). Run it against Atlas or MongoDB 8.2 with mongot:

    MONGO_URI=mongodb+srv://... .venv/bin/python -m pytest tests/stores/check_mongo_vector_search.py

The server builds the index in the background, so the check looks until it is queryable.
"""

from __future__ import annotations

import asyncio
import os
import random

import pytest

from picoflow.stores._bank import nearest, new_entry, unit
from picoflow.stores._bank_mongo import INDEX
from picoflow.stores.mongo import MongoStore


async def test_l4_mongo_vector_search_index_answers_by_owner(mongo: MongoStore) -> None:
    if not os.environ.get("MONGO_URI"):
        pytest.fail("set MONGO_URI to a server with vector search (Atlas, MongoDB 8.2 + mongot)")
    rng = random.Random(2)
    data = [[rng.uniform(-1, 1) for _ in range(8)] for _ in range(60)]
    ids = []
    for i, vector in enumerate(data):
        entry = await mongo.bank_add(new_entry("ada" if i % 2 else "bob", f"entry {i}"))
        await mongo.bank_set_vector(entry["owner"], entry["id"], vector, model="m")
        ids.append(entry["id"])
    search = mongo._vector_search()
    if search.state == "absent":
        pytest.fail("MONGO_URI's server has no vector search: run this against Atlas")
    async with mongo._collections("look at the index") as (sessions, _, _):
        bank = await mongo._bank_collection(sessions)
        for _ in range(240):  # the server builds the index on its own time: look until ready
            search._looked = float("-inf")
            if await search.usable(bank):
                break
            await asyncio.sleep(0.5)
        assert search.state == "ready", f"{INDEX} never became queryable"
    query = [rng.uniform(-1, 1) for _ in range(8)]
    mine = [(key, unit(v)) for i, (key, v) in enumerate(zip(ids, data, strict=True)) if i % 2]
    exact = [key for key, _ in nearest(query, mine, 5)]
    found = await mongo.bank_nearest("ada", query, limit=5, model="m")
    assert [e["id"] for e, _ in found] == exact
    assert all(e["owner"] == "ada" for e, _ in found)
