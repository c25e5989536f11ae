"""MongoDB's vector search for the memory bank: `$vectorSearch` where the server has it (L4).

Atlas (and MongoDB 8.2 with its search process) answers `$vectorSearch` from a vector search
index; MongoStore makes one on the bank collection with the first vector it keeps: the
`vector` field (unit vectors, so `dotProduct` is the cosine) and `owner` as a filter field, so
a search reads only that owner's vectors. A server without search (a plain `mongod`,
SecantusDB, some MongoDB-compatible services) refuses the command (CommandNotSupported), and
the store keeps today's path: the owner's vectors scored in Python (`stores._bank.nearest`).

A search index is built, and kept in step with the collection, asynchronously by the server:
until it reports itself queryable the Python path answers. The vector is a field of the
entry's own document, so an edit, a delete or forgetting an owner changes it in the same
write; the index follows within moments (an entry deleted meanwhile is never returned: entries
are read back from the collection).
"""

from __future__ import annotations

import inspect
import time
from typing import Any

from pymongo.errors import OperationFailure
from pymongo.operations import SearchIndexModel

from picoflow.stores import _bank

__all__ = ["INDEX", "VectorSearch", "knn"]

INDEX = "picoflow_bank_vector"
_RECHECK_SECONDS = 5.0  # how often an index still being built is looked at again
_ALREADY_EXISTS = 68  # IndexAlreadyExists: another process made it first


class VectorSearch:
    """What one MongoStore knows of its bank's vector search index.

    `state` is "unknown" (not looked at yet), "missing", "building", "ready", or "absent" (the
    server has no search: never asked again by this store).
    """

    def __init__(self) -> None:
        """Know nothing yet: the first vector or search looks."""
        self.state = "unknown"
        self._looked = float("-inf")

    async def ensure(self, bank: Any, dimensions: int) -> None:
        """After a vector is kept: make the index where the server can and none exists."""
        if self.state == "unknown":
            await self._look(bank)
        if self.state != "missing":
            return
        definition = {
            "fields": [
                {
                    "type": "vector",
                    "path": "vector",
                    "numDimensions": dimensions,
                    "similarity": "dotProduct",
                },
                {"type": "filter", "path": "owner"},
            ]
        }
        model = SearchIndexModel(definition=definition, name=INDEX, type="vectorSearch")
        try:
            await bank.create_search_index(model)
            self.state = "building"
        except OperationFailure as exc:
            self.state = "building" if exc.code == _ALREADY_EXISTS else "absent"

    async def usable(self, bank: Any) -> bool:
        """Whether a search can be answered by `$vectorSearch` now."""
        if self.state in ("ready", "absent"):
            return self.state == "ready"
        if time.monotonic() - self._looked >= _RECHECK_SECONDS:
            await self._look(bank)
        return self.state == "ready"

    async def _look(self, bank: Any) -> None:
        self._looked = time.monotonic()
        try:
            found = [index async for index in await _cursor(bank.list_search_indexes(INDEX))]
        except OperationFailure:  # no search on this server
            self.state = "absent"
            return
        if not found:
            self.state = "missing"
        else:
            self.state = "ready" if found[0].get("queryable") else "building"


async def knn(bank: Any, owner: str, vector: list[float], limit: int) -> list[tuple[str, float]]:
    """The owner's `limit` nearest entries by `$vectorSearch`: ids and cosine (above 0)."""
    if limit < 1:
        return []
    search = {
        "index": INDEX,
        "path": "vector",
        "queryVector": _bank.unit(vector),
        "numCandidates": min(10_000, max(100, limit * 20)),
        "limit": limit,
        "filter": {"owner": owner},
    }
    project = {"_id": 1, "score": {"$meta": "vectorSearchScore"}}
    cursor = await _cursor(bank.aggregate([{"$vectorSearch": search}, {"$project": project}]))
    # dotProduct's score is (1 + cosine) / 2
    scored = [(str(found["_id"]), 2.0 * float(found["score"]) - 1.0) async for found in cursor]
    return [(key, score) for key, score in scored if score > 0.0]


async def _cursor(made: Any) -> Any:
    """A cursor from PyMongo's async API (a coroutine) or Motor's (the cursor itself)."""
    return await made if inspect.isawaitable(made) else made
