"""SPEC X1, D5: demo/benefits/scenarios, PicoFlow-format scenario files that hold on this port.

Each file runs in a fresh session through `run_scenario`, the runner `make scenarios` uses:
every turn's step, completion, tools (in order), reply patterns and dotted state paths.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from demo.benefits.flow import EmployeeBenefitsFlow
from demo.benefits.offline import offline_provider
from picoflow import FlowEngine
from picoflow.scenarios import scenario_schema
from picoflow.stores import MemoryStore
from picoflow.testing import run_scenario

SCENARIOS = sorted((Path(__file__).parents[2] / "demo" / "benefits" / "scenarios").glob("*.json"))


def test_x1_benefits_scenarios_exist_and_fix_the_day() -> None:
    assert 3 <= len(SCENARIOS) <= 5
    for path in SCENARIOS:
        scenario = json.loads(path.read_text(encoding="utf-8"))
        assert scenario["flowName"] == "EmployeeBenefitsFlow"
        assert scenario["config"] == {"today": "2026-12-07"}, path.name
        jsonschema.validate(scenario, scenario_schema())


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.stem)
async def test_x1_benefits_scenario_holds(path: Path) -> None:
    engine = FlowEngine(
        [EmployeeBenefitsFlow], store=MemoryStore(), providers={"offline": offline_provider}
    )
    report = await run_scenario(engine, path)
    assert report.passed, "\n".join(str(failure) for failure in report.failures)
