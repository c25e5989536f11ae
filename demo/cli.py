"""``python -m demo``: chat with HotelFlow in a terminal, replay a script, or serve it over HTTP.

Defaults need no network and no key: sessions go to ``.picoflow/sessions.db`` (SQLite) and,
without ``OPENAI_API_KEY``, the offline demo model plays the LLM. ``--script FILE`` replays the
file's lines (blank lines and ``#`` comments skipped) and prints the transcript; piping lines into
stdin does the same. Typing ``quit``, ending the input (Ctrl-D) or pressing Ctrl-C leaves and
keeps the session, and the CLI prints the exact command that resumes it; a conversation that
reaches its end prints the closing line and stops.

The person chatting is ``--user NAME`` (default: the login name), the session's
``config.user_id``: HotelFlow remembers their usual room on the store between sessions and offers
it again; "forget what you know about me" deletes it, and ``--anonymous`` remembers nothing.

Every option either works with ``--serve`` or is refused with a message saying why, before
anything starts; the exit status is 2 for a bad command line (argparse's convention), 1 when the
first turn fails, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import getpass
import json
import logging
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from demo.hotel.flow import OFFLINE_MODEL, HotelFlow, default_model
from demo.hotel.offline.model import ANNOUNCEMENT
from demo.ported import PORTED_FLOWS, offline_provider
from picoflow import Flow, FlowDefinitionError, FlowEngine, StreamEvent, TurnResult
from picoflow.stores import MemoryStore, SQLiteStore, from_url

FLOW = "HotelFlow"
FLOWS: dict[str, type[Flow]] = {"HotelFlow": HotelFlow, **{f.name: f for f in PORTED_FLOWS}}
"""Every demo flow: the CLI chats with one (``--flow``), resumes any, and serves them all."""
DEFAULT_STORE = Path(".picoflow") / "sessions.db"
LEAVE_WORDS = {"quit", "exit"}
INTERRUPTED = 130  # the shell's status for a process ended by Ctrl-C (128 + SIGINT)

API_KEYS = {
    "openai": "OPENAI_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "google_genai": "GOOGLE_API_KEY",
    "deepseek": "DEEPSEEK_API_KEY",
    "openrouter": "OPENROUTER_API_KEY",
}
"""The environment variable each keyed provider's client reads, checked before the chat starts:
the engine leaves a missing credential to the first model call (a server may never need it),
but a chat makes that call at once, and its failure would be a long provider error."""

MAKE_ENV = "DEMO_VIA_MAKE"
"""Set by the Makefile, so the resume hint is a ``make demo`` command that works from the repo."""

PLAIN_SYMBOLS = str.maketrans({"✅": "yes", "❌": "no"})
"""Emoji a terminal without an emoji font draws as empty boxes, and the words they stand for."""

_ORIGIN = re.compile(r"^https?://[^/\s?#]+$")


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
    add(
        "--flow",
        choices=list(FLOWS),
        default=FLOW,
        help=f"the demo to chat with (default: {FLOW}); PicoFlow's BasicFlow, MedicalFlow, "
        "TravelFlow and its four later demos (DecisionHotelFlow, DecisionSupportFlow, "
        "EmployeeBenefitsFlow, HomeInsuranceQuoteFlow) are ported too. --serve serves them all",
    )
    add("--store", help=f"memory:, sqlite:///PATH or mongodb://... (default: {DEFAULT_STORE})")
    add("--session", metavar="ID", help="resume this session (--session=ID if ID starts with -)")
    add("--script", metavar="FILE", type=Path, help="replay the file's lines, print the transcript")
    add(
        "--user",
        metavar="NAME",
        help="who is chatting, so HotelFlow remembers your usual room from one session to the "
        "next (default: your login name); say 'forget what you know about me' to delete it",
    )
    add("--anonymous", action="store_true", help="chat as nobody: nothing is remembered")
    add("--debug", action="store_true", help="show step changes, tool calls and compactions")
    add("--today", type=_iso_date, help="today's date as YYYY-MM-DD (reproducible transcripts)")
    add("--serve", action="store_true", help="serve the flow over HTTP instead of chatting")
    add("--host", help="--serve address (default: 127.0.0.1)")
    add("--port", type=int, help="--serve port (default: 8000)")
    add(
        "--cors-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="--serve: let browser pages of this origin (e.g. http://localhost:5173, or *) "
        "call the API; repeat for more origins",
    )
    return parser.parse_args(argv)


def _iso_date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date as YYYY-MM-DD, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    """Run the command line; the exit status."""
    args = parse_args(argv)
    model = args.model or default_model()
    problem = option_problem(args) or key_problem(model)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    try:
        store = from_url(args.store) if args.store else SQLiteStore(DEFAULT_STORE)
        engine = FlowEngine(demo_flows(model), store=store, providers={"offline": offline_provider})
    except (FlowDefinitionError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(ANNOUNCEMENT if model.startswith("offline:") else f"Model: {model}", flush=True)
    if args.serve:
        return serve(engine, args)
    _quiet_library_logs(args.debug)
    return Chat(engine, args, resumable=not isinstance(store, MemoryStore)).run()


def demo_flows(model: str) -> list[type[Flow]]:
    """Every demo flow bound to `model`; the ported ones keep their own offline model when the
    model is the hotel's offline one (each demo has its own rules)."""
    return [HotelFlow.using(model)] + [
        flow if model == OFFLINE_MODEL else flow.using(model)  # type: ignore[attr-defined]
        for flow in PORTED_FLOWS
    ]


