"""L4 on MongoDB: `$vectorSearch` where the server has a vector search index, Python where not.

SecantusDB (the suite's server) has no search, like a plain `mongod`: the store must notice
once, keep no index state it cannot use, and rank by cosine in Python. Against a server that
has search (Atlas, or MongoDB 8.2 with mongot), named by `MONGO_URI`, the store makes the
index itself (owner as a filter field) and answers from it once the server reports it
queryable; that check is `check_mongo_vector_search.py`, run by hand against such a server
(`MONGO_URI=... pytest tests/stores/check_mongo_vector_search.py`): no server here has search.
"""

from __future__ import annotations

import os

import pytest

from picoflow._bank import MemoryBank
from picoflow.stores.mongo import MongoStore
from picoflow.testing import KeywordEmbeddings

CONCEPTS = {"pet": ["dog", "cat", "pet"], "car": ["car", "van", "parking"]}


@pytest.mark.skipif(bool(os.environ.get("MONGO_URI")), reason="SecantusDB has no vector search")
async def test_l4_mongo_without_vector_search_ranks_in_python(mongo: MongoStore) -> None:
    ada = MemoryBank(mongo, "ada", KeywordEmbeddings(CONCEPTS))
    dog = await ada.add("Travels with a dog")
    await ada.add("Needs parking for a van")
    await MemoryBank(mongo, "bob", KeywordEmbeddings(CONCEPTS)).add("Has a cat")
    assert mongo._vector_search().state == "absent"  # asked once, refused: CommandNotSupported
    assert [e["id"] for e in await ada.search("pet friendly")] == [dog["id"]]
    found = await mongo.bank_nearest("ada", [1.0, 0.0])
    assert [(e["id"], round(s, 5)) for e, s in found] == [(dog["id"], 1.0)]
    assert mongo._vector_search().state == "absent"  # never asked again
