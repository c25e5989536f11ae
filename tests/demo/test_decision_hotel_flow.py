"""DecisionHotelFlow end to end on its offline models (D5, research §3).

The registration (steps, namespaces, tools, models, decision options), the turn shapes §3.4
names, the final session after a booking, each tool's validation message, the date override
and its invalid value, idle expiry, and that nothing commits on a withdrawn or ambiguous word.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import pytest
from decision_hotel_corpus import (
    ALL_AT_ONCE,
    STATES,
    DecisionHotelReplayer,
    chat,
    engine_on,
    state_of,
)
from support.corpus_kit import Case

from demo.decision_hotel.flow import (
    DECISION_RETRIES,
    DECISION_TIMEOUT,
    OFFLINE_DECISIONS,
    OFFLINE_MODEL,
    DecisionHotelFlow,
)
from demo.decision_hotel.offline import decision_provider, offline_provider
from demo.decision_hotel.today import INVALID_ENV
from picoflow import DecisionStep, FlowEngine, LogicStep, ModelSpec
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

STEPS = [
    ("RouterStep", "intake"), ("DateRangeStep", "intake"), ("BudgetStep", "intake"),
    ("RoomTypeStep", "intake"), ("AmenityStep", "intake"), ("DistanceStep", "intake"),
    ("CriteriaReadinessJudgeStep", "intake"), ("SearchHotelsStep", "SearchHotelsStep"),
    ("PresentStep", "present"), ("PresentationJudgeStep", "present"), ("EndStep", "end"),
]  # fmt: skip


def test_d5_steps_namespaces_and_kinds_are_picoflows() -> None:
    flow = DecisionHotelFlow.in_process()()
    assert [(s.name, s.namespace) for s in flow.steps.values()] == STEPS
    decisions = [n for n, s in flow.steps.items() if isinstance(s, DecisionStep)]
    assert decisions == ["RouterStep", "CriteriaReadinessJudgeStep", "PresentationJudgeStep"]
    assert isinstance(flow.steps["SearchHotelsStep"], LogicStep)
    offered = {
        "DateRangeStep": ["capture_date_range", "reroute_request"],
        "BudgetStep": ["capture_budget", "reroute_request"],
        "RoomTypeStep": ["capture_room_type", "reroute_request"],
        "AmenityStep": ["capture_amenities", "reroute_request"],
        "DistanceStep": ["capture_distance", "reroute_request"],
        "PresentStep": ["chosen_hotel", "revise_search", "terminate_session"],
    }
    every = {tool for tools in offered.values() for tool in tools}
    for step, tools in offered.items():
        assert {t for t in every if flow.get_tool(t, step) is not None} == set(tools), step
    reroute = flow.require_tool("reroute_request", "BudgetStep")
    assert (
        reroute.description
        == "Return a request that belongs to another hotel criterion to RouterStep."
    )


def test_d5_models_and_decision_options() -> None:
    flow = DecisionHotelFlow()
    assert OFFLINE_MODEL == ModelSpec("offline", "decision_hotel", retry_attempts=1, timeout=60)
    assert flow.config_model() == OFFLINE_MODEL
    options = flow.config_decision()
    assert (options.model, options.timeout, options.max_retries) == (OFFLINE_DECISIONS, 15, 2)
    assert (DECISION_TIMEOUT, DECISION_RETRIES) == (15.0, 2)
    real = DecisionHotelFlow.using("openai:gpt-4o", decide="openai:gpt-4o-mini")
    assert (
        real.name == "DecisionHotelFlow" and real().config_decision().model == "openai:gpt-4o-mini"
    )
    with pytest.raises(ValueError) as raised:
        offline_provider(ModelSpec("offline", "hotel"))
    assert str(raised.value) == (
        "The DecisionHotelFlow offline provider has two models, 'offline:decision_hotel' and "
        "'offline:decision_hotel-decide'; got 'offline:hotel'."
    )


async def test_d2_the_decisions_run_on_the_model_the_flow_names_with_no_wiring() -> None:
    # No decision provider registered: the engine decides through config_decision()'s model,
    # built by the flow's own "offline" provider; decision_provider() registers the same.
    for providers in (None, [decision_provider()]):
        engine = FlowEngine(
            [DecisionHotelFlow.in_process()], store=MemoryStore(), decision_providers=providers
        )
        result = (await chat(engine, "hello"))[0].result
        assert result is not None and result.step == "DateRangeStep"
        assert result.decision_usage["calls"] == 1


async def test_d5_a_capture_the_router_and_the_next_question_are_one_turn() -> None:
    engine = engine_on(MemoryStore())
    first, second = await chat(engine, "I'd like to book a hotel in Portland", "dec 18 to 21")
    assert first.result is not None and second.result is not None
    assert (first.result.step, first.calls) == ("DateRangeStep", [])
    assert first.reply == "What are your check-in and checkout dates?"
    assert second.calls == [("capture_date_range", {"start": "2026-12-18", "end": "2026-12-21"})]
    assert second.result.step == "BudgetStep" and second.reply.startswith("What nightly budget")
    doc = await engine.get_session(second.result.session_id)
    assert state_of(doc, "DateRangeStep") == {
        "answered": True, "start": "2026-12-18", "end": "2026-12-21",
        "_saveOn": state_of(doc, "DateRangeStep")["_saveOn"],
    }  # fmt: skip
    assert "request" not in state_of(doc, "RouterStep")  # D3: a decision saves only its own
    assert state_of(doc, "RouterStep")["lastRoute"] == "budget"


async def test_d5_a_cross_step_correction_goes_router_owner_router_collector_in_one_turn() -> None:
    engine = engine_on(MemoryStore())
    turns = await chat(
        engine,
        "hi",
        "dec 18 to 21",
        "under 200",
        "actually check in on the 19th instead",
    )
    last = turns[-1]
    assert last.result is not None and last.result.step == "RoomTypeStep"
    assert [name for name, _ in last.calls] == ["reroute_request", "capture_date_range"]
    assert last.calls[1][1] == {"start": "2026-12-19", "end": "2026-12-21"}  # checkout kept
    assert last.reply.startswith("Which room type would you like")


async def test_d5_a_booking_leaves_the_final_session_of_the_doc() -> None:
    engine = engine_on(MemoryStore())
    turns = await chat(engine, ALL_AT_ONCE, "search", "book number 2")
    assert turns[0].reply.startswith("Current Portland hotel criteria:")
    assert turns[1].result is not None and turns[1].result.step == "PresentStep"
    done = turns[2].result
    assert done is not None and done.completed and done.step == "PresentStep"
    doc = await engine.get_session(done.session_id)
    assert doc is not None and doc["run_status"] == "completed"
    present = state_of(doc, "PresentStep")
    assert present["selectedHotel"] == present["hotelFound"][1]
    number = present["confirmationNumber"]
    assert 100000 <= number <= 999999
    assert done.message == (
        f"{present['selectedHotel']['hotelName']} is booked with confirmation #{number}. "
        "Thank you for choosing Hilton."
    )
    assert state_of(doc, "CriteriaReadinessJudgeStep")["accepted"] is True
    assert state_of(doc, "PresentationJudgeStep")["accepted"] is True
    assert present["criteriaReviewAccepted"] is True and present["draft"].startswith("I found")
    assert doc["decision_usage"]["calls"] >= 9 and doc["usage"]["model"]["total_tokens"] > 0
    assert "CompareStep" not in doc["steps"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (tool_call("capture_date_range", start="2026-02-30", end="2026-03-02"),
         "Use valid calendar dates for both check-in and checkout."),
        (tool_call("capture_date_range", start="12/18/2026", end="2026-12-21"),
         "Use valid calendar dates for both check-in and checkout."),
        (tool_call("capture_date_range", start="2026-12-07", end="2026-12-09"),
         "Check-in must be after the current date."),
        (tool_call("capture_date_range", start="2026-12-18", end="2026-12-18"),
         "Checkout must be after check-in."),
    ],
)  # fmt: skip
async def test_d5_each_date_refusal_stays_with_picoflows_message(call: Any, message: str) -> None:
    model = ScriptedChatModel(script=["What are your dates?", call, "Please try again."])
    engine = FlowEngine(
        [DecisionHotelFlow.using(model, search=DecisionHotelFlow.in_process().search_tool)],
        store=MemoryStore(),
        decision_providers=[decision_provider()],
        providers={"offline": offline_provider},
    )
    turns = await chat(engine, "hello", "these dates")
    assert turns[1].result is not None and turns[1].result.step == "DateRangeStep"
    assert model.requests[-1].messages[-1].content == message  # the tool result the model reads
    doc = await engine.get_session(turns[1].result.session_id)
    assert state_of(doc, "DateRangeStep") == {}


@pytest.mark.parametrize(
    ("lines", "call", "message"),
    [
        (["dec 18 to 21"], tool_call("capture_budget", min=-5, max=100),
         "Budget values cannot be negative."),
        (["dec 18 to 21"], tool_call("capture_budget", min=300, max=200),
         "The minimum nightly budget cannot exceed the maximum."),
        ([ALL_AT_ONCE.replace("distance doesn't matter", "")],
         tool_call("capture_distance", airport=-1, cityCenter=None),
         "Distance limits cannot be negative."),
    ],
)  # fmt: skip
async def test_d5_budget_and_distance_refusals(lines: list[str], call: Any, message: str) -> None:
    store = MemoryStore()
    reached = (await chat(engine_on(store), *lines))[-1].result
    assert reached is not None
    doc = await store.load(reached.session_id)
    assert doc is not None
    model = ScriptedChatModel(script=[call, "Let's try that again."])
    engine = FlowEngine(
        [DecisionHotelFlow.using(model, search=DecisionHotelFlow.in_process().search_tool)],
        store=store,
        decision_providers=[decision_provider()],
    )
    result = await engine.run("DecisionHotelFlow", "this", session_id=reached.session_id)
    assert result.step == doc["current_step"] and result.message == "Let's try that again."
    assert model.requests[-1].messages[-1].content == message
    after = await engine.get_session(reached.session_id)
    step = doc["current_step"]
    assert _values(state_of(after, step)) == _values(state_of(doc, step))


class IdleHotelFlow(DecisionHotelFlow):
    name = "DecisionHotelFlow"
    search_tool = DecisionHotelFlow.in_process().search_tool
    idle_limit: ClassVar[timedelta | None] = timedelta(minutes=30)


async def test_d5_a_session_idle_past_the_limit_starts_afresh_and_by_default_never() -> None:
    for flow, fresh in ((IdleHotelFlow, True), (DecisionHotelFlow.in_process(), False)):
        store = MemoryStore()
        engine = FlowEngine([flow], store=store, decision_providers=[decision_provider()])
        first = (await chat(engine, "hello"))[0].result
        assert first is not None
        doc = await store.load(first.session_id)
        assert doc is not None
        aged = {**doc, "updated_at": (datetime.now(UTC) - timedelta(hours=2)).isoformat()}
        store = MemoryStore()
        await store.create(aged)
        engine = FlowEngine([flow], store=store, decision_providers=[decision_provider()])
        again = await engine.run("DecisionHotelFlow", "dec 18 to 21", session_id=first.session_id)
        assert again.success and (again.session_id != first.session_id) is fresh


async def test_d5_the_env_date_replaces_now_and_a_bad_one_fails_the_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOTEL_FLOW_CURRENT_DATE", "2027-03-01")
    engine = engine_on(MemoryStore())
    turns = await chat(engine, "hi", "feb 27 to mar 3", config={})
    assert turns[1].reply.endswith(
        "Check-in must be after the current date. What are your check-in and checkout dates?"
    )
    turns = await chat(engine, "hi", "feb 27 to mar 3")  # config.today wins: 2026-12-07
    assert turns[1].calls[0] == ("capture_date_range", {"start": "2027-02-27", "end": "2027-03-03"})
    monkeypatch.setenv("HOTEL_FLOW_CURRENT_DATE", "next tuesday")
    failed = (await chat(engine, "hi", config={}))[0].result
    assert failed is not None and not failed.success
    assert INVALID_ENV == "HOTEL_FLOW_CURRENT_DATE must be a valid date."
    assert INVALID_ENV in failed.message


class GuessReplayer(DecisionHotelReplayer):
    """The corpus states, and one at the room type, each reached once for every case."""

    states = {**STATES, "room": [*STATES["budget"], "150"]}


GUESSES = [
    ("dates", "dec 18 to 21... hmm hold on, let me check", "DateRangeStep"),
    ("dates", "dec 18", "DateRangeStep"),
    ("budget", "not sure yet", "BudgetStep"),
    ("budget", "whatever you think is fair", "BudgetStep"),
    ("room", "a double", "RoomTypeStep"),
    ("distance", "near the airport", "DistanceStep"),
    ("ready", "find me something", "RouterStep"),
    ("results", "book the 2nd. hmm no actually hold on", "PresentStep"),
    ("results", "1 or 2?", "PresentStep"),
    ("results", "does the first one have a gym?", "PresentStep"),
    ("results", "number 45", "PresentStep"),
]


async def test_d5_nothing_commits_on_a_guess() -> None:
    """Withdrawn, one-ended, vague, ambiguous and questioning words save and book nothing."""
    replayer = GuessReplayer()
    for number, (state, said, step) in enumerate(GUESSES, 1):
        outcome = await replayer.run(Case(state, "guess", said, f"none & at {step}", number))
        assert outcome.ok and not outcome.acted, (said, outcome.detail)
    assert not replayer.saved_on_a_miss


def _values(state: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in state.items() if not key.startswith("_")}
