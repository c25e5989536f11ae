"""TravelFlow (demo/travel) against PicoFlow's (pico-demo-flows.md §3), through the real engine.

The first test walks the port point by point: registration, initial step, namespaces, models,
tool names and argument schemas, the turn structure of the nested searches (V2), message
ordering and the final session state of §3.7. The others are conversations on the offline
model, in travellers' own words.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from demo.travel.data import ACTIVITIES, DEPARTURE_FLIGHTS, HOTELS, RETURN_FLIGHTS
from demo.travel.flow import CLOSING_PROMPT, PICOFLOW_TODAY, TravelFlow
from demo.travel.offline import offline_provider, respond
from demo.travel.types import TravelPlan
from picoflow import FlowEngine
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel, text, tool_call

SCENARIOS = Path(__file__).resolve().parents[2] / "demo" / "travel" / "scenarios"
TRIP = "from London to Lisbon on 2025-06-10 for 3 nights, 2 adults"
REASONING = {"provider": "offline", "name": "travel", "params": {"reasoning_effort": "low"}}


CONFIG = {"today": PICOFLOW_TODAY}
BOOKED_PROMPT = (
    CLOSING_PROMPT.removesuffix(".") + ": Premium Lisbon Indulgence for London to Lisbon, "
    "Tue, June 10, 2025 to Fri, June 13, 2025, 2 travellers, $3,075 in total."
)
"""PicoFlow's closing prompt, and what was booked (issue 35 item 5)."""
"""These conversations were written against PicoFlow's day (issue 35: else today is today)."""


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[FlowEngine]:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "t.db")
    engine = FlowEngine([TravelFlow], store=store, providers={"offline": offline_provider})
    yield engine
    await engine.aclose()


async def talk(engine: FlowEngine, *lines: str) -> tuple[list[Any], dict[str, Any]]:
    results, session_id = [], None
    for line in lines:
        config = CONFIG if session_id is None else None
        result = await engine.run("TravelFlow", line, session_id=session_id, config=config)
        assert result.success, result.message
        results.append(result)
        session_id = result.session_id
    return results, await engine.get_session(session_id)


def states(doc: dict[str, Any]) -> dict[str, Any]:
    return {name: entry["state"] for name, entry in doc["steps"].items()}


def pattern(messages: list[dict[str, Any]]) -> list[str]:
    """Each message as type, author step and, for AI tool calls, the tools called."""
    out = []
    for message in messages:
        data = message["data"]
        calls = [c["name"] for c in data.get("tool_calls") or []]
        author = (data.get("id") or "").split("|")[0]
        out.append(f"{message['type'][0]} {author}{' ' + ','.join(calls) if calls else ''}")
    return out


