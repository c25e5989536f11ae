"""`python -m demo --flow NAME`: the ported PicoFlow demos from the same CLI, and all four served.

BasicFlow, MedicalFlow and TravelFlow each replay their tour offline to a completed session;
a session resumes with the flow it belongs to, whatever `--flow` says; `--serve` lists every
demo flow at `GET /ai/flows` and runs a ported one over HTTP.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import uvicorn
from cli_runner import demo
from fastapi.testclient import TestClient

from demo.cli import main

REPO = Path(__file__).resolve().parents[2]
TOURS = {
    "BasicFlow": REPO / "demo" / "basic" / "scripts" / "tour.txt",
    "MedicalFlow": REPO / "demo" / "medical" / "scripts" / "tour.txt",
    "TravelFlow": REPO / "demo" / "travel" / "scripts" / "tour.txt",
    # D5: a decision demo through the CLI (its decisions need no wiring; the other three later
    # demos' tours run in process, in test_ported_scripts.py)
    "DecisionHotelFlow": REPO / "demo" / "decision_hotel" / "scripts" / "tour.txt",
}


@pytest.mark.parametrize("flow", list(TOURS))
def test_each_ported_demo_plays_its_tour_to_the_end(flow: str, tmp_path: Path) -> None:
    run = demo("--flow", flow, "--store", "memory:", "--script", str(TOURS[flow]), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stderr.rstrip().endswith("is complete.")


def test_a_session_resumes_with_its_own_flow(tmp_path: Path) -> None:
    first = demo("--flow", "BasicFlow", stdin="Weather in NYC and LA please\n", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    session_id = first.stderr.split("--session=")[1].split()[0]
    second = demo(f"--session={session_id}", stdin="", cwd=tmp_path)  # no --flow given
    assert second.returncode == 0, second.stderr
    assert f"Resuming session {session_id} at " in second.stderr
    assert "error" not in second.stderr


def test_today_is_refused_for_a_flow_without_dates(tmp_path: Path) -> None:
    run = demo("--flow", "MedicalFlow", "--today", "2026-05-15", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (
        "error: --today only applies to --flow HotelFlow, TravelFlow, DecisionHotelFlow, "
        "EmployeeBenefitsFlow, HomeInsuranceQuoteFlow: the other demos do not use dates.\n"
    )


def test_an_unknown_flow_is_refused_with_the_choices(tmp_path: Path) -> None:
    run = demo("--flow", "ShopFlow", cwd=tmp_path)
    assert run.returncode == 2
    assert "argument --flow: invalid choice: 'ShopFlow'" in run.stderr


def test_serve_serves_every_demo_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    served: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.update(app=app, **kw))
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main(["--serve", "--store", "memory:"]) == 0
    with TestClient(served["app"]) as client:
        flows = client.get("/ai/flows").json()
        reply = client.post("/ai/run", json={"flowName": "MedicalFlow", "message": ""})
    assert sorted(flows) == [
        "BasicFlow",
        "DecisionHotelFlow",
        "DecisionSupportFlow",
        "EmployeeBenefitsFlow",
        "HomeInsuranceQuoteFlow",
        "HotelFlow",
        "MedicalFlow",
        "TravelFlow",
    ]
    assert reply.json()["success"] is True and reply.json()["step"]
