"""Leaving the terminal chat: quit, end of input, Ctrl-C and a failed first turn.

Every way out ends cleanly (no traceback) and says the one true thing about the session: the
command that resumes it — which these tests run, exactly as printed — or that the memory: store
keeps nothing, or nothing at all when no session was created.
"""

from __future__ import annotations

import asyncio
import os
import pty
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from cli_runner import REPO, demo, demo_env

from demo.cli import INTERRUPTED, Chat, main, parse_args, resume_command, show
from demo.hotel.flow import PROVIDERS, HotelFlow
from picoflow import FlowEngine
from picoflow.stores import SQLiteStore
from picoflow.testing import ScriptedChatModel

HINT = re.compile(r"Session saved\. Resume it with: (.+--session=([\w-]+).*)\n")


def test_memory_store_does_not_claim_the_session_is_saved(tmp_path) -> None:
    run = demo("--store", "memory:", cwd=tmp_path, stdin="I need a hotel in Portland\nquit\n")
    assert run.returncode == 0
    assert re.fullmatch(
        r"Session \S+ ends here: the memory: store keeps nothing after the CLI exits\.\n",
        run.stderr,
    )
    assert "saved" not in run.stderr


def test_end_of_input_leaves_with_the_resume_hint(tmp_path) -> None:
    run = demo("--store", f"sqlite:///{tmp_path / 's.db'}", cwd=tmp_path, stdin="hi\n")
    assert run.returncode == 0
    hint = HINT.fullmatch(run.stderr)
    assert hint is not None, run.stderr
    assert hint.group(1).endswith(f"--store=sqlite:///{tmp_path / 's.db'}")  # same store again