DATED_FLOWS = (
    FLOW,
    "TravelFlow",
    "DecisionHotelFlow",
    "EmployeeBenefitsFlow",
    "HomeInsuranceQuoteFlow",
)
"""The demos that read dates, and so the date `--today` fixes (issue 35: else the real date)."""


def option_problem(args: argparse.Namespace) -> str | None:
    """Why these options cannot run together, or None; checked before anything starts."""
    if args.today is not None and args.flow not in DATED_FLOWS:
        return (
            f"--today only applies to --flow {', '.join(DATED_FLOWS)}: the other demos do not use "
            "dates."
        )
    if args.user is not None and args.anonymous:
        return "--user and --anonymous contradict each other; give one of them."
    if args.user is not None and not args.user.strip():
        return "--user needs a name; leave it out to be your login name, or use --anonymous."
    if args.serve:
        for flag, given, why in (
            ("--script", args.script, "it replays a chat in the terminal"),
            ("--session", args.session, "it resumes a chat in the terminal; over HTTP each "
             "client sends its session id with its messages"),
            ("--today", args.today, "it fixes the date of a chat in the terminal; over HTTP a "
             'client sends it with its first message as "config": {"today": "YYYY-MM-DD"}'),
            ("--user", args.user, "over HTTP the guest is the signed-in principal, or the "
             '"config": {"user_id": ...} a client sends with its first message'),
            ("--anonymous", args.anonymous or None, "over HTTP a client that sends no user "
             "and is not signed in is anonymous already"),
        ):  # fmt: skip
            if given is not None:
                return f"{flag} cannot be combined with --serve: {why}."
        return _serve_problem(args)
    serve_only = [
        name for name, value in (("--host", args.host), ("--port", args.port)) if value is not None
    ] + (["--cors-origin"] if args.cors_origin else [])
    if serve_only:
        verb, them = ("applies", "it") if len(serve_only) == 1 else ("apply", "them")
        given = " and ".join(serve_only)
        return f"{given} only {verb} to --serve; add --serve or leave {them} out."
    if args.script is not None and not args.script.is_file():
        return f"--script {args.script}: no such file."
    return None


def _serve_problem(args: argparse.Namespace) -> str | None:
    if args.port is not None and not 1 <= args.port <= 65535:
        return f"--port {args.port}: a port is a number from 1 to 65535."
    for origin in args.cors_origin:
        if origin != "*" and not _ORIGIN.match(origin):
            return (
                f"--cors-origin {origin}: an origin is scheme://host[:port] with no path, "
                "e.g. http://localhost:5173, or * for any origin."
            )
    return None


