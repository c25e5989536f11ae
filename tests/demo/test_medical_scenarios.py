"""demo/medical/scenarios: PicoFlow-format scenario files (SPEC X1) that hold on this port.

Each file runs in a fresh session; every turn's step, completion, tools called (in order) and
dotted step-state paths are checked here, so the files stay true to the flow until the
scenario runner takes them over.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydash
import pytest

from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

SCENARIOS = sorted((Path(__file__).parents[2] / "demo" / "medical" / "scenarios").glob("*.json"))


def test_x1_medical_scenarios_exist() -> None:
    assert 3 <= len(SCENARIOS) <= 5


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_x1_medical_scenario_holds(path: Path) -> None:
    scenario = json.loads(path.read_text(encoding="utf-8"))
    assert scenario["flowName"] == "MedicalFlow"
    engine = FlowEngine([MedicalFlow], store=MemoryStore(), providers={"offline": offline_provider})
    session = None
    for number, turn in enumerate(scenario["turns"], 1):
        tools, result = [], None
        async for event in engine.stream("MedicalFlow", turn["input"], session):
            if event.kind == "tool_call":
                tools.append(event.data["name"])
            if event.kind == "done":
                result = event.result
        assert result is not None and result.success, (number, result)
        session = result.session_id
        where = f"{path.name} turn {number} ({turn['label']})"
        assert result.completed is turn["completed"], where
        expect: dict[str, Any] = turn.get("expect", {})
        if "step" in expect:
            assert result.step == expect["step"], where
        if "tools" in expect:
            assert tools == expect["tools"], where
        doc = await engine.get_session(session)
        assert doc is not None
        for dotted, value in expect.get("state", {}).items():
            step, _, key = dotted.partition(".")
            assert pydash.get(doc["steps"][step]["state"], key) == value, (where, dotted)
