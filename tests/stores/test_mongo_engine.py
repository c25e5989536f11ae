"""FlowEngine on MongoStore (P3-P6): failed turns leave nothing behind, expiry, several app
processes on one session, and a HotelFlow conversation that resumes in a new engine.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from mongo_server import MongoServer, free_port
from support.failed_turns import apart_from_error
from support.flows import engine_for, transcript, two_step_flow
from two_writers import check_two_processes_never_lose_an_update

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step, tool
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore
from picoflow.testing import ScriptedChatModel, tool_call


@pytest.fixture
def mongo_factory(
    open_mongo_store: Callable[..., MongoStore], mongo_server: MongoServer, mongo_database: str
) -> Callable[[], MongoStore]:
    """Stores on one fresh database, as several app processes (or restarts) would open them."""
    return lambda: open_mongo_store(mongo_server.uri, mongo_database)


# --- P3: a failing store fails the turn, cleanly ----------------------------------------------


@pytest.mark.drops_connections
async def test_p3_a_turn_against_a_server_that_is_down_fails_with_store_error() -> None:
    port = free_port()
    model = ScriptedChatModel(script=["Hello!"])
    engine = engine_for(
        two_step_flow(model),
        store=MongoStore(f"mongodb://127.0.0.1:{port}", server_selection_timeout=0.2),
    )

    result = await engine.run("HotelFlow", "Hi")
    await engine.aclose()

    assert (result.success, result.completed, result.error) == (False, False, "StoreError")
    assert re.fullmatch(
        r"MongoStore could not create session '[\w-]+': MongoDB at "
        rf"127\.0\.0\.1:{port} did not answer within 0\.2 s: \[Errno 111\] Connect call failed "
        rf"\('127\.0\.0\.1', {port}\)\. Check that the server is running and the URI is right\.",
        result.message,
    )


@pytest.mark.drops_connections
@pytest.mark.skipif("os.environ.get('MONGO_URI')", reason="needs the local SecantusDB")
async def test_p3_a_save_cut_off_by_the_network_fails_the_turn_and_writes_nothing(
    mongo_factory: Callable[[], MongoStore], mongo_server: MongoServer
) -> None:
    model = ScriptedChatModel(script=["Where to?", "Lisbon, noted.", "Lisbon, noted."])
    engine = engine_for(two_step_flow(model), store=mongo_factory())
    first = await engine.run("HotelFlow", "Hi")
    before = await engine.get_session(first.session_id)

    mongo_server.fail_next("update", closeConnection=True)
    failed = await engine.run("HotelFlow", "Lisbon", first.session_id)

    assert (failed.success, failed.error, failed.session_id) == (
        False,
        "StoreError",
        first.session_id,
    )
    assert failed.message.startswith(
        f"MongoStore could not save session '{first.session_id}': MongoDB at "
    )
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # U5: the error alone is written
    retried = await engine.run("HotelFlow", "Lisbon", first.session_id)
    assert (retried.success, retried.message) == (True, "Lisbon, noted.")
    doc = await engine.get_session(first.session_id)
    assert doc is not None
    assert doc["revision"] == 2  # the first turn, the failed turn's error (U5), the retry
    assert transcript(doc, "ExploreStep") == [
        ("human", "Hi"),
        ("ai", "Where to?"),
        ("human", "Lisbon"),
        ("ai", "Lisbon, noted."),
    ]


# --- P5: expiry ---------------------------------------------------------------------------


async def test_p5_every_save_sets_the_ttl_date_and_an_expired_session_starts_anew(
    mongo_factory: Callable[[], MongoStore], mongo_server: MongoServer, mongo_database: str
) -> None:
    model = ScriptedChatModel(script=["Hello!", "Hello again!", "Hello!", "A new start."])
    store = mongo_factory()
    flow = two_step_flow(model)
    engine = FlowEngine(flows=[flow], store=store, session_ttl=timedelta(hours=1))
    first = await engine.run("HotelFlow", "Hi")
    second = await engine.run("HotelFlow", "Hi again", first.session_id)
    doc = await engine.get_session(first.session_id)
    assert doc is not None and second.session_id == first.session_id

    raw = mongo_server.collection(mongo_database, "sessions").find_one({"_id": first.session_id})
    assert raw is not None
    expires = datetime.fromisoformat(doc["expires_at"]).replace(tzinfo=None)
    assert raw["_expires_at"] == expires
    assert raw["expires_at"] == doc["expires_at"]

    # A TTL of a microsecond has passed by the next turn, whatever MongoDB's monitor does.
    short = FlowEngine(flows=[flow], store=mongo_factory(), session_ttl=1e-6)
    expired = await short.run("HotelFlow", "Hi")
    renewed = await short.run("HotelFlow", "Hi", expired.session_id)

    assert renewed.success and renewed.session_id != expired.session_id
    assert renewed.message == "A new start."


# --- keys MongoDB treats specially, through the engine ----------------------------------------


class PreferencesStep(Step):
    @tool
    def remember(self, preferences: dict[str, Any]) -> str:
        """Record the user's preferences exactly as stated."""
        self.save_state({"preferences": preferences})
        return "noted"


