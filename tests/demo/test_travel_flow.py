"""TravelFlow (demo/travel): whole conversations through the real engine and the offline model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from demo.travel.flow import TravelFlow
from demo.travel.offline import offline_provider, respond
from picoflow import FlowEngine
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

TRIP = "from London to Lisbon on 2027-05-01 for 3 nights, 2 adults"


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[FlowEngine]:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "t.db")
    engine = FlowEngine([TravelFlow], store=store, providers={"offline": offline_provider})
    yield engine
    await engine.aclose()


async def talk(engine: FlowEngine, *lines: str) -> tuple[list[Any], dict[str, Any]]:
    results, session_id = [], None
    for line in lines:
        result = await engine.run("TravelFlow", line, session_id=session_id)
        assert result.success, result.message
        results.append(result)
        session_id = result.session_id
    return results, await engine.get_session(session_id)


def states(doc: dict[str, Any]) -> dict[str, Any]:
    return {name: entry["state"] for name, entry in doc["steps"].items()}


async def test_travel_full_plan_runs_three_nested_searches_and_books_a_package(
    engine: FlowEngine,
) -> None:
    results, doc = await talk(engine, TRIP, "package 2")
    offer, booked = results
    assert offer.step == "SynthesizerStep" and offer.message == (
        "Here are your options:\n"
        "1. flight TP 1351, 3 nights at Alfama Rooms, Tram 28 tour — 713 EUR\n"
        "2. flight BA 500, 3 nights at Alfama Rooms, Tram 28 tour — 825 EUR\n"
        "3. flight TP 1351, 3 nights at Chiado Loft, Tram 28 tour — 878 EUR"
    )
    # the planner, one call per child (its search tool ends the run with direct), and the
    # synthesizer twice (generate_packages, then the presentation): one turn
    assert offer.usage["model"]["calls"] == 6
    assert (booked.completed, booked.message) == (
        True,
        "Booked: flight BA 500, 3 nights at Alfama Rooms, Tram 28 tour, 825 EUR in total. "
        "Bon voyage!",
    )
    found = states(doc)
    assert [f["flight"] for f in found["FlightStep"]["flights"]] == ["TP 1351", "BA 500"]
    assert len(found["HotelStep"]["hotels"]) == 3 and len(found["ActivityStep"]["activities"]) == 2
    assert found["SynthesizerStep"]["chosen"]["total"] == 825
    assert doc["sequence"] == ["PlannerStep", "SynthesizerStep"]  # nested runs never move
    assert list(doc["memory"]) == ["travelPlan"]
    authors = [m["data"]["id"].split("|")[0] for m in doc["memory"]["travelPlan"]["messages"]]
    # the children ran one after another in the shared namespace, inside submit_plan
    assert authors[2:12] == [
        "FlightStep",
        "FlightStep",
        "FlightStep",
        "HotelStep",
        "HotelStep",
        "HotelStep",
        "ActivityStep",
        "ActivityStep",
        "ActivityStep",
        "PlannerStep",
    ]


async def test_travel_flights_only_runs_one_child(engine: FlowEngine) -> None:
    results, doc = await talk(
        engine, "Only flights please, from London to Rome on 2027-06-10 for 2 nights", "option 1"
    )
    assert results[0].message == (
        "Here are your options:\n1. flight FR 8342 — 95 EUR\n2. flight AZ 201 — 210 EUR"
    )
    found = states(doc)
    assert "hotels" not in found["HotelStep"] and "activities" not in found["ActivityStep"]
    assert results[1].completed


async def test_travel_refuses_unknown_destinations_and_packages(engine: FlowEngine) -> None:
    results, doc = await talk(
        engine,
        "I want a holiday",
        "from London to Paris on 2027-05-01 for 3 nights",
        TRIP + ", budget of 800",
        "package 3",
        "package 1",
    )
    assert results[0].step == "PlannerStep"
    assert results[1].message == "Sorry: We have no offers for Paris; we cover Lisbon, Rome."
    assert results[2].message == (
        "Here are your options:\n"
        "1. flight TP 1351, 3 nights at Alfama Rooms, Tram 28 tour — 713 EUR"
    )
    assert results[3].message == "Sorry: There is no package 3; choose 1 to 1."
    assert results[4].completed and doc["run_status"] == "completed"


async def test_travel_children_are_traced_under_the_planner() -> None:
    model = ScriptedChatModel(policy=respond)
    engine = FlowEngine([TravelFlow.using(model)], store=MemoryStore())
    await engine.run("TravelFlow", TRIP)
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


async def test_the_planner_collects_the_trip_over_several_messages(engine: FlowEngine) -> None:
    """A guest gives the trip in pieces: the planner names only what is still missing, and
    plans once everything is known (the latest value of each part counts)."""
    results, doc = await talk(
        engine,
        "I want to go to Lisbon for 3 nights",
        "from London",
        "actually 2 nights",
        "2027-05-01",
    )
    assert [r.message for r in results[:3]] == [
        "To plan it I still need where you leave from and the day you leave (YYYY-MM-DD).",
        "To plan it I still need the day you leave (YYYY-MM-DD).",
        "To plan it I still need the day you leave (YYYY-MM-DD).",
    ]
    assert results[3].message.startswith("Here are your options:")
    plan = states(doc)["PlannerStep"]["plan"]
    assert (plan["origin"], plan["destination"], plan["nights"]) == ("London", "Lisbon", 2)
