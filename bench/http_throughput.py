"""Turns per second through `create_app` under uvicorn, against a bare FastAPI endpoint.

Each server runs in its own process on 127.0.0.1 (see `_http_servers.py`); the load client runs
in this one. Rounds are interleaved: every round measures every target once, in an order that
rotates, so a busy host slows all targets alike and the ratios stay meaningful when the absolute
numbers do not. Run by hand:

    .venv/bin/python bench/http_throughput.py [--rounds 5] [--seconds 3] [--sessions 32]

Targets:
    memory, sqlite  `create_app` over a one-step flow whose chat model answers at once (a
                    trivial `BaseChatModel`; `--model scripted` uses a `ScriptedChatModel`
                    policy instead). Each simulated user starts a new session every
                    `--turns-per-session` turns.
    bare            A minimal FastAPI endpoint: the raw body parsed with the same pydantic
                    model (`model_validate_json`), the same envelope and headers returned,
                    no dependencies: the web stack's own cost (issue 24).
    demo            `make serve`'s app: HotelFlow with its offline model, on SQLite, each user
                    playing demo/hotel/scripts/tour.txt.
    raw             A canned reply from a bare asyncio server: what the client itself can drive.
                    It must stay far above `bare`, or the client is the limit.

The client is minimal on purpose: one keep-alive connection per user, `TCP_NODELAY`, each request
sent with one `write`, replies read by `Content-Length` (issue 11 found one pooled
`httpx.AsyncClient` topping out near 500 requests/s on these machines, below what `bare` serves).

Columns: turns/s in the measured window; ratio to `bare` in the same round; latency p50/p99;
the server's CPU time per request (from /proc, whatever else the host runs) and the ratio of
`bare`'s CPU per request to it (the throughput ratio if each server had a core to itself); the
server's garbage collections (CPU time per request, the longest one, full collections). Each is
the median over rounds. `--no-gc-tuning` serves as before the app settled the collector.

Budget (issue 11): turns/s at least 0.35x `bare` with MemoryStore and 0.3x with SQLite (aim 0.5),
and p99 latency at most 3x p50.
Budget (issue 24): at least 0.5x the minimal `bare` on both stores. On a host whose two cores
also run the client and other work, "CPU ratio" is the figure to read: the throughput ratio
moves with whatever else gets the CPU.
"""

from __future__ import annotations

import argparse
import asyncio
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

ROOT = Path(__file__).parents[1]
TOUR = ROOT / "demo" / "hotel" / "scripts" / "tour.txt"
TARGETS = ("memory", "sqlite", "bare", "demo", "raw")
_TICKS = os.sysconf("SC_CLK_TCK")


# -- the load client ---------------------------------------------------------------------------


class User:
    """One simulated user: the messages it sends, and when it starts a new session."""

    def __init__(self, flow: str, lines: list[str], per_session: int, config: Any) -> None:
        self.flow, self.lines, self.per_session, self.config = flow, lines, per_session, config
        self.session: str | None = None
        self.turn = 0

    def request(self) -> bytes:
        body: dict[str, Any] = {"flowName": self.flow, "message": self.lines[self.turn]}
        if self.session is None and self.config:
            body["config"] = self.config
        data = json.dumps(body).encode()
        head = [
            "POST /ai/run HTTP/1.1",
            "Host: 127.0.0.1",
            "Content-Type: application/json",
            f"Content-Length: {len(data)}",
        ]
        if self.session is not None:
            head.append(f"CHAT_SESSION_ID: {self.session}")
        return ("\r\n".join(head) + "\r\n\r\n").encode() + data

    def answered(self, envelope: dict[str, Any] | None) -> None:
        """Continue the session, or start over after a failure, its end or enough turns."""
        self.turn += 1
        done = envelope is None or envelope["completed"] or self.turn >= self.per_session
        self.turn = 0 if done else self.turn
        self.session = None if done or envelope is None else envelope["session"]


def users_for(target: str, count: int, per_session: int) -> list[User]:
    if target == "demo":
        text = TOUR.read_text().splitlines()
        lines = [""] + [line for line in text if line.strip() and not line.startswith("#")]
        return [User("HotelFlow", lines, len(lines), {"today": "2026-05-15"}) for _ in range(count)]
    lines = [f"user message number {n} about nothing in particular" for n in range(per_session)]
    return [User("BenchFlow", lines, per_session, None) for _ in range(count)]


