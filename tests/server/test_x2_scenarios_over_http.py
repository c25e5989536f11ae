"""X2: the runner against a live server (`--url`), as `make serve` runs it: uvicorn on loopback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_flows import live_server

from demo.hotel.flow import HotelFlow
from picoflow import FlowEngine
from picoflow.scenarios._cli import main
from picoflow.server import create_app
from picoflow.stores import SQLiteStore

SCENARIOS = Path(__file__).resolve().parents[2] / "demo/hotel/scenarios"


def test_x2_the_demo_scenarios_pass_against_a_live_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    database = tmp_path / "sessions.db"
    app = create_app(FlowEngine([HotelFlow], store=SQLiteStore(database)))
    report = tmp_path / "out.json"
    with live_server(app) as live:
        code = main([
            "run", str(SCENARIOS / "booking.scenario.json"), str(SCENARIOS / "guest.scenario.yaml"),
            "--url", live.url, "--store", f"sqlite:///{database}", "--report", str(report),
            "--flows", "demo.hotel.flow:HotelFlow",  # only for the guest's userModel
        ])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        assert "PASS turn 5 'searches and lists hotels' (PresentStep, " in out
        runs = json.loads(report.read_text())["runs"]
        assert runs[0]["turns"][4]["tools"] == ["capture_choices", "show_hotels"]  # from SSE
        assert runs[1]["goal_reached"] is True

        # Without the server's store, state checks cannot be read: they fail, saying why.
        code = main(["run", str(SCENARIOS / "booking.scenario.json"), "--url", live.url])
        out = capsys.readouterr().out
        assert code == 1
        assert (
            "state: the session document cannot be read here; against a live server (--url) "
            "pass the server's store with --store so state can be checked"
        ) in out

        # A turn the server refuses fails with the server's message; later turns do not run.
        other = tmp_path / "other.scenario.json"
        other.write_text(
            json.dumps({"flowName": "NoFlow", "turns": [{"input": "hi"}, {"input": "x"}]})
        )
        assert main(["run", str(other), "--url", live.url]) == 1
    out = capsys.readouterr().out
    assert "FAIL turn 1 said 'hi' (None, " in out
    assert "the turn failed: HTTP 400: Unknown flow 'NoFlow'. Registered flows: HotelFlow" in out
    assert "FAIL turn 2 said 'x' (None, 0 ms): not run: turn 1 failed" in out
