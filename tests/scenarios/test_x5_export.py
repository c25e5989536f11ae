"""X5: a stored session becomes a scenario that passes on the code that produced it."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from scenario_flows import CITY_SCENARIO, AskStep, CityFlow

from picoflow import FlowEngine, stay, tool
from picoflow.scenarios import ExportError, export_session, run_scenario
from picoflow.scenarios._cli import main
from picoflow.stores import MemoryStore, SQLiteStore

HOTEL_TALK = [
    "",
    "Hi! I need a hotel in Portland.",
    "July 1 to July 6",
    "two beds, under $300 a night, with wifi and parking",
    "search now",
    "more",
    "compare 1 and 3 on price",
    "same hotels on amenities",
    "Let's book the Columbia Slough Lodge",
]


async def talk(engine: FlowEngine, flow: str, lines: list[str], config: Any = None) -> str:
    session_id = None
    for line in lines:
        result = await engine.run(flow, line, session_id, config if session_id is None else None)
        assert result.success, result.message
        session_id = result.session_id
    assert session_id is not None
    return session_id


async def test_x5_an_exported_hotel_session_reruns_green(offline: None) -> None:
    """Nine turns: the criteria conversation was compacted, so turns come from the archive."""
    from demo.hotel.flow import HotelFlow

    store = MemoryStore()
    session_id = await talk(
        FlowEngine([HotelFlow], store=store), "HotelFlow", HOTEL_TALK, {"today": "2026-05-15"}
    )
    assert (await store.load(session_id))["memory"]["hotel-explore"]["summary"]
    scenario = await export_session(store, session_id)
    assert scenario["config"] == {"today": "2026-05-15"}
    assert [turn["input"] for turn in scenario["turns"]] == HOTEL_TALK
    assert [turn["expect"]["step"] for turn in scenario["turns"]] == [
        *["ExploreStep"] * 4, "PresentStep", "PresentStep", "CompareStep", "CompareStep",
        "EndStep",
    ]  # fmt: skip
    assert scenario["turns"][4]["expect"]["tools"] == ["capture_choices", "show_hotels"]
    assert [turn["completed"] for turn in scenario["turns"]][-2:] == [False, True]
    last = scenario["turns"][-1]["expect"]["state"]
    assert last["PresentStep.booking.hotel"] == "Columbia Slough Lodge"
    assert last["PresentStep.offers"] == {"present": True}

    report = await run_scenario(FlowEngine([HotelFlow], store=MemoryStore()), scenario)
    assert report.passed, report.failures


class DetourAskStep(AskStep):
    """The change: saving the city no longer moves on to DoneStep."""

    name = "AskStep"

    @tool
    def save_city(self, city: str) -> Any:
        """Record the city the user wants."""
        self.save_state({"city": city, "nights": 2, "tags": ["quiet"]})
        return stay("Saved; ask for the dates now.")


class DetourCityFlow(CityFlow):
    name = "CityFlow"

    def define_steps(self) -> list[Any]:
        steps = super().define_steps()
        return [DetourAskStep(self), *steps[1:]]


async def talk_and_close(database: Path) -> str:
    store = SQLiteStore(database)
    lines = [turn["input"] for turn in CITY_SCENARIO["turns"]]
    try:
        return await talk(FlowEngine([CityFlow], store=store), "CityFlow", lines)
    finally:
        await store.aclose()


def test_x5_the_export_fails_at_the_turn_where_a_change_sends_the_flow_elsewhere(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = tmp_path / "sessions.db"
    session_id = asyncio.run(talk_and_close(database))

    out = tmp_path / "exported.scenario.json"
    url = f"sqlite:///{database}"
    assert main(["export", session_id, "--store", url, "--out", str(out)]) == 0
    assert capsys.readouterr().out == f"Scenario written to {out}\n"
    exported = json.loads(out.read_text())
    assert [t["expect"] for t in exported["turns"][:2]] == [
        {"step": "AskStep", "tools": []},
        {"step": "DoneStep", "tools": ["save_city"]},
    ]
    assert main(["run", str(out), "--flows", "scenario_flows:CityFlow"]) == 0
    capsys.readouterr()

    engine = FlowEngine([DetourCityFlow], store=MemoryStore())
    changed = asyncio.run(run_scenario(engine, out))
    assert changed.failures[0] == "turn 2: step: expected 'DoneStep', got 'AskStep'"
    assert changed.turns[0].passed


def test_x5_unknown_session_is_refused(tmp_path: Path, capsys) -> None:
    with pytest.raises(ExportError) as refused:
        asyncio.run(export_session(MemoryStore(), "nope"))
    assert str(refused.value) == (
        "No session 'nope' in this store; give the id of a stored session and the store it "
        "is in (--store URL)."
    )
    url = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["export", "nope", "--store", url]) == 2
    assert capsys.readouterr().err.startswith("error: No session 'nope' in this store;")
