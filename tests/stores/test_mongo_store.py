"""What MongoStore promises beyond the conformance suite (P1, P6): the handles it accepts, the
stored shape, indexes, key escaping and the size guard. Errors are in `test_mongo_errors.py`.

The suite itself runs against MongoStore through `conftest.STORE_FACTORIES` ("mongo" on a URI,
"mongo-motor" on a Motor database handle).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any

import pytest
from langchain_core.messages import AIMessage, message_to_dict
from mongo_server import MongoServer
from pymongo import AsyncMongoClient, MongoClient

from picoflow.stores import MongoStore as LazyMongoStore
from picoflow.stores import from_url
from picoflow.stores._limits import DocumentChecker
from picoflow.stores._mongo_docs import SessionEncoder
from picoflow.stores.base import SavedMessages
from picoflow.stores.mongo import MongoStore


def doc(session_id: str = "s-1", **fields: Any) -> dict[str, Any]:
    return {
        "id": session_id,
        "schema_version": 1,
        "revision": 0,
        "flow": "HotelFlow",
        "expires_at": "2099-01-03T03:04:05.123Z",  # future: past ones are swept by TTL
        "steps": {},
        "memory": {},
        **fields,
    }


def stored(
    mongo_server: MongoServer, mongo_database: str, session_id: str = "s-1"
) -> dict[str, Any]:
    found = mongo_server.collection(mongo_database, "sessions").find_one({"_id": session_id})
    assert found is not None
    return found


# --- construction --------------------------------------------------------------------------


def test_p6_mongo_store_is_built_outside_an_event_loop_and_masks_the_password() -> None:
    store = MongoStore("mongodb://bob:s3cret@db.example.com:27017/app?authSource=admin")

    assert repr(store) == (
        "MongoStore('mongodb://bob:***@db.example.com:27017/app?authSource=admin', database='app')"
    )
    assert LazyMongoStore is MongoStore


@pytest.mark.parametrize(
    ("args", "database"),
    [
        (("mongodb://localhost:27017",), "picoflow"),
        (("mongodb://localhost:27017/",), "picoflow"),
        (("mongodb://localhost:27017/bookings?w=majority",), "bookings"),
        (("mongodb://localhost:27017/bookings", "other"), "other"),
        (("mongodb+srv://cluster0.example.net/prod",), "prod"),
    ],
)
def test_p6_database_defaults_to_the_uri_then_picoflow(
    args: tuple[str, ...], database: str
) -> None:
    assert repr(MongoStore(*args)).endswith(f"database={database!r})")


def test_p6_from_url_uses_the_database_the_url_names() -> None:
    assert repr(from_url("mongodb://localhost:27017/bookings")) == (
        "MongoStore('mongodb://localhost:27017/bookings', database='bookings')"
    )


def test_p6_a_string_that_is_not_a_mongodb_uri_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        MongoStore("localhost:27017")

    assert str(caught.value) == (
        "MongoStore needs a MongoDB URI such as 'mongodb://localhost:27017', got 'localhost:27017'."
    )


def test_p6_a_synchronous_client_is_refused() -> None:
    with MongoClient("mongodb://127.0.0.1:9", connect=False) as client:
        with pytest.raises(TypeError) as caught:
            MongoStore(client)
        with pytest.raises(TypeError) as caught_db:
            MongoStore(client["app"])

    assert str(caught.value) == (
        "MongoStore needs PyMongo's async API, got a synchronous MongoClient, which would "
        "block the event loop. Pass pymongo.AsyncMongoClient(...), one of its databases, or "
        "the URI itself."
    )
    assert "got a synchronous Database" in str(caught_db.value)
    with pytest.raises(TypeError) as other:
        MongoStore(42)
    assert str(other.value) == (
        "MongoStore takes a MongoDB URI, a pymongo.AsyncMongoClient, an AsyncDatabase or a "
        "Motor database, got int."
    )


async def test_p6_a_database_handle_and_a_database_name_are_refused_together() -> None:
    client: AsyncMongoClient[Any] = AsyncMongoClient("mongodb://127.0.0.1:9", connect=False)
    with pytest.raises(ValueError) as caught:
        MongoStore(client["app"], "other")
    await client.close()

    assert str(caught.value) == (
        "MongoStore got a database handle for 'app' and database='other'; pass one or the other."
    )


async def test_p6_a_client_passed_in_stays_open_after_aclose(
    mongo_server: MongoServer, mongo_database: str
) -> None:
    client: AsyncMongoClient[Any] = AsyncMongoClient(mongo_server.uri)
    try:
        on_client = MongoStore(client, mongo_database)
        await on_client.create(doc())
        await on_client.aclose()
        on_database = MongoStore(client[mongo_database])
        assert await on_database.revision("s-1") == 0
        await on_database.aclose()

        assert await client[mongo_database]["sessions"].count_documents({}) == 1  # still usable
    finally:
        await client.close()


# --- the stored shape ---------------------------------------------------------------------


async def test_p1_stored_session_keeps_id_and_adds_a_bson_expiry_for_the_ttl_index(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    await mongo.create(doc(current_step="ExploreStep"))
    await mongo.save(doc(current_step="PresentStep", expires_at="2099-01-04T00:00:00+02:00"), 0)

    raw = stored(mongo_server, mongo_database)
    # W1: the revisions kept ([revision, batch token, saved_at]); the rows' TTL date (W5)
    assert [entry[0] for entry in raw.pop("_history")] == [0, 1]
    assert raw.pop("_rows_x") == datetime(2099, 1, 3, 22, 0)
    assert raw == {
        "_id": "s-1",
        **doc(current_step="PresentStep", expires_at="2099-01-04T00:00:00+02:00"),
        "revision": 1,
        "_expires_at": datetime(2099, 1, 3, 22, 0),  # UTC; this sync client reads naive dates
    }
    assert list(raw)[0] == "_id"
    assert await mongo.load("s-1") == {
        **doc(current_step="PresentStep", expires_at="2099-01-04T00:00:00+02:00"),
        "revision": 1,
    }


async def test_p1_without_expiry_there_is_no_ttl_field(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    await mongo.create(doc(expires_at=None))
    await mongo.create(doc("s-2", expires_at="not a date"))

    assert "_expires_at" not in stored(mongo_server, mongo_database)
    assert "_expires_at" not in stored(mongo_server, mongo_database, "s-2")
    assert await mongo.load("s-2") == doc("s-2", expires_at="not a date")


async def test_p6_indexes_are_created_once_and_idempotently(
    open_mongo_store: Callable[..., MongoStore], mongo_server: MongoServer, mongo_database: str
) -> None:
    for _ in range(2):  # a second store on the same mongo_database finds the indexes in place
        await open_mongo_store(mongo_server.uri, mongo_database).revision("s-1")

    sessions = mongo_server.collection(mongo_database, "sessions").index_information()
    archive = mongo_server.collection(mongo_database, "session_archive").index_information()
    assert sessions["_expires_at_1"]["expireAfterSeconds"] == 0
    assert archive["session_id_1_namespace_1_position_1"]["unique"] is True
    assert archive["session_id_1_namespace_1_position_1"]["key"] == [
        ("session_id", 1),
        ("namespace", 1),
        ("position", 1),
    ]


async def test_p6_collection_names_are_configurable(
    open_mongo_store: Callable[..., MongoStore], mongo_server: MongoServer, mongo_database: str
) -> None:
    store = open_mongo_store(mongo_server.uri, mongo_database, "chats", "chat_archive")
    await store.create(doc())
    await store.archive("s-1", "explore", [{"position": 1, "message": {"data": {"content": "x"}}}])

    assert mongo_server.collection(mongo_database, "chats").count_documents({}) == 1
    assert mongo_server.collection(mongo_database, "chat_archive").count_documents({}) == 1


async def test_m9_archive_entries_are_queryable_documents(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    message = message_to_dict(AIMessage("Hotel in LISBON"))
    await mongo.archive("s-1", "explore", [{"position": 3, "message": message}])

    raw = mongo_server.collection(mongo_database, "session_archive").find_one({}, {"_id": 0})
    assert raw == {
        "session_id": "s-1",
        "namespace": "explore",
        "position": 3,
        "message": message,
        "text": "hotel in lisbon",
    }


# --- keys MongoDB treats specially ----------------------------------------------------------

SPECIAL_STATE = {
    "$price": 120,
    "prices.max": {"per.night": 300, "$currency": "EUR"},
    "50%": "half",
    "%24already": "a literal percent sequence",
    "ref": {"$ref": "hotels", "$id": 7},
    "nul\x00key": True,
    "query": {"$gt": 3, "list": [{"a.b": 1}]},
    "plain": "kept as is",
}
ESCAPED_STATE = {
    "%24price": 120,
    "prices%2Emax": {"per%2Enight": 300, "%24currency": "EUR"},
    "50%25": "half",
    "%2524already": "a literal percent sequence",
    "ref": {"%24ref": "hotels", "%24id": 7},
    "nul%00key": True,
    "query": {"%24gt": 3, "list": [{"a%2Eb": 1}]},
    "plain": "kept as is",
}


async def test_p6_keys_with_dollars_dots_percents_and_nul_round_trip_unchanged(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    session = doc(
        steps={"ExploreStep": {"state": SPECIAL_STATE, "model": None}},
        context={"config": {"tenant.region": "eu"}},
        _note="a top-level key the P1 shape does not have",
    )
    await mongo.create(session)

    assert await mongo.load("s-1") == session
    raw = stored(mongo_server, mongo_database)
    assert raw["steps"]["ExploreStep"]["state"] == ESCAPED_STATE
    assert raw["context"] == {"config": {"tenant%2Eregion": "eu"}}
    assert raw["%5Fnote"] == "a top-level key the P1 shape does not have"
    assert raw["_escaped_keys"] is True


async def test_p6_documents_without_special_keys_are_stored_verbatim(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    await mongo.create(doc(steps={"ExploreStep": {"state": {"city": "Lisbon"}, "model": None}}))

    raw = stored(mongo_server, mongo_database)
    assert "_escaped_keys" not in raw
    found = mongo_server.collection(mongo_database, "sessions").find_one(
        {"steps.ExploreStep.state.city": "Lisbon"}, {"_id": 1}
    )
    assert found == {"_id": "s-1"}


async def test_m9_archived_tool_call_arguments_with_special_keys_round_trip(
    mongo: MongoStore,
) -> None:
    call = {"name": "filter", "args": {"$max": 300, "room.type": "double"}, "id": "call-1"}
    message = message_to_dict(AIMessage(content="", tool_calls=[call]))
    await mongo.archive("s-1", "explore", [{"position": 2, "message": message}])

    assert await mongo.search_archive("s-1", "explore", "double") == [
        {"position": 2, "message": message}
    ]


async def test_p2_messages_reused_across_saves_are_stored_as_saved(mongo: MongoStore) -> None:
    # MongoStore reuses the BSON of message objects it encoded before; a replaced or new
    # message, and one whose keys need escaping, must still be stored exactly.
    def message(text: str, **extra: Any) -> dict[str, Any]:
        return {"type": "human", "data": {"content": text, **extra}}

    system, first, second = message("prompt"), message("a"), message("b")
    await mongo.create(doc(memory={"ns": {"messages": SavedMessages([system, first, second])}}))
    replaced = SavedMessages([message("prompt 2"), first, message("c", **{"$flag": 1})])
    await mongo.save(doc(memory={"ns": {"messages": replaced}}), 0)
    grown = SavedMessages([*replaced, message("d")])
    await mongo.save(doc(memory={"ns": {"messages": grown}}), 1)
    shrunk = SavedMessages([message("prompt 3"), first])
    await mongo.save(doc(memory={"ns": {"messages": shrunk}}), 2)

    assert await mongo.load("s-1") == doc(memory={"ns": {"messages": shrunk}}, revision=3)
    await mongo.save(doc(memory={"ns": {"messages": grown}}), 3)
    assert await mongo.load("s-1") == doc(memory={"ns": {"messages": grown}}, revision=4)


async def test_p2_memory_of_an_unexpected_shape_is_stored_as_saved(mongo: MongoStore) -> None:
    memory = {"ns": {"messages": ["a plain string", {"type": "ai", "data": {}}, None]}}
    await mongo.create(doc(memory=memory))
    await mongo.save(doc(memory={"other": "not a namespace record"}), 0)

    assert await mongo.load("s-1") == doc(memory={"other": "not a namespace record"}, revision=1)
    await mongo.save(doc(memory=memory), 1)
    assert await mongo.load("s-1") == doc(memory=memory, revision=2)


def test_p2_a_session_encoded_after_eviction_is_encoded_the_same() -> None:
    message = {"type": "human", "data": {"content": "hi"}}
    first, second = (
        doc(sid, memory={"ns": {"messages": SavedMessages([message])}}) for sid in ("a", "b")
    )
    encoder = SessionEncoder(capacity=1)

    before = encoder.record(first, "a", 1).raw
    encoder.record(second, "b", 1)  # remembering "b" forgets "a"

    assert encoder.record(first, "a", 1).raw == before == SessionEncoder().record(first, "a", 1).raw


# --- values MongoDB cannot hold, and the size guard ------------------------------------------


class Color(StrEnum):
    RED = "red"


@pytest.mark.parametrize(("value", "stored_as"), [((1, 2), [1, 2]), (Color.RED, "red")])
async def test_s5_values_json_would_change_are_stored_as_json_keeps_them(
    mongo: MongoStore, value: Any, stored_as: Any
) -> None:
    # The same normalisation the other stores apply, because they keep JSON text.
    await mongo.create(doc(context={"value": value}))

    loaded = await mongo.load("s-1")
    assert loaded is not None
    assert loaded["context"] == {"value": stored_as}


def messages(count: int, size: int) -> list[dict[str, Any]]:
    return [{"type": "human", "data": {"content": "x" * size}} for _ in range(count)]


def random_json(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 4 or roll < 0.3:
        return rng.choice(
            [
                1,
                2**40,
                -(2**31) - 1,
                2**31,
                1.5,
                "héllo 東京",
                "",
                None,
                True,
                "x" * rng.randint(0, 300),
            ]
        )
    if roll < 0.65:
        keys = ["a", "b.c", "$d", "e%", "f\x00g", "日本", "_u"]
        return {
            rng.choice(keys) + str(i): random_json(rng, depth + 1) for i in range(rng.randint(0, 5))
        }
    return [random_json(rng, depth + 1) for _ in range(rng.randint(0, 12))]


def test_h7_the_shared_size_is_never_below_what_mongodb_holds() -> None:
    """H7: the size every store checks bounds the BSON MongoStore sends (escaped keys and
    internal fields included), so no document that passed is refused by MongoDB."""
    rng = random.Random(11)
    for index in range(300):
        body = random_json(rng)
        session = doc(
            f"s-{index}",
            context={"value": body},
            _note=body,
            expires_at=rng.choice([None, "2099-01-01T00:00:00Z"]),
        )
        record = SessionEncoder().record(session, f"s-{index}", 1)
        measured = DocumentChecker().check(session, f"s-{index}")
        assert 0 <= measured - len(record.raw) <= 60, (session, measured, len(record.raw))


async def test_p6_a_session_just_under_the_limit_is_stored(mongo: MongoStore) -> None:
    memory = {"explore": {"messages": messages(14, 1_000_000), "summary": None}}
    await mongo.create(doc(memory=memory))

    assert await mongo.revision("s-1") == 0
