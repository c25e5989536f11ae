"""MongoStore's waiting list (K7), idle sessions (M14), owner ledger (O3) and memory bank (L1-L5).

A mixin of `MongoStore`: its methods reach the database through `_collections`, so they share
its connection, its lazily made indexes and its error translation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo import ReturnDocument
from pymongo.errors import OperationFailure

from picoflow.stores import _bank, _bank_mongo, _checks
from picoflow.stores._bank import BankEntry
from picoflow.stores._bank_mongo import VectorSearch
from picoflow.stores._idle import check_idle_query, idle_summary
from picoflow.stores._mongo_docs import session_from_stored
from picoflow.stores._waiting import check_limit, summary
from picoflow.stores.base import JSONDict

__all__ = ["MongoExtras"]

_Collection = Any


class MongoExtras:
    """The waiting-list, ledger and bank methods of `MongoStore`."""

    _closed: bool
    _names: tuple[str, ...]
    _usage_ready: bool
    _bank_text: bool | None
    _idle_ready: bool = False  # M14: the index of running sessions, made on first use

    if TYPE_CHECKING:

        def _collections(
            self, action: str
        ) -> AbstractAsyncContextManager[tuple[_Collection, _Collection, _Collection]]: ...

    async def waiting(self, limit: int = 100) -> list[JSONDict]:
        """Sessions with a pending approval or an operator, newest first (K7)."""
        _checks.check_open(self, self._closed)
        limit = check_limit(limit)
        query = {"$or": [{"approvals.status": "pending"}, {"operator": {"$ne": None}}]}
        action = "list the sessions that wait for a person"
        async with self._collections(action) as (sessions, _, _):
            cursor = sessions.find(query, {"memory": 0}).sort("updated_at", -1).limit(limit)
            stored = [doc async for doc in cursor]
        found = [summary({**session_from_stored(doc), "id": doc["_id"]}) for doc in stored]
        return [item for item in found if item is not None]

    async def idle_sessions(
        self, before: str, *, after: tuple[str, str] | None = None, limit: int = 100
    ) -> list[JSONDict]:
        """Running sessions last saved before `before` (ISO), oldest first, one page (M14).

        `after` is the `(updated_at, id)` of the previous page's last session. One range of
        the `(run_status, updated_at, _id)` index, made on the first call (a store that never
        lists idle sessions never pays for it on its saves); the messages are not read.
        """
        _checks.check_open(self, self._closed)
        stamp, last_id = check_idle_query(before, after, limit)
        query = {
            "run_status": "running",
            "updated_at": {"$lt": before, "$gte": stamp},
            "$or": [{"updated_at": {"$gt": stamp}}, {"_id": {"$gt": last_id}}],
        }
        async with self._collections("list the idle sessions") as (sessions, _, _):
            if not self._idle_ready:
                await sessions.create_index(_IDLE_KEY)
                self._idle_ready = True
            cursor = sessions.find(query, _IDLE_FIELDS).sort(_IDLE_KEY[1:]).limit(limit)
            return [idle_summary(doc, str(doc["_id"])) async for doc in cursor]

    async def add_owner_tokens(self, owner: str, day: str, tokens: int) -> int:
        """Add to an owner's tokens of one day and return the new total (O3's ledger).

        One `$inc` upsert, so concurrent workers never lose a count; a TTL index removes a
        day's record two days after it.
        """
        _checks.check_open(self, self._closed)
        action = f"count the tokens of owner '{owner}'"
        async with self._collections(action) as (sessions, _, _):
            usage = await self._owner_usage(sessions)
            expires = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC) + timedelta(days=2)
            stored = await usage.find_one_and_update(
                {"_id": {"owner": owner, "day": day}},
                {"$inc": {"tokens": tokens}, "$set": {"_expires_at": expires}},
                upsert=True,
                return_document=ReturnDocument.AFTER,
            )
            return int(stored["tokens"])

    async def owner_tokens(self, owner: str, day: str) -> int:
        """An owner's tokens of one day (O3)."""
        _checks.check_open(self, self._closed)
        async with self._collections(f"read the tokens of owner '{owner}'") as (sessions, _, _):
            usage = await self._owner_usage(sessions)
            stored = await usage.find_one({"_id": {"owner": owner, "day": day}})
            return int(stored["tokens"]) if stored else 0

    async def _owner_usage(self, sessions: _Collection) -> _Collection:
        """The ledger collection beside the sessions, its TTL index made once."""
        usage = sessions.database.get_collection(f"{self._names[0]}_owner_usage")
        if not self._usage_ready:
            await usage.create_index("_expires_at", expireAfterSeconds=0)
            self._usage_ready = True
        return usage

    # -- the long-term memory bank (L1, L4, L5) -----------------------------------------------

    async def _bank_collection(self, sessions: _Collection) -> _Collection:
        """The bank beside the sessions; its indexes are made on first use.

        A text index ranks searches where the server has one; a server without (SecantusDB,
        some MongoDB-compatible services) falls back to a `$regex` match ranked here.
        """
        bank = sessions.database.get_collection(f"{self._names[0]}_bank")
        if self._bank_text is None:
            await bank.create_index([("owner", 1), ("updated_at", -1)])
            try:
                await bank.create_index([("text", "text")], default_language="english")
                self._bank_text = True
            except OperationFailure:
                self._bank_text = False
        return bank

    async def bank_add(self, entry: BankEntry) -> BankEntry:
        """Keep a new entry (built with `stores._bank.new_entry`)."""
        _checks.check_open(self, self._closed)
        checked = _bank.checked_entry(entry)
        record = {**checked, "_id": checked["id"], "search": checked["text"].lower()}
        action = f"remember for owner '{checked['owner']}'"
        async with self._collections(action) as (sessions, _, _):
            await (await self._bank_collection(sessions)).insert_one(record)
        return checked

    async def bank_list(self, owner: str, *, page: int = 1, page_size: int = 50) -> list[BankEntry]:
        """An owner's entries, the most recently written first, one page."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        _bank.check_page(page, page_size)
        async with self._collections(f"list the memory of owner '{owner}'") as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            cursor = (
                bank.find({"owner": owner}, _BANK_FIELDS)
                .sort([("updated_at", -1), ("_id", -1)])
                .skip((page - 1) * page_size)
                .limit(page_size)
            )
            return [_bank_entry(stored) async for stored in cursor]

    async def bank_search(
        self, owner: str, query: str, *, page: int = 1, page_size: int = 10
    ) -> list[BankEntry]:
        """An owner's entries matching any word of `query`, the most relevant first."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        _bank.check_page(page, page_size)
        words = _bank.query_words(query)
        if not words:
            return []
        async with self._collections(f"search the memory of owner '{owner}'") as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            skip = (page - 1) * page_size
            if self._bank_text:
                score = {"score": {"$meta": "textScore"}}
                cursor = (
                    bank.find({"owner": owner, "$text": {"$search": " ".join(words)}}, score)
                    .sort([("score", {"$meta": "textScore"})])
                    .skip(skip)
                    .limit(page_size)
                )
                return [_bank_entry(stored) async for stored in cursor]
            selector = {
                "owner": owner,
                "$or": [{"search": {"$regex": re.escape(word)}} for word in words],
            }
            found = [
                _bank_entry(stored)
                async for stored in bank.find(selector, _BANK_FIELDS).limit(_BANK_SCAN)
            ]
            return _bank.rank(found, words)[skip : skip + page_size]

    async def bank_update(
        self, owner: str, entry_id: str, *, text: str | None = None, kind: str | None = None
    ) -> BankEntry | None:
        """Change an entry's text or kind; None if the owner has no entry with that id."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        change: dict[str, Any] = {"updated_at": _bank.stamp()}
        update: dict[str, Any] = {"$set": change}
        if text is not None:
            change["text"] = _bank.check_text(text)
            change["search"] = change["text"].lower()
            update["$unset"] = {"vector": ""}  # the old vector embeds the old text
        if kind is not None:
            change["kind"] = _bank.check_kind(kind)
        async with self._collections(f"edit the memory of owner '{owner}'") as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            stored = await bank.find_one_and_update(
                {"_id": entry_id, "owner": owner},
                update,
                projection=_BANK_FIELDS,
                return_document=ReturnDocument.AFTER,
            )
        return _bank_entry(stored) if stored is not None else None

    async def bank_delete(self, owner: str, entry_id: str) -> bool:
        """Delete one entry of the owner; False if there was none."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        action = f"delete from the memory of owner '{owner}'"
        async with self._collections(action) as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            gone = await bank.delete_one({"_id": entry_id, "owner": owner})
        return bool(gone.deleted_count)

    async def bank_forget(self, owner: str) -> int:
        """Delete every entry of the owner (a right-to-be-forgotten request); how many."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        async with self._collections(f"forget the memory of owner '{owner}'") as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            gone = await bank.delete_many({"owner": owner})
        return int(gone.deleted_count)

    async def _admit_model(self, bank: _Collection, model: str | None, dimensions: int) -> None:
        """Check a vector's model against the bank's record (one document, `_EMBEDDINGS`).

        Refuses another model or dimension (`EmbeddingsMismatchError`); records the first.
        """
        stored = await bank.find_one({"_id": _EMBEDDINGS})
        recorded = None
        if stored is not None:
            recorded = {"model": stored["model"], "dimensions": stored["dimensions"]}
        after = _bank.check_model(recorded, model, dimensions)
        if after != recorded:
            await bank.update_one({"_id": _EMBEDDINGS}, {"$set": after}, upsert=True)

    async def bank_set_vector(
        self, owner: str, entry_id: str, vector: list[float], *, model: str | None = None
    ) -> bool:
        """Keep an entry's embedding in its document (L4); False if the owner has no such entry.

        An array field; a vector of another model or dimension than the bank's is refused
        (`EmbeddingsMismatchError`).
        """
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        checked = _bank.unit(_bank.check_vector(vector))
        action = f"store an embedding for owner '{owner}'"
        async with self._collections(action) as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            if not await bank.find_one({"_id": entry_id, "owner": owner}, {"_id": 1}):
                return False
            await self._admit_model(bank, model, len(checked))
            done = await bank.update_one(
                {"_id": entry_id, "owner": owner}, {"$set": {"vector": checked}}
            )
            await self._vector_search().ensure(bank, len(checked))
        return bool(done.matched_count)

    def _vector_search(self) -> VectorSearch:
        """This store's knowledge of the bank's `$vectorSearch` index (`_bank_mongo`)."""
        known: VectorSearch | None = getattr(self, "_bank_vectors", None)
        if known is None:
            known = self._bank_vectors = VectorSearch()
        return known

    async def bank_nearest(
        self, owner: str, vector: list[float], *, limit: int = 100, model: str | None = None
    ) -> list[tuple[BankEntry, float]]:
        """The owner's `limit` entries most similar to `vector` (cosine above 0), best first.

        By `$vectorSearch`, filtered by owner, where the server has the index ready; else
        scored here over the owner's vectors (ids and vectors only are read). Whole entries are
        read for the ones returned. A query of another model or dimension is refused.
        """
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        query = _bank.check_vector(vector)
        action = f"search the embeddings of owner '{owner}'"
        async with self._collections(action) as (sessions, _, _):
            bank = await self._bank_collection(sessions)
            stored = await bank.find_one({"_id": _EMBEDDINGS})
            if stored is None:
                return []  # no vector kept yet
            recorded = {"model": stored["model"], "dimensions": stored["dimensions"]}
            _bank.check_model(recorded, model, len(query))
            if await self._vector_search().usable(bank):
                ranked = await _bank_mongo.knn(bank, owner, query, limit)
            else:
                cursor = bank.find(
                    {"owner": owner, "vector": {"$exists": True}}, {"_id": 1, "vector": 1}
                ).sort([("updated_at", -1), ("_id", -1)])
                pairs = [(stored["_id"], stored["vector"]) async for stored in cursor]
                ranked = _bank.nearest(query, pairs, limit)
            keys = [key for key, _ in ranked]
            found = bank.find({"owner": owner, "_id": {"$in": keys}}, _BANK_FIELDS)
            entries = {stored["id"]: _bank_entry(stored) async for stored in found}
        return [(entries[key], score) for key, score in ranked if key in entries]


_BANK_FIELDS = {"_id": 0, "search": 0, "vector": 0}
_EMBEDDINGS = "picoflow:embeddings"  # the bank's model record: no owner, so no search finds it
_IDLE_FIELDS = {"flow": 1, "updated_at": 1, "expires_at": 1}
_IDLE_KEY = [("run_status", 1), ("updated_at", 1), ("_id", 1)]
_BANK_SCAN = 500  # without a text index: at most this many matching entries are ranked


def _bank_entry(stored: Mapping[str, Any]) -> BankEntry:
    return {
        "id": stored["id"],
        "owner": stored["owner"],
        "text": stored["text"],
        "kind": stored["kind"],
        "created_at": stored["created_at"],
        "updated_at": stored["updated_at"],
        "source": stored.get("source"),
    }
