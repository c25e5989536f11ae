"""picoflow over HTTP against what a user would run instead of it: the fair anchors (issue 39).

A bare endpoint calls no model and stores nothing, so a ratio to it says little about picoflow.
The anchors here do what picoflow's `/ai/run` does for the same flow, written the way a user
would write them without picoflow (`_anchor_apps.py` has the apps):

    hand-sqlite       FastAPI + LangChain by hand, the history as one SQLite row (aiosqlite)
    hand-dict         the same with the history in a dict
    langgraph-sqlite  LangGraph, the model in one node (+ `ToolNode`), `AsyncSqliteSaver`
    langgraph-memory  the same with `InMemorySaver`

against `picoflow-sqlite` (SQLiteStore) and `picoflow-memory` (MemoryStore); `bare`, the minimal
FastAPI endpoint of `http_throughput.py`, is measured for information only. Two scenarios: `chat`
(one model call a turn) and `tool` (the model asks for `lookup`, the tool answers, the model
replies: two calls and a tool); two models: `scripted` (`ScriptedChatModel`) and `agenerate`
(a `BaseChatModel` overriding only `_agenerate`). Run by hand:

    .venv/bin/python bench/fair_anchors.py [--rounds 3] [--requests 480] [--sessions 16]
        [--scenarios chat,tool] [--models scripted,agenerate] [--targets ...]

For each scenario and model every target runs in its own process with the same uvicorn settings
and picoflow's GC settings (`picoflow/server/_heap.py`). Before anything is measured, one
session of `--check-turns` turns goes to every server and the bench compares what each server's
model was sent (role, text, tool calls and the call a tool message answers, for every call) and
the envelope it answered (keys, value types, the reply's text): a server that differs stops the
run. Then rounds, interleaved: each round sends `--requests` requests to every target (split over
`--sessions` concurrent users, one keep-alive connection each, a new session every
`--turns-per-session` turns) in an order that rotates between rounds, so a busy spell of the
host lands on all of them.

Figures: the server's CPU time per request (from /proc: what the request cost, whatever else the
host runs; the one to read on a busy 2-core machine), turns/s over the round (wall time, which
moves with whatever else gets the CPU), latency p50; and per goal the ratio of the anchor's CPU
per request to picoflow's in the same round (above 1: picoflow is cheaper). Medians over rounds.

Goals (issue 39): picoflow-sqlite >= 1.0x hand-sqlite, picoflow-memory >= 0.9x hand-dict,
>= 5x langgraph-sqlite, >= 3x langgraph-memory, in both scenarios and with both models.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import signal
import socket
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from http_throughput import Server, User, content_length, pct

ALL_TARGETS = (
    "picoflow-sqlite",
    "picoflow-memory",
    "hand-sqlite",
    "hand-dict",
    "langgraph-sqlite",
    "langgraph-memory",
    "bare",
)
# (picoflow's target, the anchor, the goal for anchor CPU / picoflow CPU); bare: information.
GOALS = (
    ("picoflow-sqlite", "hand-sqlite", 1.0),
    ("picoflow-memory", "hand-dict", 0.9),
    ("picoflow-sqlite", "langgraph-sqlite", 5.0),
    ("picoflow-memory", "langgraph-memory", 3.0),
    ("picoflow-sqlite", "bare", None),
    ("picoflow-memory", "bare", None),
)


@dataclass
class Load:
    """What one target answered in one round."""

    latencies: list[float] = field(default_factory=list)  # ms
    failures: list[str] = field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0

    @property
    def total(self) -> int:
        return len(self.latencies) + len(self.failures)


async def post(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, user: User
) -> tuple[bytes, bytes]:
    """One request on the user's connection; the reply's head and body."""
    writer.write(user.request())
    head = await reader.readuntil(b"\r\n\r\n")
    return head, await reader.readexactly(content_length(head))


async def drive(port: int, user: User, count: int, load: Load) -> None:
    """Send `count` of the user's turns one after another on one keep-alive connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for _ in range(count):
            sent = time.perf_counter()
            head, body = await post(reader, writer, user)
            if head[9:12] != b"200":
                load.failures.append(f"{head[9:12].decode()} {body[:300]!r}")
                user.answered(None)
                continue
            user.answered(json.loads(body))
            load.latencies.append((time.perf_counter() - sent) * 1000)
    finally:
        writer.close()


