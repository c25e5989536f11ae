"""demo/decision_support/scenarios: scenario files (SPEC X1) that hold on DecisionSupportFlow (D5).

Each file runs in a fresh session through picoflow's scenario runner, with the offline models
and the flow's decision provider (`decision_provider()`: the offline decision model through
structured output). Every turn's step, completion, reply patterns, state paths and its
decisions (`expect.decisions`: step, answers, route) are checked by the runner itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from demo.decision_support.flow import DecisionSupportFlow
from demo.decision_support.offline import decision_provider
from picoflow import FlowEngine
from picoflow.scenarios import run_scenario
from picoflow.stores import MemoryStore

SCENARIOS = sorted(
    (Path(__file__).parents[2] / "demo" / "decision_support" / "scenarios").glob("*.json")
)


def test_x1_decision_support_scenarios_exist_and_check_decisions() -> None:
    assert 3 <= len(SCENARIOS) <= 5
    checked = [
        turn for path in SCENARIOS for turn in json.loads(path.read_text())["turns"]
        if "decisions" in turn.get("expect", {})
    ]  # fmt: skip
    assert len(checked) >= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_x1_decision_support_scenario_holds(path: Path) -> None:
    assert json.loads(path.read_text())["flowName"] == "DecisionSupportFlow"
    engine = FlowEngine(
        [DecisionSupportFlow], store=MemoryStore(), decision_providers=[decision_provider()]
    )
    report = await run_scenario(engine, path)
    assert report.passed, report.failures
    assert all(turn.step == "IntakeDecisionStep" for turn in report.turns)  # parked each turn


async def test_x1_decision_support_tour_runs_to_its_goodbye() -> None:
    tour = Path(__file__).parents[2] / "demo" / "decision_support" / "scripts" / "tour.txt"
    lines = [line for line in tour.read_text().splitlines() if line and not line.startswith("#")]
    engine = FlowEngine(
        [DecisionSupportFlow], store=MemoryStore(), decision_providers=[decision_provider()]
    )
    session, results = None, []
    for line in lines:
        result = await engine.run("DecisionSupportFlow", line, session)
        assert result.success, result.message
        session, results = result.session_id, [*results, result]
    assert [r.completed for r in results] == [False] * (len(lines) - 1) + [True]
    assert "No refund has been issued" in results[2].message
