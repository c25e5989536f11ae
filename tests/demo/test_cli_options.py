"""The CLI's options: each works with `--serve` or is refused, before anything starts, with why.

Refusals are checked by calling `demo.cli.main` with argv (exit status and the exact message);
a missing API key runs as a subprocess, so "no traceback" covers everything the process prints.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from cli_runner import demo
from fastapi.testclient import TestClient

from demo.cli import main
from demo.hotel.offline.model import ANNOUNCEMENT


@pytest.fixture
def served(monkeypatch) -> dict[str, Any]:
    """What `--serve` hands to uvicorn, instead of serving it."""
    options: dict[str, Any] = {}
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: options.update(app=app, **kw))
    monkeypatch.delenv("OPENAI_API_KEY")
    return options


@pytest.fixture
def library_logger() -> Iterator[logging.Logger]:
    """picoflow's logger, restored after a test that lets the CLI configure it."""
    logger = logging.getLogger("picoflow")
    handlers, level = list(logger.handlers), logger.level
    yield logger
    logger.handlers[:] = handlers
    logger.setLevel(level)


SERVE_REFUSALS = {
    "--script": (
        ["--script", "tour.txt"],
        "error: --script cannot be combined with --serve: it replays a chat in the terminal.\n",
    ),
    "--session": (
        ["--session=abc"],
        "error: --session cannot be combined with --serve: it resumes a chat in the terminal; "
        "over HTTP each client sends its session id with its messages.\n",
    ),
    "--today": (
        ["--today", "2026-05-15"],
        "error: --today cannot be combined with --serve: it fixes the date of a chat in the "
        'terminal; over HTTP a client sends it with its first message as "config": '
        '{"today": "YYYY-MM-DD"}.\n',
    ),
}


@pytest.mark.parametrize("option", SERVE_REFUSALS)
def test_terminal_only_options_are_refused_with_serve(option, served, capsys) -> None:
    argv, message = SERVE_REFUSALS[option]
    assert main(["--serve", *argv]) == 2
    assert capsys.readouterr() == ("", message)
    assert served == {}  # nothing was served


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "9000"], "--port only applies to --serve; add --serve or leave it out."),
        (
            ["--host", "0.0.0.0", "--cors-origin", "*"],
            "--host and --cors-origin only apply to --serve; add --serve or leave them out.",
        ),
    ],
)
def test_serve_options_are_refused_without_serve(argv, message, capsys) -> None:
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"error: {message}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "70000"], "--port 70000: a port is a number from 1 to 65535."),
        (
            ["--cors-origin", "localhost:5173"],
            "--cors-origin localhost:5173: an origin is scheme://host[:port] with no path, "
            "e.g. http://localhost:5173, or * for any origin.",
        ),
        (
            ["--cors-origin", "http://localhost:5173/chat"],
            "--cors-origin http://localhost:5173/chat: an origin is scheme://host[:port] with no "
            "path, e.g. http://localhost:5173, or * for any origin.",
        ),
    ],
)
def test_bad_serve_values_are_refused(argv, message, served, capsys) -> None:
    assert main(["--serve", *argv]) == 2
    assert capsys.readouterr() == ("", f"error: {message}\n")
    assert served == {}


def test_serve_passes_host_port_and_every_cors_origin(served, capsys) -> None:
    argv = ["--serve", "--store", "memory:", "--host", "0.0.0.0", "--port", "8123",
            "--cors-origin", "http://localhost:5173",
            "--cors-origin", "https://chat.example.com"]  # fmt: skip
    assert main(argv) == 0
    assert (served["host"], served["port"]) == ("0.0.0.0", 8123)
    assert capsys.readouterr().out == ANNOUNCEMENT + "\n"
    preflight = {"Access-Control-Request-Method": "POST"}
    with TestClient(served["app"]) as client:
        for origin in ("http://localhost:5173", "https://chat.example.com"):
            reply = client.options("/ai/run", headers={"Origin": origin, **preflight})
            assert reply.headers["access-control-allow-origin"] == origin
        other = client.options("/ai/run", headers={"Origin": "https://evil.example", **preflight})
        assert "access-control-allow-origin" not in other.headers


def test_serve_without_cors_origin_allows_no_other_site(served) -> None:
    assert main(["--serve", "--store", "memory:"]) == 0
    assert (served["host"], served["port"]) == ("127.0.0.1", 8000)
    with TestClient(served["app"]) as client:
        reply = client.options(
            "/ai/run",
            headers={"Origin": "http://localhost:5173", "Access-Control-Request-Method": "POST"},
        )
    assert "access-control-allow-origin" not in reply.headers


def test_serve_debug_logs_model_calls_to_the_server_log(served, library_logger, capsys) -> None:
    assert main(["--serve", "--debug", "--store", "memory:"]) == 0
    with TestClient(served["app"]) as client:
        reply = client.post("/ai/run", json={"flowName": "HotelFlow", "message": "hi"})
    assert reply.json()["success"] is True
    log = capsys.readouterr().err  # "LEVEL logger: message", the logger being picoflow's module
    assert re.search(r"^INFO picoflow(\.\w+)+: model call 1 in HotelFlow\.ExploreStep$", log, re.M)


@pytest.mark.parametrize(
    ("model", "variable", "hint"),
    [
        ("openai:gpt-4o-mini", "OPENAI_API_KEY",
         " (any value works for a local server at OPENAI_BASE_URL)"),
        ("anthropic:claude-sonnet-4-5", "ANTHROPIC_API_KEY", ""),
    ],
)  # fmt: skip
def test_missing_api_key_is_one_line_and_status_2(model, variable, hint, tmp_path: Path) -> None:
    run = demo("--model", model, cwd=tmp_path)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr == (
        f"error: --model {model} needs an API key: set {variable}{hint}, or leave --model out "
        "to chat with the offline demo model.\n"
    )
    assert not (tmp_path / ".picoflow").exists()  # nothing was created


def test_missing_api_key_is_refused_with_serve_too(served, capsys) -> None:
    assert main(["--serve", "--model", "openai:gpt-4o", "--store", "memory:"]) == 2
    assert capsys.readouterr().err.startswith("error: --model openai:gpt-4o needs an API key:")
    assert served == {}
