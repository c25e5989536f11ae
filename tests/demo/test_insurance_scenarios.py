"""demo/insurance/scenarios: scenario files (SPEC X1, D5) that hold on this port.

Each file runs in a fresh session with its ``config`` (today is 2026-12-07); every turn's step,
completion, tools called (in order), reply patterns and dotted step-state paths are checked
here, as the scenario runner (`make scenarios`) checks them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pydash
import pytest
from insurance_kit import offline_engine

SCENARIOS = sorted((Path(__file__).parents[2] / "demo" / "insurance" / "scenarios").glob("*.json"))


def _matches(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict) and set(wanted) <= {"present", "absent"}:
        return (found is None) is bool(wanted.get("absent"))
    return bool(found == wanted)


def test_x1_d5_insurance_scenarios_exist() -> None:
    assert 3 <= len(SCENARIOS) <= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_x1_d5_insurance_scenario_holds(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["flowName"] == "HomeInsuranceQuoteFlow"
    engine = offline_engine()
    session = None
    for number, turn in enumerate(scenario["turns"], 1):
        tools, result = [], None
        config = scenario.get("config") if session is None else None
        async for event in engine.stream(scenario["flowName"], turn["input"], session, config):
            if event.kind == "tool_call":
                tools.append(event.data["name"])
            if event.kind == "done":
                result = event.result
        assert result is not None and result.success, (number, result)
        session = result.session_id
        where = f"{path.name} turn {number} ({turn['label']})"
        expect: dict[str, Any] = turn.get("expect", {})
        assert result.completed is turn["completed"], where
        assert (result.step, tools) == (expect["step"], expect["tools"]), where
        if "reply" in expect:
            assert re.search(expect["reply"], result.message), (where, result.message)
        doc = await engine.get_session(session)
        assert doc is not None
        for dotted, value in expect.get("state", {}).items():
            step, _, key = dotted.partition(".")
            found = pydash.get(doc["steps"][step]["state"], key)
            assert _matches(found, value), (where, dotted, found)