def key_problem(model: str) -> str | None:
    """A keyed provider without its key, said in one line instead of the first turn's traceback."""
    provider = model.split(":", 1)[0]
    variable = API_KEYS.get(provider)
    if variable is None or os.environ.get(variable):
        return None
    local = ""
    if provider == "openai":
        local = " (any value works for a local server at OPENAI_BASE_URL)"
    return (
        f"--model {model} needs an API key: set {variable}{local}, "
        "or leave --model out to chat with the offline demo model."
    )


def serve(engine: FlowEngine, args: argparse.Namespace) -> int:
    """Serve the engine with picoflow's HTTP server (needs the ``server`` extra)."""
    try:
        import uvicorn

        from picoflow.server import create_app
    except ImportError as exc:
        print(f"error: --serve needs pip install 'picoflow[server]' ({exc})", file=sys.stderr)
        return 2
    if args.debug:  # the server log shows every model call, tool call and failed turn (E3)
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        logging.getLogger("picoflow").addHandler(handler)
        logging.getLogger("picoflow").setLevel(logging.INFO)
    app = create_app(engine, cors_origins=args.cors_origin)
    uvicorn.run(app, host=args.host or "127.0.0.1", port=args.port or 8000)
    return 0


def _quiet_library_logs(debug: bool) -> None:
    """Keep picoflow's log records (a failed turn's traceback) out of the chat unless debugging.

    The chat prints each turn's error and warnings itself; without any handler, Python's
    last-resort handler would print the library's records, tracebacks included, in between.
    """
    library = logging.getLogger("picoflow")
    if debug:
        if not any(isinstance(h, logging.StreamHandler) for h in library.handlers):
            library.addHandler(logging.StreamHandler())
    elif not any(isinstance(h, logging.NullHandler) for h in library.handlers):
        library.addHandler(logging.NullHandler())


class Chat:
    """One terminal conversation: greet or resume, then one turn per line of input."""

    def __init__(self, engine: FlowEngine, args: argparse.Namespace, *, resumable: bool) -> None:
        self.engine = engine
        self.flow: str = args.flow
        self.debug: bool = args.debug
        user = None if args.anonymous else args.user or local_user()
        config = {"today": args.today} if args.today else {}
        self.config = {**config, "user_id": user} if user else config or None
        self.script: Path | None = args.script
        self.session_id: str | None = args.session
        self.resumable = resumable
        self.options = [f"--{name}={value}" for name in ("store", "model", "user")
                        if (value := getattr(args, name)) is not None]  # fmt: skip
        self.options += ["--anonymous"] if args.anonymous else []

    def run(self) -> int:
        """Chat until the conversation completes, the input ends, or the guest quits or Ctrl-Cs.

        One event loop serves every turn, and input is read on the main thread between turns,
        so Ctrl-C reaches the chat wherever it is pressed, and no reader thread is left
        blocked on stdin when the CLI exits.
        """
        with asyncio.Runner() as runner:
            try:
                return self._talk(runner)
            except KeyboardInterrupt:
                print()
                self.leave()
                return INTERRUPTED
            finally:
                runner.run(self.engine.aclose())

    def _talk(self, runner: asyncio.Runner) -> int:
        if not runner.run(self.resume()):
            greeting = runner.run(self.turn(""))  # a new session: the assistant speaks first
            if not greeting.success:
                return 1  # nothing was saved, so there is nothing to resume
        for line in self.lines():
            result = runner.run(self.turn(line))
            if result.completed:
                note(f"Session {result.session_id} is complete.")
                return 0
        self.leave()
        return 0

    def leave(self) -> None:
        """Say how to come back to the session, or that it cannot be."""
        if self.session_id is None:
            return
        if not self.resumable:
            note(f"Session {self.session_id} ends here: the memory: store keeps nothing "
                 "after the CLI exits.")  # fmt: skip
            return
        note(f"Session saved. Resume it with: {resume_command(self.session_id, self.options)}")

    async def resume(self) -> bool:
        """Continue ``--session``, if it is still running."""
        if self.session_id is None:
            return False
        doc = await self.engine.get_session(self.session_id)
        if doc is None or doc["run_status"] != "running":
            note(f"No running session {self.session_id}; starting a new one.")
            self.session_id = None
            return False
        self.flow = doc["flow"]  # a session knows its flow; --flow picks only a new one's
        note(f"Resuming session {self.session_id} at {doc['current_step']}.")
        return True

    async def turn(self, message: str) -> TurnResult:
        """One turn, streamed when debugging so that events show as they happen."""
        if self.debug:
            result = await self.streamed(message)
        else:
            result = await self.engine.run(self.flow, message, self.session_id, self.config)
        for warning in result.warnings:
            note(f"warning: {warning}")
        if not result.success:
            note(f"error: {result.message}")
            return result
        self.session_id = result.session_id
        show("bot> ", result.message)
        return result

    async def streamed(self, message: str) -> TurnResult:
        async for event in self.engine.stream(self.flow, message, self.session_id, self.config):
            if event.result is not None:
                return event.result
            if event.kind != "token":
                print(f"  · {describe(event)}", flush=True)
        raise RuntimeError("the stream ended without a result")  # FlowEngine.stream never does

    def lines(self) -> Iterator[str]:
        """The guest's lines: from the script, typed at a terminal, or piped into stdin."""
        if self.script is None:
            yield from _lines_of(None if sys.stdin.isatty() else sys.stdin)
            return
        with self.script.open(encoding="utf-8") as script:
            yield from _lines_of(script)