def users(count: int, per_session: int, prefix: str = "user") -> list[User]:
    lines = [f"{prefix} message number {n} about nothing in particular" for n in range(per_session)]
    return [User("BenchFlow", lines, per_session, None) for _ in range(count)]


async def measure(server: Server, requests: int, args: argparse.Namespace) -> Load:
    """`requests` turns over `args.sessions` users; the server's CPU and the wall time."""
    load = Load()
    group = users(args.sessions, args.turns_per_session)
    each = max(1, requests // len(group))
    cpu, start = server.cpu_seconds(), time.perf_counter()
    await asyncio.gather(*(drive(server.port, user, each, load) for user in group))
    load.wall_s = time.perf_counter() - start
    load.cpu_s = server.cpu_seconds() - cpu
    return load


# -- the servers and the equivalence check ----------------------------------------------------


async def start(target: str, tmp: str, scenario: str, model: str) -> Server:
    script = str(Path(__file__).with_name("_anchor_apps.py"))
    db = str(Path(tmp) / f"{target}-{scenario}-{model}.db")
    command = [sys.executable, script, target, "--scenario", scenario, "--model", model]
    process = await asyncio.create_subprocess_exec(
        *command, "--db", db, stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    if not line.startswith("PORT "):
        raise SystemExit(f"the {target} server did not start (it printed {line!r})")
    return Server(target, process, int(line.split()[1]))


def _same_ids(requests: list[dict[str, Any]]) -> str:
    """The requests as text, tool-call ids renamed in order of appearance (each app has its own)."""
    names: dict[str, str] = {}
    for request in requests:
        for message in request["messages"]:
            for call in message.get("tool_calls", []):
                call["id"] = names.setdefault(call["id"], f"id{len(names)}")
            if "tool_call_id" in message:
                message["tool_call_id"] = names.setdefault(message["tool_call_id"], "?")
    return json.dumps(requests, sort_keys=True)


def _shape(envelope: dict[str, Any]) -> dict[str, Any]:
    """The envelope's keys and value types, and the reply's text (which must match too)."""
    shape: dict[str, Any] = {key: type(value).__name__ for key, value in envelope.items()}
    return shape | {"message": envelope.get("message"), "step": envelope.get("step")}


async def check(servers: list[Server], turns: int) -> str:
    """One session of `turns` turns per server; stop unless all sent and answered the same."""
    seen: dict[str, tuple[str, str]] = {}
    for server in servers:
        user = users(1, turns, prefix="check")[0]
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        shapes: list[dict[str, Any]] = []
        for _ in range(turns):
            head, body = await post(reader, writer, user)
            if head[9:12] != b"200":
                raise SystemExit(f"{server.target} failed the check: {body[:300]!r}")
            envelope = json.loads(body)
            shapes.append(_shape(envelope))
            user.answered(envelope)
        writer.close()
        asked = [] if server.target == "bare" else await server.get_json("/_bench/requests")
        seen[server.target] = (_same_ids(asked), json.dumps(shapes, sort_keys=True))
    reference = next(t for t in seen if t != "bare")
    for target, (sent, shapes) in seen.items():
        if target != "bare" and sent != seen[reference][0]:
            raise SystemExit(
                f"{target} sent its model other requests than {reference}:\n"
                f"{sent[:2000]}\n---\n{seen[reference][0][:2000]}"
            )
        if target != "bare" and shapes != seen[reference][1]:
            raise SystemExit(
                f"{target} answered {shapes} where {reference} answered {seen[reference][1]}"
            )
    calls = len(json.loads(seen[reference][0]))
    return f"equivalence: {calls} model calls and {turns} envelopes identical on every server"


# -- rounds and the report ---------------------------------------------------------------------


@dataclass
class Row:
    """One target's figures in one configuration, one entry per round."""

    cpu_ms: list[float] = field(default_factory=list)
    rate: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


async def configuration(
    scenario: str, model: str, targets: list[str], args: argparse.Namespace
) -> dict[str, Row]:
    """Start the targets' servers for one scenario and model, check them, run the rounds."""
    with tempfile.TemporaryDirectory() as tmp:
        servers = list(await asyncio.gather(*(start(t, tmp, scenario, model) for t in targets)))
        try:
            print(f"[{scenario}, {model}] {await check(servers, args.check_turns)}", flush=True)
            for server in servers:  # caches, lazy imports, the first sessions: not measured
                await measure(server, args.warmup, args)
            rows = {server.target: Row() for server in servers}
            for number in range(args.rounds):
                shift = number % len(servers)
                for server in servers[shift:] + servers[:shift]:
                    load = await measure(server, args.requests, args)
                    row = rows[server.target]
                    row.cpu_ms.append(load.cpu_s * 1000 / max(load.total, 1))
                    row.rate.append(load.total / load.wall_s)
                    row.p50.append(pct(load.latencies, 0.5))
                    row.failures += load.failures[:3]
                cpus = ", ".join(f"{t} {r.cpu_ms[-1]:.2f}" for t, r in rows.items())
                print(
                    f"  round {number + 1} ({time.strftime('%H:%M:%S')}) CPU ms/req: {cpus}",
                    flush=True,
                )
        finally:
            for server in servers:
                server.process.send_signal(signal.SIGINT)
                await server.process.wait()
    return rows


def ratio(rows: dict[str, Row], ours: str, anchor: str, column: str) -> float | None:
    """Median over rounds of the in-round ratio: anchor CPU / ours, or our turns/s / anchor's."""
    if ours not in rows or anchor not in rows:
        return None
    a, b = getattr(rows[anchor], column), getattr(rows[ours], column)
    pairs = zip(a, b, strict=True) if column == "cpu_ms" else zip(b, a, strict=True)
    return statistics.median(x / y for x, y in pairs)


def report(results: dict[tuple[str, str], dict[str, Row]], args: argparse.Namespace) -> None:
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"\nload average at the end: {load} (on {os.cpu_count()} CPUs)")
    print(
        f"\n{args.rounds} interleaved rounds of {args.requests} requests per target, "
        f"{args.sessions} users, sessions of {args.turns_per_session} turns; medians over rounds"
    )
    for (scenario, model), rows in results.items():
        print(f"\n[{scenario}, {model}]  {'CPU ms/req':>10} {'turns/s':>8} {'p50 ms':>7}")
        for target, row in rows.items():
            med = [statistics.median(v) for v in (row.cpu_ms, row.rate, row.p50)]
            print(f"  {target:<17} {med[0]:>10.2f} {med[1]:>8.0f} {med[2]:>7.1f}")
            for failure in row.failures[:3]:
                print(f"    FAILED: {failure}")
    print("\n| picoflow against | goal | " + " | ".join(f"{s}, {m}" for s, m in results) + " |")
    print("|---|---|" + "---|" * len(results))
    for ours, anchor, goal in GOALS:
        cells = []
        for rows in results.values():
            cpu, rate = ratio(rows, ours, anchor, "cpu_ms"), ratio(rows, ours, anchor, "rate")
            if cpu is None or rate is None:
                cells.append("-")
                continue
            miss = " (below)" if goal is not None and cpu < goal else ""
            cells.append(f"{cpu:.2f}{miss} (turns/s {rate:.2f})")
        label = f"{anchor} ({ours.split('-')[1]})"
        print(
            f"| {label} | {'info' if goal is None else f'≥ {goal:g}'} | " + " | ".join(cells) + " |"
        )


def require_dev_extra() -> None:
    """Fail here, with the fix, rather than as a child server that prints nothing."""
    for name in ("langgraph", "langgraph.checkpoint.sqlite", "aiosqlite", "uvicorn", "fastapi"):
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise SystemExit(
                f"bench/fair_anchors.py needs the dev extra ({name} is missing): "
                ".venv/bin/pip install -e '.[dev]'"
            )


async def run(args: argparse.Namespace) -> None:
    require_dev_extra()
    targets = list(dict.fromkeys(args.targets.split(",")))
    unknown = sorted(set(targets) - set(ALL_TARGETS))
    if unknown:
        raise SystemExit(f"unknown targets {unknown}; choose from {', '.join(ALL_TARGETS)}")
    results = {}
    for scenario in args.scenarios.split(","):
        for model in args.models.split(","):
            results[(scenario, model)] = await configuration(scenario, model, targets, args)
    report(results, args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--targets", default=",".join(ALL_TARGETS))
    add("--scenarios", default="chat,tool")
    add("--models", default="scripted,agenerate")
    add("--rounds", type=int, default=3)
    add("--requests", type=int, default=480, help="per target per round")
    add("--warmup", type=int, default=96, help="requests per target before the rounds")
    add("--sessions", type=int, default=16, help="concurrent users, one connection each")
    add("--turns-per-session", type=int, default=10, help="then a user starts a new session")
    add("--check-turns", type=int, default=3, help="turns of the equivalence check")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
