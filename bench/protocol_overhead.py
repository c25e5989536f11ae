"""What the front-end protocols cost over `POST /ai/stream` for the same turn (G1-G3).

Each turn runs one tool call and streams a reply of `--tokens` words from an instant model,
through the ASGI app (no sockets, so the server's own work is what is timed), in one
conversation per route that grows by a turn each time, as a chat does. The routes:

- `/ai/stream`: picoflow's own SSE, the floor (its events kept for reconnects, O5).
- `/ag-ui/{flow}`: AG-UI 1.0 events made with `ag-ui-protocol`'s classes and encoder; per turn
  it also reads the thread's binding and, after the turn, the session (tool results, state).
- `/ai-sdk/{flow}`: the AI SDK's UI message stream; the same extra reads.

The routes run interleaved (one run of each, then the next round), so a busy moment of the
host hits all of them. Reported, medians over `--rounds` runs: the process's CPU time per turn
(background writes included) and the overhead over `/ai/stream`. Goal (issue 37): <= 10 %.

    PYTHONPATH=. .venv/bin/python bench/protocol_overhead.py [--turns 100] [--rounds 5]

CPU time on a shared host moves 20-30 % between runs, more than the overhead measured.
`--instructions` counts instructions instead (valgrind's callgrind, exact and repeatable): each
route runs in a child process for `--turns` and three times as many turns; the difference over
the extra turns is one turn's count, without start-up (the in-process client's share included,
the same for every route). Slow: several minutes.

    PYTHONPATH=. .venv/bin/python bench/protocol_overhead.py --instructions --turns 8
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel, tool_call


def flow_of(tokens: int) -> type[Flow]:
    """A step whose model calls `note` once per user message, then says `tokens` words."""
    reply = " ".join(f"word{n}" for n in range(tokens))

    def policy(messages: list[Any], tools: list[str]) -> Any:
        return reply if messages[-1].type == "tool" else tool_call("note", text="x")

    model = ScriptedChatModel(policy=policy)

    class TalkStep(Step):
        @tool
        def note(self, text: str) -> str:
            """Note something the user said."""
            return f"noted {text}"

    class TalkFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [TalkStep(self)]

    return TalkFlow


Body = Callable[[int], tuple[str, dict[str, Any], dict[str, str]]]


def ai_stream(session: dict[str, str]) -> Body:
    def body(n: int) -> tuple[str, dict[str, Any], dict[str, str]]:
        return "/ai/stream", {"flowName": "TalkFlow", "message": f"hi {n}"}, session

    return body


def ag_ui(n: int) -> tuple[str, dict[str, Any], dict[str, str]]:
    messages = [{"id": f"u{n}", "role": "user", "content": f"hi {n}"}]
    return (
        "/ag-ui/TalkFlow",
        {"threadId": "bench-thread", "runId": f"r{n}", "messages": messages},
        {},
    )


def ai_sdk(n: int) -> tuple[str, dict[str, Any], dict[str, str]]:
    message = {"id": f"m{n}", "role": "user", "parts": [{"type": "text", "text": f"hi {n}"}]}
    return "/ai-sdk/TalkFlow", {"id": "bench-chat-0000", "messages": [message]}, {}


async def run(route: str, store: Any, turns: int, tokens: int) -> float:
    """CPU ms per turn of `route`, background work (kept streams) included."""
    engine = FlowEngine(flows=[flow_of(tokens)], store=store)
    app = create_app(engine)
    keeper = app.state.picoflow.streams
    session: dict[str, str] = {}
    bodies: dict[str, Body] = {"stream": ai_stream(session), "ag-ui": ag_ui, "ai-sdk": ai_sdk}
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
        for n in range(turns + 10):
            if n == 10:  # after the warm-up
                cpu = time.process_time()
            path, body, headers = bodies[route](n)
            reply = await client.post(path, json=body, headers=headers)
            assert reply.status_code == 200 and "word0" in reply.text, reply.text[:300]
            if route == "stream" and not session:
                session["CHAT_SESSION_ID"] = reply.text.split('"session": "')[1].split('"')[0]
        while keeper.live:  # the last batches are written after the reply ends
            await asyncio.sleep(0.01)
        cpu = (time.process_time() - cpu) / turns * 1000
    await engine.aclose()
    return cpu


ROUTES = ["stream", "ag-ui", "ai-sdk"]


def instructions(turns: int, tokens: int) -> None:
    """Instructions per turn of each route, memory store, from two callgrind runs each."""
    per_turn: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as folder:
        for route in ROUTES:
            counts = [_counted(route, n, tokens, Path(folder)) for n in (turns, 3 * turns)]
            per_turn[route] = (counts[1] - counts[0]) / (2 * turns)
    for route, count in per_turn.items():
        extra = 100 * (count / per_turn["stream"] - 1)
        shown = "" if route == "stream" else f"  {extra:+5.1f} % over /ai/stream"
        print(f"memory  {route:7} {count / 1e6:7.2f} M instructions/turn{shown}")


def _counted(route: str, turns: int, tokens: int, folder: Path) -> int:
    out = folder / f"callgrind.{route}.{turns}"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable]
    command += [__file__, "--child", route, "--turns", str(turns), "--tokens", str(tokens)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"valgrind printed no count for {route}: {done.stderr[-500:]}")
    return int(found.group(1))


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=100)
    parser.add_argument("--tokens", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each, interleaved")
    parser.add_argument("--instructions", action="store_true", help="count with callgrind")
    parser.add_argument("--child", choices=ROUTES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:  # one route's turns, for `instructions`
        await run(args.child, MemoryStore(), args.turns, args.tokens)
        return
    if args.instructions:
        if shutil.which("valgrind") is None:
            raise SystemExit("valgrind is not installed: --instructions counts with it.")
        instructions(args.turns, args.tokens)
        return
    routes = ROUTES
    found: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for round_ in range(args.rounds):
            for name in ("memory", "sqlite"):
                for route in routes:
                    path = Path(folder) / f"{round_}-{route}.db"
                    store = MemoryStore() if name == "memory" else SQLiteStore(path)
                    cpu = await run(route, store, args.turns, args.tokens)
                    found.setdefault((name, route), []).append(cpu)
    for (name, route), runs in found.items():
        cpu, floor = statistics.median(runs), statistics.median(found[(name, "stream")])
        extra = "" if route == "stream" else f"  {100 * (cpu / floor - 1):+5.1f} % over /ai/stream"
        print(f"{name:7} {route:7} {cpu:6.2f} ms CPU/turn{extra}")


if __name__ == "__main__":
    asyncio.run(main())
