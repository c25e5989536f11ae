"""X3: with a judge, each turn's expectedResponse (or label) is also judged by a model."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from scenario_flows import CITY_SCENARIO

from picoflow import FlowEngine
from picoflow.scenarios import run_scenario
from picoflow.scenarios._cli import main
from picoflow.scenarios._judge import JUDGE_PROMPT
from picoflow.testing import ScriptedChatModel


def judge_policy(messages: list[Any], tool_names: list[str]) -> str:
    """A scripted judge: a reply passes when it holds the label's first word."""
    asked = json.loads(messages[-1].content)
    word = asked["expectedBehaviour"].split()[0].lower()
    passed = word in asked["actualReply"].lower()
    verdict = {"pass": passed, "score": 0.9 if passed else 0.1, "reason": f"looked for {word!r}"}
    return "```json\n" + json.dumps(verdict) + "\n```"


def judge_provider(spec: Any) -> ScriptedChatModel:
    return ScriptedChatModel(policy=judge_policy)


def labelled() -> dict[str, Any]:
    scenario = copy.deepcopy(CITY_SCENARIO)
    scenario["turns"][0]["label"] = "which city is asked"
    scenario["turns"][1]["expectedResponse"] = "Saved and asks for more"
    scenario["turns"][2]["label"] = "farewell"
    return scenario


async def test_x3_each_turn_is_judged_with_its_reason(city_engine: FlowEngine) -> None:
    judge = ScriptedChatModel(policy=judge_policy)
    report = await run_scenario(city_engine, labelled(), judge=judge)
    verdicts = [(t.judge.passed, t.judge.reason) for t in report.turns if t.judge is not None]
    assert verdicts == [
        (True, "looked for 'which'"),
        (True, "looked for 'saved'"),
        (False, "looked for 'farewell'"),
    ]
    assert report.failures == ["turn 3: judge: looked for 'farewell'"]
    assert report.turns[0].line().endswith("; judge: looked for 'which'")
    first = judge.requests[0].messages
    assert first[0].content == JUDGE_PROMPT
    assert json.loads(first[1].content) == {
        "userInput": "hi",
        "expectedBehaviour": "which city is asked",
        "actualReply": "Which city?",
    }


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"pass": true, "score": 0.5, "reason": "vague"}', "score 0.5 is below 0.75: vague"),
        (
            "It looks fine to me.",
            "the judge did not answer with the JSON asked for: 'It looks fine to me.'",
        ),
    ],
)
async def test_x3_a_low_score_or_an_unreadable_answer_fails_the_turn(
    city_engine: FlowEngine, answer: str, reason: str
) -> None:
    scenario = {"flowName": "CityFlow", "turns": [{"input": "hi", "label": "asks the city"}]}
    report = await run_scenario(city_engine, scenario, judge=ScriptedChatModel(script=[answer]))
    assert report.failures == [f"turn 1: judge: {reason}"]


async def test_x3_min_score_comes_from_the_turn_then_the_scenario(city_engine) -> None:
    answer = '{"pass": true, "score": 0.5, "reason": "vague"}'
    scenario = {
        "flowName": "CityFlow",
        "judgeMinScore": 0.4,
        "turns": [
            {"input": "hi", "label": "asks"},
            {"input": "x", "label": "asks", "minScore": 0.6},
        ],
    }
    judge = ScriptedChatModel(script=[answer, answer])
    report = await run_scenario(city_engine, scenario, judge=judge)
    assert [t.passed for t in report.turns] == [True, False]


def test_x3_judge_option_of_the_runner(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "city.scenario.json"
    path.write_text(json.dumps(labelled()))
    report = tmp_path / "out.json"
    code = main([
        "run", str(path), "--flows", "scenario_flows:CityFlow", "--judge", "judge:strict",
        "--provider", "judge=test_x3_judge:judge_provider", "--report", str(report),
    ])  # fmt: skip
    assert code == 1
    assert "FAIL turn 3 'farewell' (EndStep, " in capsys.readouterr().out
    turns = json.loads(report.read_text())["runs"][0]["turns"]
    assert turns[0]["judge"] == {"passed": True, "score": 0.9, "reason": "looked for 'which'"}