def content_length(head: bytes) -> int:
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value)
    raise RuntimeError(f"a reply without Content-Length: {head[:200]!r}")


@dataclass
class Load:
    """What one target answered in one round."""

    latencies: list[float] = field(default_factory=list)  # ms, requests inside the window
    total: int = 0  # requests answered in the whole round, warm-up included
    cpu_s: float = 0.0  # the server's CPU time over the whole round
    failures: list[str] = field(default_factory=list)


async def drive(port: int, user: User, window: tuple[float, float], load: Load) -> None:
    """Send the user's turns one after another until the window closes."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    begin, end = window
    try:
        while (sent := time.perf_counter()) < end:
            writer.write(user.request())
            head = await reader.readuntil(b"\r\n\r\n")
            body = await reader.readexactly(content_length(head))
            finished = time.perf_counter()
            load.total += 1
            if head[9:12] != b"200":
                load.failures.append(f"{head[9:12].decode()} {body[:300]!r}")
                user.answered(None)
                continue
            user.answered(json.loads(body))
            if sent >= begin and finished <= end:
                load.latencies.append((finished - sent) * 1000)
    finally:
        writer.close()


# -- the servers -------------------------------------------------------------------------------


@dataclass
class Server:
    target: str
    process: asyncio.subprocess.Process
    port: int
    served: int = 0

    def cpu_seconds(self) -> float:
        stat = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(stat[11]) + int(stat[12])) / _TICKS

    async def get_json(self, path: str) -> Any:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        writer.write(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        head = await reader.readuntil(b"\r\n\r\n")
        body = await reader.readexactly(content_length(head))
        writer.close()
        return json.loads(body)


async def start(target: str, tmp: str, args: argparse.Namespace) -> Server:
    script = str(Path(__file__).with_name("_http_servers.py"))
    command = [sys.executable, script, target, "--db", str(Path(tmp) / f"{target}.db")]
    command += ["--model", args.model]
    command += ["--profile", args.profile] if args.profile else []
    command += ["--no-gc-tuning"] if args.no_gc_tuning else []
    process = await asyncio.create_subprocess_exec(*command, stdout=asyncio.subprocess.PIPE)
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    if not line.startswith("PORT "):
        raise SystemExit(f"the {target} server did not start (it printed {line!r})")
    return Server(target, process, int(line.split()[1]))


async def measure(server: Server, args: argparse.Namespace, seconds: float) -> Load:
    """`args.sessions` users for `args.warmup` + `seconds`; only the last `seconds` count."""
    load = Load()
    now = time.perf_counter()
    window = (now + args.warmup, now + args.warmup + seconds)
    users = users_for(server.target, args.sessions, args.turns_per_session)
    cpu = server.cpu_seconds()
    await asyncio.gather(*(drive(server.port, user, window, load) for user in users))
    load.cpu_s = server.cpu_seconds() - cpu
    server.served += load.total
    return load


# -- rounds and the report ---------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


@dataclass
class Row:
    """One target's figures, one entry per round."""

    rate: list[float] = field(default_factory=list)
    ratio: list[float] = field(default_factory=list)
    p50: list[float] = field(default_factory=list)
    p99: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)
    cpu_ratio: list[float] = field(default_factory=list)

    def add(self, load: Load, bare: Load, seconds: float) -> None:
        self.rate.append(len(load.latencies) / seconds)
        self.ratio.append(len(load.latencies) / max(len(bare.latencies), 1))
        self.p50.append(pct(load.latencies, 0.5))
        self.p99.append(pct(load.latencies, 0.99))
        self.cpu_ms.append(load.cpu_s * 1000 / max(load.total, 1))
        self.cpu_ratio.append(bare.cpu_s / max(bare.total, 1) / max(self.cpu_ms[-1] / 1000, 1e-9))


