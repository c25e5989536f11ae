"""`python -m demo` as a user runs it: a subprocess, no API key, stdin that is not a terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from demo.hotel.offline.model import ANNOUNCEMENT

REPO = Path(__file__).resolve().parents[2]
TOUR = REPO / "demo" / "hotel" / "scripts" / "tour.txt"


def demo(*args: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "PICOFLOW_STORE")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return subprocess.run(
        [sys.executable, "-m", "demo", *args],
        cwd=cwd, env=env, input=stdin, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_script_prints_the_transcript_on_the_default_sqlite_store(tmp_path) -> None:
    run = demo("--script", str(TOUR), "--today", "2026-05-15", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == ANNOUNCEMENT
    assert lines[1].startswith("bot> Hello! I'm the HotelFlow assistant")
    assert "you> compare 1,3,12 on price" in lines
    table = "bot> | Price | Columbia Slough Lodge | Mount Hood Gateway Inn | Cedar Hills Suites |"
    assert table in lines
    assert "     | Total | $815.68 | $998.98 | $1,365.58 |" in lines
    assert re.search(r"Your confirmation number is HF-\d{6}\.", lines[-1])
    assert re.fullmatch(r"Session \S+ is complete\.\n", run.stderr)
    assert (tmp_path / ".picoflow" / "sessions.db").is_file()


def test_debug_shows_tool_calls_and_step_changes(tmp_path) -> None:
    run = demo("--script", str(TOUR), "--today", "2026-05-15", "--debug", "--store", "memory:",
               cwd=tmp_path)  # fmt: skip
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "  · step ExploreStep → PresentStep" in lines
    assert "  · step PresentStep → CompareStep" in lines
    assert '  · tool PresentStep.show_hotels({"page": 2})' in lines
    assert '  · tool CompareStep.chosen_hotel({"hotel": "Columbia Slough Lodge"})' in lines
    assert not (tmp_path / ".picoflow").exists()


def test_leave_with_quit_then_resume_the_session(tmp_path) -> None:
    first = demo("--today", "2026-05-15", cwd=tmp_path,
                 stdin="I need a hotel in Portland\nJuly 1 to 6, wifi, search\nquit\n")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == "you> quit"
    resume = re.search(r"--session=(\S+)", first.stderr)  # "=": an id may start with "-"
    assert resume is not None, first.stderr

    second = demo(f"--session={resume.group(1)}", cwd=tmp_path, stdin="book number 2\n")
    assert second.returncode == 0, second.stderr
    assert f"Resuming session {resume.group(1)} at PresentStep." in second.stderr
    assert "bot> Hello" not in second.stdout  # a resumed session is not greeted again
    assert "Your confirmation number is HF-" in second.stdout


def test_a_bad_option_is_reported_before_any_chat(tmp_path) -> None:
    run = demo("--model", "nowhere:model", cwd=tmp_path)
    assert run.returncode == 2
    assert run.stderr.startswith(
        "error: HotelFlow.config_model(): unknown model provider 'nowhere'"
    )
    run = demo("--today", "15/05/2026", cwd=tmp_path)
    assert run.returncode == 2
    assert "expected a date as YYYY-MM-DD, got '15/05/2026'" in run.stderr
    run = demo("--script", "missing.txt", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (2, "error: --script missing.txt: no such file\n")


def test_serve_hands_the_engine_to_picoflows_http_server(monkeypatch, capsys) -> None:
    import uvicorn
    from fastapi.testclient import TestClient

    from demo.cli import main

    served = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **options: served.update(app=app, **options))
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main(["--serve", "--port", "8123", "--store", "memory:"]) == 0
    assert (served["host"], served["port"]) == ("127.0.0.1", 8123)
    assert capsys.readouterr().out == ANNOUNCEMENT + "\n"
    with TestClient(served["app"]) as client:
        reply = client.post("/ai/run", json={"flowName": "HotelFlow", "message": "hi"}).json()
    assert reply["success"] is True
    assert "Portland, Oregon area?" in reply["message"]