async def test_v2_travel_flow_walks_picoflow_steps_tools_and_final_state() -> None:
    """§3.1-§3.7: a complete run has PicoFlow's sequence, namespaces, state keys and shapes."""
    engine = FlowEngine([TravelFlow], store=MemoryStore(), providers={"offline": offline_provider})
    results, doc = await talk(engine, "hi, I'd like to plan a trip", TRIP, "the premium one")
    assert [r.step for r in results] == ["PlannerStep", "SynthesizerStep", "EndStep"]
    assert results[-1].completed and doc["run_status"] == "completed"
    assert doc["sequence"] == [
        "PlannerStep", "FlightStep", "PlannerStep", "HotelStep", "PlannerStep", "ActivityStep",
        "PlannerStep", "SynthesizerStep", "EndStep",
    ]  # fmt: skip
    assert doc["sequence_levels"] == [1, 2, 1, 2, 1, 2, 1, 1, 1]
    assert list(doc["memory"]) == ["travelPlan", "EndStep"]
    assert pattern(doc["memory"]["travelPlan"]["messages"]) == [
        "s SynthesizerStep", "h PlannerStep", "a PlannerStep", "h PlannerStep",
        "a FlightStep search_flights,search_flights", "t FlightStep", "t FlightStep",
        "a FlightStep", "a HotelStep search_hotels", "t HotelStep", "a HotelStep",
        "a ActivityStep search_activities", "t ActivityStep", "a ActivityStep",
        "a PlannerStep submit_plan", "t PlannerStep",  # after the children's messages
        "a SynthesizerStep generate_packages", "t SynthesizerStep", "a SynthesizerStep",
        "h SynthesizerStep", "a SynthesizerStep choose_package", "t SynthesizerStep",
    ]  # fmt: skip
    travel = doc["memory"]["travelPlan"]["messages"]
    directs = [m["data"] for m in travel if m["data"].get("additional_kwargs", {}).get("direct")]
    assert [d["content"] for d in directs] == ["{}", "{}", "{}"]  # one per child
    end = doc["memory"]["EndStep"]["messages"]
    assert [m["type"] for m in end] == ["system", "human", "ai"]
    assert end[0]["data"]["content"] == BOOKED_PROMPT
    found = states(doc)
    assert found["PlannerStep"]["travelPlan"] == {
        "user_intent": "full_plan", "origin": "London", "destination": "Lisbon",
        "departure_date": "2025-06-10", "return_date": "2025-06-13", "duration_days": 3,
        "adults": 2, "travel_class": "ECONOMY", "budget": None,
    }  # fmt: skip
    assert list(found["FlightStep"]) == ["departureFlights", "_saveOn", "returnFlights"]
    assert found["FlightStep"]["departureFlights"] == DEPARTURE_FLIGHTS  # R1-R3, as PicoFlow
    assert found["FlightStep"]["returnFlights"] == RETURN_FLIGHTS
    assert found["HotelStep"]["hotels"] == HOTELS
    assert found["ActivityStep"]["activities"] == ACTIVITIES
    synth = found["SynthesizerStep"]
    assert list(synth) == [
        "packages", "_saveOn", "plan", "flights", "hotels", "activities", "chosenPackage",
    ]  # fmt: skip
    assert (synth["plan"], synth["flights"], synth["hotels"], synth["activities"]) == (
        None,
        [],
        [],
        [],
    )  # U3: the run() override read context keys nobody sets
    assert [p["name"] for p in synth["packages"]] == [
        "Budget Lisbon Saver", "Balanced Lisbon Getaway", "Premium Lisbon Indulgence",
    ]  # fmt: skip
    assert synth["chosenPackage"] == synth["packages"][2]
    assert found["EndStep"]["_prompt"] == BOOKED_PROMPT
    models = {name: entry["model"] for name, entry in doc["steps"].items()}
    for name in ("PlannerStep", "FlightStep", "SynthesizerStep"):
        assert {k: models[name][k] for k in REASONING} == REASONING  # PicoFlow's gpt-5 steps
    assert {models[n] for n in ("HotelStep", "ActivityStep", "EndStep")} == {None}


async def test_r1_travel_tools_have_picoflow_names_and_argument_schemas() -> None:
    model = ScriptedChatModel(policy=respond)
    engine = FlowEngine([TravelFlow.using(model)], store=MemoryStore())
    await talk(engine, TRIP)
    tools = {}
    for request in model.requests:
        for bound in request.tools:
            tools[request.metadata["picoflow_step"], bound["function"]["name"]] = bound
    assert sorted(tools) == [
        ("ActivityStep", "search_activities"), ("FlightStep", "search_flights"),
        ("HotelStep", "search_hotels"), ("PlannerStep", "submit_plan"),
        ("SynthesizerStep", "change_plan"), ("SynthesizerStep", "choose_package"),  # 35: way back
        ("SynthesizerStep", "generate_packages"),
    ]  # fmt: skip
    plan = tools["PlannerStep", "submit_plan"]["function"]["parameters"]
    assert plan["required"] == [
        "user_intent", "origin", "destination", "departure_date", "return_date", "duration_days",
    ]  # fmt: skip
    fields = plan["properties"]
    assert fields["user_intent"]["enum"] == [
        "full_plan", "flights_only", "hotels_only", "activities_only",
    ]  # fmt: skip
    assert (fields["departure_date"]["format"], fields["adults"]["default"]) == ("date", 1)
    assert fields["travel_class"]["default"] == "ECONOMY"
    assert fields["budget"]["anyOf"] == [{"type": "number"}, {"type": "null"}]
    flights = tools["FlightStep", "search_flights"]["function"]["parameters"]
    assert flights["required"] == ["origin", "destination", "date", "isReturn"]
    synth = tools["SynthesizerStep", "generate_packages"]["function"]["parameters"]
    package = synth["properties"]["packages"]["items"]
    assert package["required"] == ["name", "total_cost", "budget_comment"]
    assert package["properties"]["activities"]["type"] == "array"
    chosen = tools["SynthesizerStep", "choose_package"]["function"]["parameters"]
    assert chosen["required"] == ["chosenPackage"]