async def run(args: argparse.Namespace) -> None:
    targets = list(dict.fromkeys([*args.targets.split(","), "bare"]))
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        raise SystemExit(f"unknown targets {unknown}; choose from {', '.join(TARGETS)}")
    with tempfile.TemporaryDirectory() as tmp:
        servers = [await start(target, tmp, args) for target in targets]
        try:
            rows, failures = await rounds(servers, args)
            collections = {
                s.target: await s.get_json("/_bench/gc") for s in servers if s.target != "raw"
            }
        finally:
            for server in servers:
                server.process.send_signal(signal.SIGINT)
                await server.process.wait()
    report(rows, collections, {s.target: s.served for s in servers}, failures, args)


async def rounds(servers: list[Server], args: argparse.Namespace) -> tuple[dict[str, Row], list]:
    for server in servers:  # first requests fill caches and import lazily; not measured
        await measure(server, args, 1.0)
    rows = {server.target: Row() for server in servers}
    failures: list[str] = []
    for number in range(args.rounds):
        shift = number % len(servers)
        loads = {s.target: await measure(s, args, args.seconds) for s in servers[shift:]}
        loads |= {s.target: await measure(s, args, args.seconds) for s in servers[:shift]}
        for target, load in loads.items():
            rows[target].add(load, loads["bare"], args.seconds)
            failures += [f"{target}: {failure}" for failure in load.failures[:3]]
        rates = ", ".join(f"{target} {row.rate[-1]:.0f}" for target, row in rows.items())
        print(f"round {number + 1} ({time.strftime('%H:%M:%S')}): turns/s {rates}", flush=True)
    return rows, failures


def report(
    rows: dict[str, Row],
    collections: dict[str, dict[str, float]],
    served: dict[str, int],
    failures: list[str],
    args: argparse.Namespace,
) -> None:
    print(
        f"\n{args.rounds} interleaved rounds of {args.seconds:g} s per target (after "
        f"{args.warmup:g} s of warm-up), {args.sessions} users, model {args.model}"
        f"{', no GC tuning' if args.no_gc_tuning else ''}; medians over rounds"
    )
    names = ("target", "turns/s", "ratio", "p50 ms", "p99 ms", "p99/p50", "CPU ms", "CPU ratio")
    names += ("GC ms", "longest GC", "full GCs")
    print("{:<7}{:>9}{:>7}{:>8}{:>8}{:>8}{:>8}{:>10}{:>7}{:>11}{:>9}".format(*names))
    for target, row in rows.items():
        med = [statistics.median(v) for v in (row.rate, row.ratio, row.p50, row.p99)]
        cpu, cpu_ratio = statistics.median(row.cpu_ms), statistics.median(row.cpu_ratio)
        gcs = collections.get(target, {})
        gc_ms = (gcs.get("full_ms", 0) + gcs.get("young_ms", 0)) / max(served[target], 1)
        print(
            f"{target:<7}{med[0]:>9.0f}{med[1]:>7.2f}{med[2]:>8.1f}{med[3]:>8.1f}"
            f"{med[3] / med[2]:>8.1f}{cpu:>8.2f}{cpu_ratio:>10.2f}{gc_ms:>7.2f}"
            f"{gcs.get('longest_ms', 0):>11.1f}{gcs.get('full', 0):>9.0f}"
        )
    print(
        "ratio per round: "
        + "; ".join(
            f"{target} " + " ".join(f"{r:.2f}" for r in row.ratio)
            for target, row in rows.items()
            if target != "bare"
        )
    )
    if failures:
        print("FAILED REQUESTS (first ones):", *failures[:10], sep="\n  ")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add = parser.add_argument
    add("--targets", default=",".join(TARGETS), help="comma-separated; bare is always measured")
    add("--rounds", type=int, default=5)
    add("--seconds", type=float, default=3.0, help="measured window of one target in one round")
    add("--warmup", type=float, default=0.5, help="uncounted seconds before every window")
    add("--sessions", type=int, default=32, help="concurrent users, one connection each")
    add("--turns-per-session", type=int, default=20, help="then a user starts a new session")
    add("--model", choices=("instant", "scripted"), default="instant")
    add("--no-gc-tuning", action="store_true", help="serve without the app's GC settings")
    add("--profile", metavar="DIR", help="write each server's cProfile stats to DIR/TARGET.prof")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
