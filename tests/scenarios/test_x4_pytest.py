"""X4: the pytest plugin collects scenario files; `picoflow.testing.run_scenario`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from scenario_flows import CITY_SCENARIO

import demo.hotel.flow
import demo.hotel.offline.model  # noqa: F401 - imported once, not once per inner session
from picoflow import FlowEngine
from picoflow.scenarios import pytest_plugin
from picoflow.testing import run_scenario

ROOT = Path(__file__).resolve().parents[2]
# The plugin is passed as a module (as `-p picoflow.scenarios.pytest_plugin` would load it).
ARGS = ("-p", "no:cacheprovider", "--continue-on-collection-errors")


@pytest.fixture(autouse=True)
def _only_our_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner sessions load no installed plugin but ours: faster, and nothing else runs."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def test_x4_plugin_collects_one_item_per_scenario_and_shows_failures_as_diffs(
    offline: None, pytester: pytest.Pytester
) -> None:
    pytester.makeini("[pytest]\nscenario_flows = demo.hotel.flow:HotelFlow\n")
    shutil.copy(ROOT / "demo/hotel/scenarios/booking.scenario.json", pytester.path)
    shutil.copy(ROOT / "demo/hotel/scenarios/change-of-mind.scenario.yaml", pytester.path)
    wrong = json.loads((ROOT / "demo/hotel/scenarios/booking.scenario.json").read_text())
    wrong["name"] = "wrong room"
    wrong["turns"][4]["expect"]["state"]["ExploreStep.criteria.room_type"] = "suite"
    (pytester.path / "wrong.scenario.json").write_text(json.dumps(wrong))
    (pytester.path / "broken.scenario.json").write_text('{"flowName": "HotelFlow"}')

    result = pytester.runpytest_inprocess(*ARGS, plugins=[pytest_plugin])
    result.assert_outcomes(passed=2, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*_ scenario: wrong room _*",
            "PASS turn 4 'takes room, budget and amenities at once' (ExploreStep, * ms)",
            "FAIL turn 5 'searches and lists hotels' (PresentStep, * ms)",
            "    - state ExploreStep.criteria.room_type",
            "        expected: 'suite'",
            "        got:      'two beds'",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*broken.scenario.json: a scenario needs 'turns' (or 'persona' and 'goal'*"]
    )


def test_x4_plugin_without_flows_says_what_to_configure(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    (pytester.path / "city.scenario.json").write_text(json.dumps(CITY_SCENARIO))
    result = pytester.runpytest_inprocess(*ARGS, plugins=[pytest_plugin])
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "cannot run the scenario: no flows to run it on: name them in the ini file, e.g. "
            "scenario_flows = demo.hotel.flow:HotelFlow"
        ]
    )


async def test_x4_run_scenario_from_the_testing_kit(city_engine: FlowEngine) -> None:
    report = await run_scenario(city_engine, CITY_SCENARIO)
    assert report.passed
    assert [turn.step for turn in report.turns] == ["AskStep", "DoneStep", "EndStep"]