def local_user() -> str | None:
    """The login name: a person who runs the demo again on the same store is recognised.

    None where the system has no name for the process (a container without a user entry).
    """
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):
        return None


def resume_command(session_id: str, options: list[str]) -> str:
    """The command that continues this session the way the CLI was started.

    After ``make demo`` that is ``make demo ARGS="..."`` (a bare ``python`` is not the venv's);
    otherwise the interpreter that runs now, as a path that works from this directory.
    """
    args = [shlex.quote(arg) for arg in (f"--session={session_id}", *options)]
    joined = " ".join(args)
    if os.environ.get(MAKE_ENV) and not any(c in joined for c in '"$`\\'):
        return f'make demo ARGS="{joined}"'
    return f"{_python()} -m demo {joined}"


def _python() -> str:
    """``sys.executable`` as the shortest spelling that runs the same interpreter from here."""
    executable = sys.executable
    relative = os.path.relpath(executable)
    if not relative.startswith(os.pardir):
        return shlex.quote(relative if os.sep in relative else os.path.join(os.curdir, relative))
    name = os.path.basename(executable)
    found = shutil.which(name)
    if found is not None and os.path.realpath(found) == os.path.realpath(executable):
        return name
    return shlex.quote(executable)


def _lines_of(source: TextIO | None) -> Iterator[str]:
    """Lines to send, echoed when they do not come from a person typing them."""
    while True:
        line = _read(source)
        if line is None:
            return
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        if source is not None:
            print(f"you> {text}", flush=True)
        if text.lower() in LEAVE_WORDS:
            return
        yield text


def _read(source: TextIO | None) -> str | None:
    """The next line; None at the end of the input (Ctrl-D at a terminal)."""
    if source is None:
        try:
            return input("you> ")
        except EOFError:
            print()
            return None
    line = source.readline()
    return line if line else None


def show(prefix: str, text: str) -> None:
    """Print a reply, continuation lines indented under its first line, emoji as words."""
    first, *rest = text.translate(PLAIN_SYMBOLS).splitlines() or [""]
    print(prefix + first)
    for line in rest:
        print((" " * len(prefix) + line).rstrip())
    sys.stdout.flush()  # a reader of a pipe sees each reply as it is given


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
    print(text, file=sys.stderr, flush=True)
