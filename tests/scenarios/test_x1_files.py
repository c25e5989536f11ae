"""X1: scenario files — PicoFlow's format unchanged, `expect`, YAML, the schema, refusals."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from scenario_flows import CITY_SCENARIO

from picoflow import FlowEngine
from picoflow.scenarios import (
    ScenarioFileError,
    load_scenario,
    parse_scenario,
    run_scenario,
    scenario_schema,
)

ROOT = Path(__file__).resolve().parents[2]
HOTEL_SCENARIOS = sorted((ROOT / "demo" / "hotel" / "scenarios").glob("*.scenario.*"))


async def test_x1_picoflow_file_runs_unchanged_and_its_completed_flags_are_checked(
    offline: None,
) -> None:
    from demo.hotel.flow import HotelFlow

    path = ROOT / "demo" / "hotel" / "scenarios" / "booking.picoflow.scenario.json"
    raw = json.loads(path.read_text())
    assert set(raw) == {"flowName", "judgeModel", "judgeMinScore", "turns"}
    assert all(set(t) == {"label", "input", "expectedResponse", "completed"} for t in raw["turns"])
    engine = FlowEngine([HotelFlow])
    report = await run_scenario(engine, path)
    assert report.passed, report.failures
    assert [t.completed for t in report.turns] == [t["completed"] for t in raw["turns"]]

    raw["turns"][-2]["completed"] = True  # the comparison does not end the session
    wrong = await run_scenario(engine, raw)
    assert not wrong.passed
    assert wrong.failures == ["turn 9: completed: expected True, got False"]


async def test_x1_expect_that_does_not_hold_names_turn_path_and_both_values(
    city_engine: FlowEngine,
) -> None:
    scenario = copy.deepcopy(CITY_SCENARIO)
    expect = scenario["turns"][1]["expect"]
    expect["state"] = {
        "AskStep.city": "Porto",
        "AskStep.nights": {"min": 3},
        "AskStep.tags": {"contains": "loud"},
        "AskStep.missing": {"present": True},
        "AskStep.city_code": {"absent": True},
        "AskStep.tags.0": {"matches": "^qu"},
    }
    expect["step"] = "AskStep"
    expect["tools"] = ["save_city", "show"]
    expect["not_reply"] = ["Saved"]
    report = await run_scenario(city_engine, scenario)
    assert report.turns[1].failures == [
        "step: expected 'AskStep', got 'DoneStep'",
        "not_reply: 'Saved' matched the reply 'Saved. Anything else?'",
        "tools: expected ['save_city', 'show'], got ['save_city']",
        "state AskStep.city: expected 'Porto', got 'Lisbon'",
        "state AskStep.nights: expected min 3.0, got 2",
        "state AskStep.tags: expected contains 'loud', got ['quiet']",
        "state AskStep.missing: expected present True, got nothing (the path is absent)",
    ]
    assert report.turns[1].line().startswith("FAIL turn 2 'saves the city' (DoneStep, ")
    assert report.failures[0] == "turn 2: step: expected 'AskStep', got 'DoneStep'"
    assert report.turns[0].passed and report.turns[2].passed


async def test_x1_reply_patterns_and_warnings(city_engine: FlowEngine) -> None:
    scenario = copy.deepcopy(CITY_SCENARIO)
    scenario["turns"][0]["expect"] = {"reply": ["Which", "Paris"], "warnings": ["compaction"]}
    scenario["turns"][2]["expect"] = {"warnings": []}
    report = await run_scenario(city_engine, scenario)
    assert report.turns[0].failures == [
        "reply: expected a match for 'Paris', got 'Which city?'",
        "warnings: expected one matching 'compaction', got []",
    ]
    assert report.turns[2].passed


def test_x1_yaml_reads_as_json_does(tmp_path: Path) -> None:
    path = tmp_path / "city.scenario.yaml"
    path.write_text(
        "flowName: CityFlow\n"
        "turns:\n"
        "  - input: hi\n"
        "    expect: {step: AskStep, state: {AskStep.nights: {min: 1}}}\n"
    )
    scenario = load_scenario(path)
    assert scenario.flow_name == "CityFlow" and scenario.turns is not None
    assert scenario.turns[0].expect is not None and scenario.turns[0].expect.step == "AskStep"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda s: s["turns"][1]["expect"].update(tools="save_city"),
            "city.scenario.json: turn 2 ('saves the city'), field 'expect.tools': Input should "
            "be a valid list.",
        ),
        (
            lambda s: s["turns"][0].update(expcet={}),
            "city.scenario.json: turn 1 ('asks'), field 'expcet': unknown field; check its "
            "spelling (the schema lists every field).",
        ),
        (
            lambda s: s.pop("flowName"),
            "city.scenario.json: field 'flowName': required but missing.",
        ),
        (
            lambda s: s["turns"][2].pop("input"),
            "city.scenario.json: turn 3 ('ends'), field 'input': required but missing.",
        ),
        (
            lambda s: s["turns"][1]["expect"].update(reply="(Saved"),
            "city.scenario.json: turn 2 ('saves the city'), field 'expect.reply': '(Saved' is "
            "not a valid regular expression (missing ), unterminated subpattern at position 0).",
        ),
        (
            lambda s: s["turns"][1]["expect"]["state"].update(city="Lisbon"),
            "city.scenario.json: turn 2 ('saves the city'), field 'expect.state': 'city' is not "
            "a step-state path; write 'StepName.key' or 'StepName.key.subkey' (e.g. "
            "'ExploreStep.criteria.room_type').",
        ),
        (
            lambda s: s["turns"][1]["expect"]["state"].update({"AskStep.nights": {"min": "x"}}),
            "city.scenario.json: turn 2 ('saves the city'), field 'expect.state.AskStep.nights': "
            "matcher min: Input should be a valid number, unable to parse string as a number.",
        ),
        (
            lambda s: s["turns"][0]["expect"].update(completed=True),
            "city.scenario.json: turn 1 ('asks'), 'completed' and 'expect.completed' disagree; "
            "give the check once.",
        ),
        (
            lambda s: s.update(turns=[]),
            "city.scenario.json: 'turns' is empty; a scenario needs at least one turn.",
        ),
        (
            lambda s: s.update(persona="Ana"),
            "city.scenario.json: give either 'turns' or 'persona' and 'goal', not both.",
        ),
    ],
)
def test_x1_malformed_file_is_refused_naming_turn_and_field(
    tmp_path: Path, change: Any, message: str
) -> None:
    scenario = copy.deepcopy(CITY_SCENARIO)
    change(scenario)
    path = tmp_path / "city.scenario.json"
    path.write_text(json.dumps(scenario))
    with pytest.raises(ScenarioFileError) as refused:
        load_scenario(path)
    assert str(refused.value).removeprefix(f"{tmp_path}/") == message


def test_x1_file_that_is_not_json_or_not_there(tmp_path: Path) -> None:
    path = tmp_path / "broken.scenario.json"
    path.write_text('{"flowName": "CityFlow",\n "turns": [}')
    with pytest.raises(ScenarioFileError) as refused:
        load_scenario(path)
    assert str(refused.value) == (f"{path}: not valid JSON at line 2, column 12: Expecting value.")
    with pytest.raises(ScenarioFileError) as missing:
        load_scenario(tmp_path / "none.scenario.json")
    assert str(missing.value) == (
        f"{tmp_path}/none.scenario.json: cannot read the scenario file (No such file or directory)."
    )
    with pytest.raises(ScenarioFileError) as listed:
        parse_scenario([1, 2])
    assert str(listed.value) == (
        "<dict>: a scenario is an object with 'flowName' and 'turns', got list."
    )
    assert listed.value.turn is None and "ScenarioFileError(" in repr(listed.value)


async def test_x1_malformed_scenario_runs_nothing(city_engine: FlowEngine) -> None:
    from scenario_flows import CITY_MODEL

    before = len(CITY_MODEL.requests)
    with pytest.raises(ScenarioFileError):
        await run_scenario(city_engine, {"flowName": "CityFlow", "turns": [{"inptu": "hi"}]})
    assert len(CITY_MODEL.requests) == before


@pytest.mark.parametrize("path", HOTEL_SCENARIOS, ids=lambda p: p.name)
def test_x1_schema_validates_the_demo_scenarios(path: Path) -> None:
    import yaml

    text = path.read_text()
    data = yaml.safe_load(text) if path.suffix == ".yaml" else json.loads(text)
    jsonschema.validate(data, scenario_schema())
    load_scenario(path)


def test_x1_schema_refuses_what_the_loader_refuses() -> None:
    schema = scenario_schema()
    assert schema["title"] == "picoflow scenario"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"flowName": "X", "turns": [{"input": "a", "expcet": {}}]}, schema)


def test_x1_the_runner_prints_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    from picoflow.scenarios import run_cli

    assert run_cli(["schema"]) == 0
    assert json.loads(capsys.readouterr().out) == scenario_schema()


def test_x1_yaml_without_pyyaml_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    path = tmp_path / "city.scenario.yaml"
    path.write_text("flowName: CityFlow\n")
    with pytest.raises(ScenarioFileError) as refused:
        load_scenario(path)
    assert str(refused.value) == (
        f"{path}: reading YAML scenarios needs PyYAML: pip install 'picoflow[scenarios]' (or "
        "write the scenario as .scenario.json)."
    )
    (tmp_path / "bad.scenario.yaml").write_text("turns: [\n")
    monkeypatch.delitem(sys.modules, "yaml")
    with pytest.raises(ScenarioFileError) as broken:
        load_scenario(tmp_path / "bad.scenario.yaml")
    assert str(broken.value).startswith(f"{tmp_path}/bad.scenario.yaml: not valid YAML: ")
