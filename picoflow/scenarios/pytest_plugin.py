"""The pytest plugin (X4): each scenario file under the test paths is one test item.

Files named `*.scenario.json` / `*.scenario.yaml` are collected; a failing item lists each turn
that did not go as expected, with the expected and the actual value.

Enable it with `-p picoflow.scenarios.pytest_plugin` or `pytest_plugins =
["picoflow.scenarios.pytest_plugin"]` in your top-level conftest.py (installing picoflow also
registers it as the `picoflow_scenarios` entry point), and name the flows in the ini file:

    [tool.pytest.ini_options]
    scenario_flows = ["demo.hotel.flow:HotelFlow"]

`scenario_store` (a store URL, default `memory:`) and `scenario_user` / `scenario_judge`
(`provider:model`) are read too. Each item runs its scenario in a fresh session.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from picoflow.scenarios._judge import Judge
from picoflow.scenarios._load import SUFFIXES, ScenarioFileError, load_scenario
from picoflow.scenarios._report import ScenarioReport
from picoflow.scenarios._runner import play
from picoflow.scenarios._schema import Scenario
from picoflow.scenarios._setup import Setup, SetupError, flows_from

__all__ = ["pytest_addoption", "pytest_collect_file", "ScenarioFile", "ScenarioItem"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """The ini keys the scenario items read."""
    parser.addini("scenario_flows", "module:Flow classes scenarios talk to", type="linelist")
    parser.addini("scenario_store", "store URL for scenario runs (default memory:)")
    parser.addini("scenario_user", "provider:model playing simulated users")
    parser.addini("scenario_judge", "provider:model judging each turn's label")


def pytest_collect_file(parent: pytest.Collector, file_path: Path) -> pytest.Collector | None:
    """Collect scenario files."""
    if file_path.name.endswith(SUFFIXES):
        collector: pytest.Collector = ScenarioFile.from_parent(parent, path=file_path)
        return collector
    return None


class ScenarioFile(pytest.File):
    """One scenario file: one item (a refused file fails at collection, naming turn and field)."""

    def collect(self) -> Iterator[pytest.Item]:
        """The file's single item."""
        try:
            scenario = load_scenario(self.path)
        except ScenarioFileError as exc:
            raise self.CollectError(str(exc)) from None
        yield ScenarioItem.from_parent(
            self, name=scenario.name or self.path.name, scenario=scenario
        )


class ScenarioItem(pytest.Item):
    """Runs one scenario; fails with every failure line of the run."""

    def __init__(self, *, scenario: Scenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario

    def runtest(self) -> None:
        """Run the scenario on an engine built from the ini's `scenario_flows`."""
        report = asyncio.run(self._run())
        if not report.passed:
            raise ScenarioFailed(report)

    async def _run(self) -> ScenarioReport:
        config = self.config
        try:
            setup = Setup(
                flows=flows_from(config.getini("scenario_flows")),
                store_url=config.getini("scenario_store") or None,
            )
        except SetupError as exc:
            raise ScenarioFailed(None, str(exc)) from None
        if not setup.flows:
            raise ScenarioFailed(
                None,
                "no flows to run it on: name them in the ini file, e.g. scenario_flows = "
                "demo.hotel.flow:HotelFlow",
            )
        try:
            target = setup.target(self.scenario.flow_name)
            judge_spec = config.getini("scenario_judge")
            user_spec = config.getini("scenario_user") or self.scenario.user_model
            judge = Judge(setup.model_for(judge_spec, "scenario_judge")) if judge_spec else None
            user = setup.model_for(user_spec, "scenario_user") if user_spec else None
            return await play(target, self.scenario, source=str(self.path), judge=judge, user=user)
        except SetupError as exc:
            raise ScenarioFailed(None, str(exc)) from None
        finally:
            await setup.aclose()

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        """Each turn's PASS/FAIL line, then the failures as expected/got lines."""
        error = excinfo.value
        if isinstance(error, ScenarioFailed):
            return error.describe()
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        """Where the item comes from, for pytest's report."""
        return self.path, 0, f"scenario: {self.name}"


class ScenarioFailed(Exception):
    """A scenario whose run did not go as expected (or could not be set up)."""

    def __init__(self, report: ScenarioReport | None, problem: str = "") -> None:
        super().__init__(problem or "scenario failed")
        self.report = report
        self.problem = problem

    def describe(self) -> str:
        """The text pytest shows for the failed item."""
        if self.report is None:
            return f"cannot run the scenario: {self.problem}"
        lines = []
        for turn in self.report.turns:
            lines.append(turn.line().split(": ", 1)[0] if turn.failures else turn.line())
            lines += [_as_diff(failure) for failure in turn.failures]
        if self.report.goal_reached is False:
            lines.append(f"goal not reached: {self.report.goal_failure}")
        return "\n".join(lines)


_EXPECTED_GOT = re.compile(r"^(?P<what>.+?): expected (?P<expected>.+), got (?P<got>.+)$")


def _as_diff(failure: str) -> str:
    """`state X: expected 1, got 2` as an expected/got pair, the way pytest shows a diff."""
    match = _EXPECTED_GOT.match(failure)
    if match is None:
        return f"    - {failure}"
    return (
        f"    - {match['what']}\n"
        f"        expected: {match['expected']}\n"
        f"        got:      {match['got']}"
    )
