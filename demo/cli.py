"""``python -m demo``: chat with HotelFlow in a terminal, replay a script, or serve it over HTTP.

Defaults need no network and no key: sessions go to ``.picoflow/sessions.db`` (SQLite) and,
without ``OPENAI_API_KEY``, the offline demo model plays the LLM. ``--script FILE`` replays the
file's lines (blank lines and ``#`` comments skipped) and prints the transcript; piping lines into
stdin does the same. Typing ``quit`` (or EOF) leaves and keeps the session, to be resumed with
``--session ID``; a conversation that reaches its end prints the closing line and stops.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from demo.hotel.flow import PROVIDERS, HotelFlow, default_model
from demo.hotel.offline_model import ANNOUNCEMENT
from picoflow import FlowDefinitionError, FlowEngine, StreamEvent, TurnResult
from picoflow.stores import SQLiteStore, from_url

FLOW = "HotelFlow"
DEFAULT_STORE = Path(".picoflow") / "sessions.db"
LEAVE_WORDS = {"quit", "exit"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; see ``python -m demo --help``."""
    parser = argparse.ArgumentParser(
        prog="python -m demo", description="Chat with HotelFlow, a picoflow demo."
    )
    add = parser.add_argument
    add(
        "--model",
        help="provider:name, e.g. openai:gpt-4o-mini (default: offline:hotel "
        "without OPENAI_API_KEY, else openai:gpt-4o-mini); OPENAI_BASE_URL is honoured",
    )
    add("--store", help=f"memory:, sqlite:///PATH or mongodb://... (default: {DEFAULT_STORE})")
    add("--session", metavar="ID", help="resume this session (--session=ID if ID starts with -)")
    add("--script", metavar="FILE", type=Path, help="replay the file's lines, print the transcript")
    add("--debug", action="store_true", help="show step changes, tool calls and compactions")
    add("--today", type=_iso_date, help="today's date as YYYY-MM-DD (reproducible transcripts)")
    add("--serve", action="store_true", help="serve the flow over HTTP instead of chatting")
    add("--host", default="127.0.0.1", help="--serve address (default: 127.0.0.1)")
    add("--port", type=int, default=8000, help="--serve port (default: 8000)")
    return parser.parse_args(argv)


def _iso_date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit status."""
    args = parse_args(argv)
    if args.script is not None and not args.script.is_file():
        print(f"error: --script {args.script}: no such file", file=sys.stderr)
        return 2
    model = args.model or default_model()
    try:
        store = from_url(args.store) if args.store else SQLiteStore(DEFAULT_STORE)
        engine = FlowEngine([HotelFlow.using(model)], store=store, providers=PROVIDERS)
    except (FlowDefinitionError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(ANNOUNCEMENT if model.startswith("offline:") else f"Model: {model}")
    if args.serve:
        return serve(engine, args.host, args.port)
    return asyncio.run(Chat(engine, args).run())


def serve(engine: FlowEngine, host: str, port: int) -> int:
    """Serve the engine with picoflow's HTTP server (needs the ``server`` extra)."""
    try:
        import uvicorn

        from picoflow.server import create_app
    except ImportError as exc:
        print(f"error: --serve needs pip install 'picoflow[server]' ({exc})", file=sys.stderr)
        return 2
    uvicorn.run(create_app(engine), host=host, port=port)
    return 0


class Chat:
    """One terminal conversation: greet or resume, then one turn per line of input."""

    def __init__(self, engine: FlowEngine, args: argparse.Namespace) -> None:
        self.engine = engine
        self.debug: bool = args.debug
        self.config = {"today": args.today} if args.today else None
        self.script: Path | None = args.script
        self.session_id: str | None = args.session

    async def run(self) -> int:
        """Chat until the conversation completes, the input ends or the guest types quit."""
        try:
            if not await self.resume():
                await self.turn("")  # a new session: the assistant speaks first
            async for line in self.lines():
                result = await self.turn(line)
                if result.completed:
                    note(f"Session {result.session_id} is complete.")
                    return 0
            note(f"Session saved. Resume it with: python -m demo --session={self.session_id}")
            return 0
        finally:
            await self.engine.aclose()

    async def resume(self) -> bool:
        """Continue ``--session``, if it is still running."""
        if self.session_id is None:
            return False
        doc = await self.engine.get_session(self.session_id)
        if doc is None or doc["run_status"] != "running":
            note(f"No running session {self.session_id}; starting a new one.")
            self.session_id = None
            return False
        note(f"Resuming session {self.session_id} at {doc['current_step']}.")
        return True

    async def turn(self, message: str) -> TurnResult:
        """One turn, streamed when debugging so that events show as they happen."""
        if self.debug:
            result = await self.streamed(message)
        else:
            result = await self.engine.run(FLOW, message, self.session_id, self.config)
        for warning in result.warnings:
            note(f"warning: {warning}")
        if not result.success:
            note(f"error: {result.message}")
            return result
        self.session_id = result.session_id
        show("bot> ", result.message)
        return result

    async def streamed(self, message: str) -> TurnResult:
        async for event in self.engine.stream(FLOW, message, self.session_id, self.config):
            if event.result is not None:
                return event.result
            if event.kind != "token":
                print(f"  · {describe(event)}")
        raise RuntimeError("the stream ended without a result")  # FlowEngine.stream never does

    async def lines(self) -> AsyncIterator[str]:
        """The guest's lines: from the script, typed at a terminal, or piped into stdin."""
        if self.script is None:
            source = None if sys.stdin.isatty() else sys.stdin
            async for line in _lines_of(source):
                yield line
            return
        with self.script.open(encoding="utf-8") as script:
            async for line in _lines_of(script):
                yield line


async def _lines_of(source: TextIO | None) -> AsyncIterator[str]:
    """Lines to send, echoed when they do not come from a person typing them."""
    while True:
        line = await asyncio.to_thread(_read, source)
        if line is None:
            return
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if source is not None:
            print(f"you> {text}")
        if text.lower() in LEAVE_WORDS:
            return
        yield text


def _read(source: TextIO | None) -> str | None:
    """The next line; None at the end of the input."""
    if source is None:
        try:
            return input("you> ")
        except (EOFError, KeyboardInterrupt):
            print()
            return None
    line = source.readline()
    return line if line else None


def show(prefix: str, text: str) -> None:
    """Print a reply, continuation lines indented under its first line."""
    first, *rest = text.splitlines() or [""]
    print(prefix + first)
    for line in rest:
        print((" " * len(prefix) + line).rstrip())


def describe(event: StreamEvent) -> str:
    """A debug line for a stream event."""
    data = event.data
    if event.kind == "step_changed":
        return f"step {data['from']} → {data['to']}"
    if event.kind == "tool_call":
        return f"tool {data['step']}.{data['name']}({_compact(data['args'])})"
    if event.kind == "compaction":
        details = {k: v for k, v in data.items() if k not in ("namespace", "outcome")}
        extra = f" {_compact(details)}" if details else ""
        return f"compaction {data.get('namespace')}: {data.get('outcome')}{extra}"
    return f"{event.kind} {_compact(data)}"


def _compact(value: Any) -> str:
    """JSON without the nulls and empty lists that make tool arguments hard to read."""
    if isinstance(value, dict):
        value = {k: v for k, v in value.items() if v not in (None, [], {}, "")}
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def note(text: str) -> None:
    """Session bookkeeping goes to stderr, so stdout stays a clean transcript."""
    print(text, file=sys.stderr)
