"""Conversations as tests: scenario files, a runner, a judge, a simulated user, scores (X1-X7).

A scenario is PicoFlow's `*.scenario.json` (`flowName`, `turns` of `input`, `label`,
`completed`), optionally with a per-turn `expect` that checks what a step-based flow knows for
certain: the step after the turn, the tools it called, the state it saved. Run them with
`python -m picoflow.scenarios run PATH... --flows module:Flow`, from pytest (the plugin
collects `*.scenario.json` / `*.scenario.yaml`), or from code with `run_scenario`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from picoflow.engine import FlowEngine
from picoflow.models import parse_model
from picoflow.scenarios._cli import main as run_cli
from picoflow.scenarios._export import ExportError, export_session
from picoflow.scenarios._formats import write_report
from picoflow.scenarios._judge import Judge
from picoflow.scenarios._load import ScenarioFileError, load_scenario, parse_scenario
from picoflow.scenarios._report import JudgeVerdict, ScenarioReport, SuiteReport, TurnReport
from picoflow.scenarios._runner import play
from picoflow.scenarios._schema import Expect, Scenario, StateMatcher, Turn, scenario_schema
from picoflow.scenarios._targets import EngineTarget, HttpTarget, Target

__all__ = [
    "run_scenario",
    "load_scenario",
    "parse_scenario",
    "scenario_schema",
    "export_session",
    "write_report",
    "run_cli",
    "Scenario",
    "Turn",
    "Expect",
    "StateMatcher",
    "ScenarioReport",
    "SuiteReport",
    "TurnReport",
    "JudgeVerdict",
    "ScenarioFileError",
    "ExportError",
    "EngineTarget",
    "HttpTarget",
    "Target",
]


async def run_scenario(
    engine: FlowEngine | Target,
    scenario: Scenario | str | Path | Mapping[str, Any],
    *,
    judge: BaseChatModel | None = None,
    user: BaseChatModel | None = None,
) -> ScenarioReport:
    """Run one scenario in a fresh session and report each turn; `.passed` says if all held.

    Args:
        engine: The engine whose flows the scenario talks to, or a `Target` (`HttpTarget` for
            a live server).
        scenario: A `Scenario`, the path of a scenario file, or its data as a dict.
        judge: A model that also judges each turn's `expectedResponse` or `label` (X3).
        user: The model that plays a simulated user's persona (X6); default: the
            scenario's `userModel`, built by the engine's providers.

    Raises:
        ScenarioFileError: the scenario is malformed; nothing ran.
    """
    source = "<dict>"
    if isinstance(scenario, (str, Path)):
        source, scenario = str(scenario), load_scenario(scenario)
    elif not isinstance(scenario, Scenario):
        scenario = parse_scenario(scenario)
    target = EngineTarget(engine) if isinstance(engine, FlowEngine) else engine
    if user is None and scenario.user_model is not None and isinstance(engine, FlowEngine):
        user = _user_model(engine, scenario.user_model)
    return await play(
        target,
        scenario,
        source=source,
        judge=Judge(judge) if judge is not None else None,
        user=user,
    )


def _user_model(engine: FlowEngine, spec: str) -> BaseChatModel:
    """A scenario's `userModel`, built by the engine's providers (its flows' included)."""
    model = parse_model(spec, "userModel")
    if isinstance(model, BaseChatModel):  # pragma: no cover - a string never is
        return model
    registry = engine._registry  # the providers the engine was given and its flows bring
    registry.check(model, "userModel")
    return registry.resolve(model)
