"""`python -m demo` as a user runs it: a subprocess, no API key, stdin that is not a terminal.

The options and their refusals are in test_cli_options.py; leaving and resuming in
test_cli_leaving.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess

from cli_runner import REPO, demo, demo_env

from demo.hotel.offline.model import ANNOUNCEMENT

TOUR = REPO / "demo" / "hotel" / "scripts" / "tour.txt"


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


def test_leave_with_quit_then_resume_the_session_with_the_printed_command(tmp_path) -> None:
    first = demo("--today", "2026-05-15", cwd=tmp_path,
                 stdin="I need a hotel in Portland\nJuly 1 to 6, wifi, search\nquit\n")  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert first.stdout.splitlines()[-1] == "you> quit"
    # "=": an id may start with "-"; the interpreter is the one that ran, spelt to work from here
    resume = re.fullmatch(r"Session saved\. Resume it with: (.+ -m demo --session=(\S+))\n",
                          first.stderr)  # fmt: skip
    assert resume is not None, first.stderr
    command, session_id = resume.groups()

    second = subprocess.run(
        shlex.split(command), cwd=tmp_path, env=demo_env(), input="book number 2\n",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert f"Resuming session {session_id} at PresentStep." in second.stderr
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
    assert (run.returncode, run.stderr) == (2, "error: --script missing.txt: no such file.\n")


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
