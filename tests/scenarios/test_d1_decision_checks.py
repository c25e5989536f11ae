"""D1 in scenarios: a turn's `expect.decisions` checks which answers came and which route."""

from __future__ import annotations

from typing import Any

from support.decision_flows import support_engine, support_flow

from picoflow.scenarios import run_scenario
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider


def _scenario(decisions: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "flowName": "SupportFlow",
        "turns": [{"input": "please check my case", "expect": {"decisions": decisions}}],
    }


def _engine() -> Any:
    provider = ScriptedDecisionProvider(
        {"RouterStep": [{"route": "ready", "urgent": 0.8}], "ReadinessStep": [{"complete": 2}]}
    )
    return support_engine(provider, support_flow(ScriptedChatModel(script=[])))


async def test_d1_a_scenario_checks_the_answers_and_routes_of_a_turns_decisions() -> None:
    expected = [
        {"step": "RouterStep", "answers": {"route": "ready", "urgent": {"min": 0.5}},
         "route": "ReadinessStep"},
        {"step": "ReadinessStep", "answers": {"complete": 2}, "recovered": False},
    ]  # fmt: skip
    report = await run_scenario(_engine(), _scenario(expected))
    assert report.passed, report.failures


async def test_d1_a_wrong_answer_or_route_is_a_failure_line_naming_the_decision() -> None:
    expected = [
        {"step": "RouterStep", "answers": {"route": "billing"}, "route": "BillingStep"},
        {"answers": {"complete": {"max": 1}}},
    ]
    report = await run_scenario(_engine(), _scenario(expected))
    assert report.failures == [
        "turn 1: decision 1 (RouterStep) route: expected 'BillingStep', got 'ReadinessStep'",
        "turn 1: decision 1 (RouterStep) answer route: expected 'billing', got 'ready'",
        "turn 1: decision 2 (ReadinessStep) answer complete: expected max 1.0, got 2.0",
    ]
    report = await run_scenario(_engine(), _scenario([]))
    assert report.failures == [
        "turn 1: decisions: expected 0, got 2 ['RouterStep -> ReadinessStep', "
        "'ReadinessStep -> ReadinessStep']"
    ]