def preferences_flow(model: ScriptedChatModel) -> type[Flow]:
    class PreferencesFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [PreferencesStep(self)]

    return PreferencesFlow


async def test_s1_state_keys_with_dollars_and_dots_round_trip_through_a_turn(
    mongo_factory: Callable[[], MongoStore],
) -> None:
    preferences = {"$max": 300, "room.type": "double", "nested": {"$in": ["a.b"]}}

    async def run_on(store: Store) -> dict[str, Any]:
        model = ScriptedChatModel(script=[tool_call("remember", preferences=preferences), "Noted."])
        engine = engine_for(preferences_flow(model), store=store)
        result = await engine.run("PreferencesFlow", "Budget $300, a double room")
        assert result.success, result.message
        doc = await engine.get_session(result.session_id)
        assert doc is not None
        return doc

    on_mongo = await run_on(mongo_factory())
    on_memory = await run_on(MemoryStore())

    assert on_mongo["steps"]["PreferencesStep"]["state"]["preferences"] == preferences
    assert normalized(on_mongo) == normalized(on_memory)


@pytest.mark.parametrize("namespace", ["hotel.explore", "$explore"])
def test_m1_namespaces_mongodb_would_misread_are_refused_before_any_store(namespace: str) -> None:
    class NotesStep(Step):
        pass

    class NotesFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [NotesStep(self).use_memory(namespace)]

    with pytest.raises(FlowDefinitionError) as caught:
        FlowEngine(flows=[NotesFlow], store=MemoryStore())

    assert str(caught.value) == (
        f"NotesFlow: Invalid memory namespace {namespace!r}: a namespace starts with a letter, "
        "then letters, digits, '_' or '-', at most 128 characters (e.g. 'hotel-explore')."
    )


# --- P4: two app processes, one session ------------------------------------------------------


async def test_p4_two_processes_on_one_session_never_lose_an_update(
    mongo_factory: Callable[[], MongoStore], mongo_server: MongoServer, mongo_database: str
) -> None:
    await check_two_processes_never_lose_an_update(
        mongo_factory(), mongo_server.uri, mongo_database
    )


# --- a HotelFlow conversation, resumed by a new engine ----------------------------------------

TODAY = "2026-05-15"
BEFORE_RESTART = [
    "",
    "Hi! I need a hotel in Portland.",
    "July 1 to July 6",
    "two beds, under $300 a night, with wifi and parking",
    "search now",
]
AFTER_RESTART = [
    "compare 1 and 3 on price",
    "same hotels on amenities",
    "Let's book the Columbia Slough Lodge",
]


async def hotel_conversation(make_store: Callable[[], Store]) -> dict[str, Any]:
    """Play the conversation, restarting the engine (and its store) half way."""
    from demo.hotel.flow import EXPLORE_MEMORY, PROVIDERS, HotelFlow

    flow = HotelFlow.using("offline:hotel")
    session_id: str | None = None
    replies = []
    for texts in (BEFORE_RESTART, AFTER_RESTART):
        engine = FlowEngine([flow], store=make_store(), providers=PROVIDERS)
        for text in texts:
            config = {"today": TODAY} if session_id is None else None
            result = await engine.run("HotelFlow", text, session_id, config)
            assert result.success, result.message
            session_id = result.session_id
            replies.append((result.step, result.completed, result.message))
        assert session_id is not None
        doc = await engine.get_session(session_id)
        archive = await engine.store.search_archive(session_id, EXPLORE_MEMORY, "", page_size=100)
        await engine.aclose()
    assert doc is not None
    return normalized({"id": session_id, "doc": doc, "replies": replies, "archive": archive})


async def test_p1_a_hotel_conversation_resumed_on_mongo_equals_the_one_on_sqlite(
    mongo_factory: Callable[[], MongoStore], tmp_path: Path
) -> None:
    pytest.importorskip("demo.hotel.flow", reason="the HotelFlow demo is not in this tree")

    on_mongo = await hotel_conversation(mongo_factory)
    on_sqlite = await hotel_conversation(lambda: SQLiteStore(tmp_path / "sessions.db"))

    assert on_mongo == on_sqlite
    assert on_mongo["replies"][-1][:2] == ["EndStep", True]
    assert len(on_mongo["archive"]) > 0  # compaction archived the oldest explore messages
    doc = on_mongo["doc"]
    assert doc["sequence"] == [
        "ExploreStep",
        "PresentStep",
        "CompareStep",
        "EndStep",  # a choice in the comparison books there
    ]
    assert doc["steps"]["PresentStep"]["state"]["booking"]["hotel"] == "Columbia Slough Lodge"


def normalized(doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` without what differs between two runs: its id, clocks, random suffixes."""
    text = json.dumps({key: value for key, value in doc.items() if key != "id"})
    text = text.replace(doc["id"], "<session>")
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?", "<time>", text)
    text = re.sub(r"\|<time>\|\d+", "|<time>|<n>", text)
    # confirmation numbers are unique per booking: derived from the session (issue 19)
    text = re.sub(r"HF-[0-9A-Z]+", "HF-<confirmation>", text)
    result: dict[str, Any] = json.loads(text)
    return result