async def test_travel_any_destination_is_served_and_flights_only_runs_one_child(
    engine: FlowEngine,
) -> None:
    results, doc = await talk(
        engine, "Need flights only: NYC → Tokyo, leaving 7/4/2025, back 7/14/2025", "number 1"
    )
    assert results[0].message.startswith("Here are your packages for Tokyo (NYC to Tokyo, Fri,")
    assert "\n1. Budget Tokyo Saver: $700 in total\n   Flights: Pico Airways ($700)" in (
        results[0].message
    )
    found = states(doc)
    assert found["PlannerStep"]["travelPlan"]["user_intent"] == "flights_only"
    assert "hotels" not in found["HotelStep"] and "activities" not in found["ActivityStep"]
    assert doc["sequence"][:3] == ["PlannerStep", "FlightStep", "PlannerStep"]
    chosen = found["SynthesizerStep"]["chosenPackage"]
    assert (chosen["flight"]["id"], chosen["hotel"], chosen["total_cost"]) == ("R2+D2", None, 700)
    assert results[1].completed


async def test_travel_over_budget_offers_one_budget_package(engine: FlowEngine) -> None:
    results, doc = await talk(engine, "hotels only in Oslo from June 2 for 5 nights, budget 300")
    packages = states(doc)["SynthesizerStep"]["packages"]
    assert [(p["name"], p["total_cost"]) for p in packages] == [("Budget Oslo Saver", 400)]
    assert packages[0]["budget_comment"] == "100 over your budget of 300."
    shown = results[0].message
    assert "\n1. Budget Oslo Saver: $400 in total" in shown and "\n2. " not in shown  # one
    assert "\n   $100 over your budget of $300.\n" in shown


async def test_travel_planner_takes_the_trip_one_fact_at_a_time_with_corrections(
    engine: FlowEngine,
) -> None:
    """One traveller: a question first, then facts one by one, then a correction."""
    results, doc = await talk(
        engine,
        "what can you do?",
        "I wanna see Paris",
        "from Dublin",
        "actually make that Rome",
        "leaving the 5th of june, coming back the 9th",
    )
    assert results[0].message.startswith("I plan trips anywhere")
    assert results[1].message.endswith(
        "To plan it I still need where you are leaving from, the day you leave and the day "
        "you come back (or how many nights)."
    )
    assert results[3].message == (
        "Got it: a trip to Rome from Dublin. To plan it I still need the day you leave and the "
        "day you come back (or how many nights)."
    )
    plan = states(doc)["PlannerStep"]["travelPlan"]
    assert (plan["origin"], plan["destination"], plan["duration_days"]) == ("Dublin", "Rome", 4)
    assert (plan["departure_date"], plan["return_date"]) == ("2025-06-05", "2025-06-09")


@pytest.mark.parametrize(
    ("words", "fields"),
    [
        (
            "hey! me and my wife want to go from Boston to Rome, june 12 to june 19",
            {"origin": "Boston", "destination": "Rome", "adults": 2, "duration_days": 7},
        ),
        (
            "frm Madrid too Berlin on 12/20/2025 for 4 nigths, 3 adutls",
            {"origin": "Madrid", "departure_date": "2025-12-20", "adults": 3},
        ),
        (
            "Plan me a trip from London to Lisbon, May 9 for a week, two of us, business class, "
            "budget 3000",
            {"return_date": "2025-05-16", "travel_class": "BUSINESS", "budget": 3000},
        ),
        (
            "Activities only in Kyoto for 3 days starting Oct 2",
            {"user_intent": "activities_only", "origin": None, "return_date": "2025-10-05"},
        ),
    ],
)
async def test_travel_planner_reads_each_persons_own_words(
    engine: FlowEngine, words: str, fields: dict[str, Any]
) -> None:
    """Several facts in one message, typos, dates in other forms: one message is enough."""
    results, doc = await talk(engine, words)
    assert results[0].step == "SynthesizerStep"
    plan = states(doc)["PlannerStep"]["travelPlan"]
    assert {key: plan[key] for key in fields} == fields


async def test_travel_packages_are_chosen_by_description_after_a_question(
    engine: FlowEngine,
) -> None:
    results, doc = await talk(
        engine, TRIP, "what's the difference between them?", "the one at the Grand Pico Hotel"
    )
    assert results[1].step == "SynthesizerStep" and not results[1].completed
    assert results[1].message.startswith("Here is what each package includes:\n1. Budget")
    chosen = states(doc)["SynthesizerStep"]["chosenPackage"]
    assert chosen["name"] == "Balanced Lisbon Getaway" and results[2].completed
    assert results[2].message == (
        "Thank you for using our travel planning service! Your package is booked: Balanced "
        "Lisbon Getaway for London to Lisbon, Tue, June 10, 2025 to Fri, June 13, 2025, 2 "
        "travellers, $1,525 in total. Enjoy your trip!"
    )  # issue 35 item 5: the goodbye says what was booked