def _as_in_a_terminal() -> None:
    """SIGINT as a terminal gives it: a suite started in the background (`make test &`) runs
    with SIGINT ignored, which its children inherit, and Ctrl-C then never arrives."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_at_the_prompt_leaves_cleanly_and_the_hint_resumes(tmp_path) -> None:
    chat = subprocess.Popen(
        [sys.executable, "-m", "demo"], cwd=tmp_path, env=demo_env(), text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_as_in_a_terminal,
    )  # fmt: skip
    assert chat.stdout is not None
    chat.stdout.readline()  # the model announcement
    assert chat.stdout.readline().startswith("bot> Hello!")  # the CLI now waits for the guest
    chat.send_signal(signal.SIGINT)
    out, err = chat.communicate(timeout=60)
    assert chat.returncode == INTERRUPTED == 130
    assert out == "\n"  # the line the ^C was typed on is closed
    hint = HINT.fullmatch(err)
    assert hint is not None, err  # no traceback, only the hint

    resumed = subprocess.run(
        shlex.split(hint.group(1)), cwd=tmp_path, env=demo_env(), input="",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stderr.startswith(f"Resuming session {hint.group(2)} at ExploreStep.\n")


def test_the_hint_after_make_demo_is_a_make_command_that_resumes(tmp_path) -> None:
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    # -o and BIN: the test's own interpreter, and no install even if the venv's stamp is stale
    test_env = ["-s", "-o", ".venv/.installed", f"BIN={Path(sys.executable).parent}"]
    first = subprocess.run(
        ["make", *test_env, "demo", f"ARGS=--store={store} --today 2026-05-15"],
        cwd=REPO, env=demo_env(), input="I need a hotel in Portland\nquit\n",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    hint = HINT.fullmatch(first.stderr)
    assert hint is not None, first.stderr
    session_id = hint.group(2)
    assert hint.group(1) == f'make demo ARGS="--session={session_id} --store={store}"'

    make, target, args = shlex.split(hint.group(1))
    second = subprocess.run(
        [make, *test_env, target, args], cwd=REPO, env=demo_env(), input="July 1 to 6\n",
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert second.returncode == 0, second.stderr
    assert second.stderr.startswith(f"Resuming session {session_id} at ExploreStep.\n")
    assert "bot> Got it: Jul 1, 2026 → Jul 6, 2026 (5 nights)." in second.stdout


def scripted_chat(tmp_path: Path, script: Any, monkeypatch) -> Chat:
    """A terminal chat with HotelFlow on a scripted model, the guest saying one line."""
    lines = tmp_path / "guest.txt"
    lines.write_text("I need a hotel in Portland\n", encoding="utf-8")
    model = ScriptedChatModel(**{"policy" if callable(script) else "script": script})
    flow = HotelFlow.using(model)
    engine = FlowEngine([flow], store=SQLiteStore(tmp_path / "s.db"), providers=PROVIDERS)
    monkeypatch.chdir(tmp_path)
    return Chat(engine, parse_args(["--script", str(lines)]), resumable=True)


async def stored(path: Path, session_id: str) -> dict[str, Any] | None:
    engine = FlowEngine([HotelFlow], store=SQLiteStore(path), providers=PROVIDERS)
    try:
        return await engine.get_session(session_id)
    finally:
        await engine.aclose()


def test_ctrl_c_during_a_turn_keeps_the_session_as_it_was(tmp_path, monkeypatch, capsys) -> None:
    # Ctrl-C reaches the turn through asyncio.run, which cancels it only while SIGINT has
    # Python's default handler; a suite started in the background (`make test &`) runs with
    # SIGINT ignored, and the turn then waited forever. A terminal has the default, so this
    # test starts from it.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _ctrl_c_during_a_turn(tmp_path, monkeypatch, capsys)
    finally:
        signal.signal(signal.SIGINT, previous)


def _ctrl_c_during_a_turn(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    async def interrupted(messages, tool_names):  # Ctrl-C while the model is thinking
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.Event().wait()  # until the interrupt cancels the turn

    replies = iter(["Hello! Portland?"])
    policy = lambda messages, tools: next(replies, None) or interrupted(messages, tools)  # noqa: E731
    chat = scripted_chat(tmp_path, policy, monkeypatch)
    assert chat.run() == INTERRUPTED
    out, err = capsys.readouterr()
    assert out == "bot> Hello! Portland?\nyou> I need a hotel in Portland\n\n"
    assert chat.session_id is not None
    assert err == f"Session saved. Resume it with: {resume_command(chat.session_id, [])}\n"
    doc = asyncio.run(stored(tmp_path / "s.db", chat.session_id))
    assert doc is not None
    assert doc["revision"] == 0  # only the greeting was saved; the interrupted turn left none (P3)


def test_a_failed_first_turn_exits_1_without_a_session_to_resume(
    tmp_path, monkeypatch, capsys
) -> None:
    chat = scripted_chat(tmp_path, [RuntimeError("the model is down")], monkeypatch)
    assert chat.run() == 1
    assert capsys.readouterr() == (
        "",
        "error: The turn failed and the session was not changed: RuntimeError: the model is down\n",
    )


def test_a_failed_first_turn_prints_one_line_and_no_traceback(tmp_path) -> None:
    """The library's log records (the turn's traceback) stay out of the chat without --debug."""
    run = demo(
        "--store",
        "memory:",
        cwd=tmp_path,
        OPENAI_API_KEY="x",
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )  # fmt: skip  (nothing listens there)
    assert run.returncode == 1
    assert run.stdout == "Model: openai:gpt-4o-mini\n"
    assert re.fullmatch(
        r"error: The model 'openai:[^']+' failed in HotelFlow\.ExploreStep \(tried 4 "
        r"times\): \w+: Connection error\. The session was not changed; send the message again "
        r"in a moment\.\n",  # V9: four attempts (the call and its 3 retries), then this message
        run.stderr,
    )


def test_tables_print_words_where_emoji_would_be_empty_boxes(capsys) -> None:
    show("bot> ", "| Amenity | A | B |\n| --- | --- | --- |\n| wifi | ✅ | ❌ |")
    assert capsys.readouterr().out == (
        "bot> | Amenity | A | B |\n     | --- | --- | --- |\n     | wifi | yes | no |\n"
    )


def test_main_prints_no_emoji_in_the_tour(monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")
    tour = REPO / "demo" / "hotel" / "scripts" / "tour.txt"
    assert main(["--script", str(tour), "--today", "2026-05-15", "--store", "memory:"]) == 0
    printed = capsys.readouterr().out
    assert "| wifi | yes | yes |" in printed
    assert not any(0x2600 <= ord(c) <= 0x27BF or ord(c) >= 0x1F300 for c in printed)
    assert os.environ.get("DEMO_VIA_MAKE") is None


def test_ctrl_d_at_a_terminal_leaves_cleanly_with_the_hint(tmp_path) -> None:
    """A real terminal (a pty): input() prompts, and Ctrl-D is the line discipline's EOF."""
    leader, follower = pty.openpty()
    chat = subprocess.Popen(
        [sys.executable, "-m", "demo"], cwd=tmp_path, env=demo_env(),
        stdin=follower, stdout=follower, stderr=follower,
    )  # fmt: skip
    os.close(follower)
    seen = b""
    while not seen.endswith(b"you> "):  # the greeting, then the prompt: the CLI waits
        seen += os.read(leader, 1024)
    os.write(leader, b"\x04")  # Ctrl-D
    while True:
        try:
            more = os.read(leader, 1024)
        except OSError:  # EIO: the CLI exited and closed the terminal
            break
        if not more:
            break
        seen += more
    os.close(leader)
    assert chat.wait(timeout=60) == 0
    screen = seen.decode().replace("\r\n", "\n")
    assert "bot> Hello!" in screen
    assert "Traceback" not in screen
    last = screen.rstrip("\n").splitlines()[-1]
    assert HINT.fullmatch(last + "\n"), screen
