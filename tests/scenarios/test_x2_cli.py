"""X2: `python -m picoflow.scenarios run` — exit codes, PASS/FAIL lines, reports, --repeat."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from xml.etree import ElementTree

import pytest
from scenario_flows import CITY_SCENARIO

from picoflow.scenarios._cli import main

ROOT = Path(__file__).resolve().parents[2]
HOTEL = ROOT / "demo" / "hotel" / "scenarios"
CITY_FLOWS = "scenario_flows:CityFlow"


def write(tmp_path: Path, name: str, data: dict) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def failing_city() -> dict:
    scenario = copy.deepcopy(CITY_SCENARIO)
    scenario["turns"][1]["expect"]["state"]["AskStep.city"] = "Porto"
    return scenario


def test_x2_runs_the_demo_scenarios_with_flows_alone(
    offline: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", str(HOTEL), "--flows", "demo.hotel.flow:HotelFlow"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "PASS turn 5 'searches and lists hotels' (PresentStep, " in out
    assert f"PASS {HOTEL}/booking.scenario.json: 7/7 turns as expected" in out
    assert "5/5 scenario runs passed" in out


def test_x2_a_failing_turn_exits_1_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "city.scenario.json", failing_city())
    assert main(["run", str(path), "--flows", CITY_FLOWS]) == 1
    out = capsys.readouterr().out
    assert "  PASS turn 1 'asks' (AskStep, " in out
    assert "  FAIL turn 2 'saves the city' (DoneStep, " in out
    assert out.count("state AskStep.city: expected 'Porto', got 'Lisbon'") == 1
    assert f"FAIL {path}: 2/3 turns as expected" in out
    assert "0/1 scenario runs passed" in out


def test_x2_a_refused_file_exits_2_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = write(tmp_path, "a.scenario.json", CITY_SCENARIO)
    bad = write(tmp_path, "b.scenario.json", {"flowName": "CityFlow", "turns": [{}]})
    assert main(["run", str(good), str(bad), "--flows", CITY_FLOWS]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # the good file did not run either
    assert captured.err == (f"error: {bad}: turn 1, field 'input': required but missing.\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--flows", "scenario_flows:Nope"],
            "--flows 'scenario_flows:Nope': scenario_flows has no 'Nope'.",
        ),
        (
            ["--flows", "scenario_flows"],
            "--flows 'scenario_flows': write module:name, e.g. demo.hotel.flow:HotelFlow.",
        ),
        (["--flows", "scenario_flows:CITY_SCENARIO"], "--flows 'scenario_flows:CITY_SCENARIO' is "),
        (
            [],
            "Name the flows to run in process with --flows module:Flow (e.g. --flows "
            "demo.hotel.flow:HotelFlow), or a live server with --url.",
        ),
        (["--flows", "scenario_flows:AskStep"], "--flows 'scenario_flows:AskStep' is <class"),
        (
            ["--flows", "demo.hotel.flow:HotelFlow"],
            "The scenario's flowName 'CityFlow' is "
            "not among --flows (HotelFlow); add its class, e.g. --flows module:CityFlow.",
        ),
        (["--flows", CITY_FLOWS, "--repeat", "0"], "--repeat must be 1 or more, got 0."),
        (
            ["--flows", CITY_FLOWS, "--report", "out.html"],
            "--report 'out.html': name a .md, .json or .xml file.",
        ),
        (["--flows", CITY_FLOWS, "--store", "redis://x"], "--store: Unsupported store URL "),
        (
            ["--flows", CITY_FLOWS, "--judge", "nowhere:model"],
            "--judge: unknown model provider 'nowhere' in 'nowhere:model'.",
        ),
        (
            ["--flows", CITY_FLOWS, "--provider", "local"],
            "--provider 'local': write "
            "name=module:factory, e.g. offline=demo.ported:offline_provider.",
        ),
        (
            ["--url", "http://127.0.0.1:9", "--model", "openai:gpt-4o"],
            "--model cannot change a live server's model; drop --model or --url.",
        ),
    ],
)
def test_x2_options_that_cannot_work_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    path = write(tmp_path, "city.scenario.json", CITY_SCENARIO)
    assert main(["run", str(path), *args]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {message}"), captured.err
    assert "PASS" not in captured.out


def test_x2_no_scenario_files_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["run", str(tmp_path), "--flows", CITY_FLOWS]) == 2
    assert capsys.readouterr().err == (
        f"error: No scenario files under {tmp_path}; name *.scenario.json or *.scenario.yaml "
        "files or folders that hold them.\n"
    )


def test_x2_simulated_scenario_needs_a_user_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(
        tmp_path,
        "sim.scenario.json",
        {"flowName": "CityFlow", "persona": "Ana", "goal": {"AskStep.city": "Lisbon"}},
    )
    assert main(["run", str(path), "--flows", CITY_FLOWS]) == 2
    assert capsys.readouterr().err == (
        f"error: {path} has a simulated user (persona and goal) but no userModel; pass the "
        "model that plays it with --user provider:model.\n"
    )


@pytest.mark.parametrize("suffix", [".md", ".json", ".xml"])
def test_x2_reports_in_markdown_json_and_junit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str
) -> None:
    good = write(tmp_path, "good.scenario.json", CITY_SCENARIO)
    bad = write(tmp_path, "bad.scenario.json", failing_city())
    report = tmp_path / f"out{suffix}"
    code = main(["run", str(good), str(bad), "--flows", CITY_FLOWS, "--report", str(report)])
    assert code == 1
    assert f"Report written to {report}" in capsys.readouterr().out
    text = report.read_text()
    failure = "turn 2: state AskStep.city: expected 'Porto', got 'Lisbon'"
    if suffix == ".md":
        assert f"| {good} | 1 | PASS | 3/3 |" in text
        assert f"| {bad} | 1 | FAIL | 2/3 |" in text
        assert "| turns_as_expected | 0.8333 |" in text
        assert f"- {failure}" in text
    elif suffix == ".json":
        data = json.loads(text)
        assert data["passed"] is False
        assert data["scores"]["turns"] == 6 and data["scores"]["step_path_match"] == 1.0
        assert [run["passed"] for run in data["runs"]] == [True, False]
        assert data["runs"][1]["turns"][1]["failures"] == [failure.removeprefix("turn 2: ")]
    else:
        suite = ElementTree.fromstring(text)
        assert (suite.tag, suite.get("tests"), suite.get("failures")) == ("testsuite", "2", "1")
        cases = suite.findall("testcase")
        assert [case.get("name") for case in cases] == [str(good), str(bad)]
        assert cases[0].find("failure") is None
        assert cases[1].find("failure").text == failure


def test_x2_repeat_reports_pass_rates(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = write(tmp_path, "city.scenario.json", CITY_SCENARIO)
    report = tmp_path / "out.json"
    args = ["run", str(path), "--flows", CITY_FLOWS, "--repeat", "3", "--report", str(report)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "== " + str(path) + " (run 3)" in out
    assert f"Pass rate {path}: 100%" in out
    data = json.loads(report.read_text())
    assert data["pass_rates"] == {str(path): 1.0} and len(data["runs"]) == 3
    assert len({run["session_id"] for run in data["runs"]}) == 3  # a fresh session each run


def test_x2_model_runs_the_flow_on_another_model(
    offline: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--model swaps the flow's default model: here for a provider that echoes."""
    scenario = {"flowName": "HotelFlow", "turns": [{"input": "hi", "expect": {"reply": "^echo"}}]}
    path = write(tmp_path, "echo.scenario.json", scenario)
    args = [
        "run",
        str(path),
        "--flows",
        "demo.hotel.flow:HotelFlow",
        "--model",
        "echo:one",
        "--provider",
        "echo=test_x2_cli:echo_provider",
    ]
    assert main(args) == 0, capsys.readouterr().out


def echo_provider(spec: object) -> object:
    from picoflow.testing import ScriptedChatModel

    return ScriptedChatModel(policy=lambda messages, tools: f"echo {messages[-1].content}")
