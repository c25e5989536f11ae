"""demo/decision_hotel/scenarios: scenario files (SPEC X1) that hold on DecisionHotelFlow (D5).

Each file runs in a fresh session through picoflow's scenario runner, on the offline models,
the offline decision model (through structured output) and the in-process search; the runner
checks each turn's step, completion, tools, reply patterns, state paths and its decisions
(`expect.decisions`: step, answers, route). The tour script replays to a booking.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from decision_hotel_corpus import chat, engine_on

from picoflow.scenarios import run_scenario
from picoflow.stores import MemoryStore

DEMO = Path(__file__).parents[2] / "demo" / "decision_hotel"
SCENARIOS = sorted((DEMO / "scenarios").glob("*.scenario.json"))


def test_x1_decision_hotel_scenarios_exist_and_check_decisions() -> None:
    assert 3 <= len(SCENARIOS) <= 5
    turns = [turn for path in SCENARIOS for turn in json.loads(path.read_text())["turns"]]
    assert sum("decisions" in turn.get("expect", {}) for turn in turns) >= 8
    assert {json.loads(path.read_text())["flowName"] for path in SCENARIOS} == {"DecisionHotelFlow"}


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name.split(".")[0])
async def test_x1_decision_hotel_scenario_holds(path: Path) -> None:
    report = await run_scenario(engine_on(MemoryStore()), path)
    assert report.passed, report.failures


async def test_x1_decision_hotel_tour_books_on_its_last_line() -> None:
    text = (DEMO / "scripts" / "tour.txt").read_text(encoding="utf-8").splitlines()
    lines = [line for line in text if line.strip() and not line.startswith("#")]
    turns = await chat(engine_on(MemoryStore()), *lines)
    results = [turn.result for turn in turns]
    assert all(r is not None and r.success for r in results)
    assert [r.completed for r in results if r is not None] == [False] * (len(lines) - 1) + [True]
    assert "is booked with confirmation #" in turns[-1].reply