async def test_travel_children_are_traced_under_the_planner() -> None:
    model = ScriptedChatModel(policy=respond)
    engine = FlowEngine([TravelFlow.using(model)], store=MemoryStore())
    result = await engine.run("TravelFlow", TRIP, config=CONFIG)
    assert result.usage["model"]["calls"] == 6  # planner, three children, synthesiser twice
    parents = {
        r.metadata["picoflow_step"]: r.metadata.get("picoflow_parent_step") for r in model.requests
    }
    assert parents == {
        "PlannerStep": None,
        "FlightStep": "PlannerStep",
        "HotelStep": "PlannerStep",
        "ActivityStep": "PlannerStep",
        "SynthesizerStep": None,
    }


@pytest.mark.parametrize("path", sorted(SCENARIOS.glob("*.json")), ids=lambda p: p.name)
async def test_x1_travel_scenarios_replay_to_their_steps_tools_and_completed_flags(
    path: Path,
) -> None:
    """The scenario files (SPEC X1) hold what this port does: steps, tools, completed."""
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["flowName"] == "TravelFlow"
    engine = FlowEngine([TravelFlow], store=MemoryStore(), providers={"offline": offline_provider})
    session_id = None
    for turn in scenario["turns"]:
        tools, result = [], None
        config = scenario.get("config") if session_id is None else None
        async for event in engine.stream("TravelFlow", turn["input"], session_id, config):
            if event.kind == "tool_call":
                tools.append(event.data["name"])
            if event.kind == "done":
                result = event.result
        assert result is not None and result.success, turn["label"]
        session_id = result.session_id
        expect = turn.get("expect", {})
        assert result.completed == turn["completed"], turn["label"]
        assert expect.get("step", result.step) == result.step, turn["label"]
        assert expect.get("tools", tools) == tools, turn["label"]


async def test_r6_a_bad_plan_is_a_tool_result_the_planner_model_reads() -> None:
    """R1/R6: an unknown intent or an unreadable date is refused with what was wrong."""
    bad = {
        "user_intent": "weekend_only", "origin": "London", "destination": "Rome",
        "departure_date": "sometime in June", "return_date": "06/20/2025", "duration_days": 5,
    }  # fmt: skip
    model = ScriptedChatModel(
        script={"PlannerStep": [tool_call("submit_plan", bad), text("Which day do you leave?")]}
    )
    engine = FlowEngine([TravelFlow.using(model)], store=MemoryStore())
    result = await engine.run("TravelFlow", "Rome in June", config=CONFIG)
    assert (result.step, result.message) == ("PlannerStep", "Which day do you leave?")
    feedback = model.requests[1].messages[-1].content
    assert feedback.startswith(
        "Error: invalid arguments for tool 'submit_plan': 2 validation errors for TravelPlan\n"
        "user_intent\n  Input should be 'full_plan', 'flights_only', 'hotels_only' or "
        "'activities_only'"
    )
    assert "departure_date\n  Input should be a valid date" in feedback  # 06/20/2025 was fine
    assert feedback.endswith("Call it again with corrected arguments.")
    doc = await engine.get_session(result.session_id)
    assert "travelPlan" not in doc["steps"]["PlannerStep"]["state"]


def test_travel_plan_dates_take_iso_date_times_and_us_dates() -> None:
    sent = {
        "user_intent": "full_plan", "origin": None, "destination": "Rome",
        "departure_date": "2025-06-12T00:00:00", "return_date": "6/19/2025", "duration_days": 7,
    }  # fmt: skip
    plan = TravelPlan.model_validate(sent)
    assert plan.model_dump(mode="json") == {
        "user_intent": "full_plan", "origin": None, "destination": "Rome",
        "departure_date": "2025-06-12", "return_date": "2025-06-19", "duration_days": 7,
        "adults": 1, "travel_class": "ECONOMY", "budget": None,
    }  # fmt: skip


def test_travel_offline_provider_names_its_one_model() -> None:
    from picoflow import ModelSpec

    with pytest.raises(ValueError) as caught:
        offline_provider(ModelSpec("offline", "hotel"))
    assert str(caught.value) == (
        "The TravelFlow offline provider has one model, 'offline:travel'; got 'offline:hotel'."
    )
