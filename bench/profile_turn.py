"""Where a turn's time goes: cProfile of in-process `/ai/run` requests (issue 39, item 2).

The app is `fair_anchors.py`'s picoflow target (`create_app` over a one-step flow, the chat or
the tool scenario, the `agenerate` or `scripted` model), called as an ASGI app without sockets
or uvicorn, one request after another, a new session every `--turns-per-session` turns. First
`--requests` requests run unprofiled to give the CPU per request (`time.process_time`), then as
many again on a fresh app under cProfile. Run by hand:

    .venv/bin/python bench/profile_turn.py [--store sqlite|memory] [--requests 2000]
        [--scenario chat|tool] [--model agenerate|scripted] [--out FILE.prof] [--top 45]

It prints the functions with the most cumulative time, as shares of the profiled total, and
writes the stats to `--out` for `python -m pstats` or snakeviz.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import tempfile
import time
from pathlib import Path
from typing import Any

from _anchor_apps import Recorder, make_model, picoflow_app
from fastapi import FastAPI


async def call(app: FastAPI, body: bytes, session: str | None) -> dict[str, Any]:
    """One POST /ai/run straight into the ASGI app; the decoded envelope."""
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    if session is not None:
        headers.append((b"chat_session_id", session.encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/ai/run",
        "raw_path": b"/ai/run",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    chunks: list[bytes] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return json.loads(b"".join(chunks))


async def drive(app: FastAPI, requests: int, per_session: int) -> float:
    """`requests` turns in sessions of `per_session`; CPU ms per request."""
    session: str | None = None
    start = time.process_time()
    for number in range(requests):
        turn = number % per_session
        if turn == 0:
            session = None
        text = f"user message number {turn} about nothing in particular"
        body = json.dumps({"flowName": "BenchFlow", "message": text}).encode()
        envelope = await call(app, body, session)
        if not envelope.get("success"):
            raise SystemExit(f"request {number} failed: {envelope}")
        session = envelope["session"]
    return (time.process_time() - start) * 1000 / requests


async def with_app(args: argparse.Namespace, tmp: str, run: Any) -> Any:
    model = make_model(args.model, args.scenario, Recorder(limit=0))
    app = picoflow_app(args.store, str(Path(tmp) / "p.db"), model, args.scenario)
    async with app.router.lifespan_context(app):  # settles the heap as under uvicorn
        await drive(app, 50, args.turns_per_session)  # lazy imports and caches, not measured
        return await run(app)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", choices=("sqlite", "memory"), default="sqlite")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--scenario", choices=("chat", "tool"), default="chat")
    parser.add_argument("--model", choices=("agenerate", "scripted"), default="agenerate")
    parser.add_argument("--turns-per-session", type=int, default=20)
    parser.add_argument("--out", default="")
    parser.add_argument("--top", type=int, default=45)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cpu = await with_app(
            args, tmp, lambda app: drive(app, args.requests, args.turns_per_session)
        )
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory() as tmp:

        async def profiled(app: FastAPI) -> None:
            profiler.enable()
            await drive(app, args.requests, args.turns_per_session)
            profiler.disable()

        await with_app(args, tmp, profiled)
    stats = pstats.Stats(profiler)
    if args.out:
        stats.dump_stats(args.out)
    print(
        f"{args.requests} requests, {args.store}, {args.scenario}, {args.model}: "
        f"{cpu:.3f} ms CPU per request unprofiled"
    )
    report(stats, args.top)


def report(stats: pstats.Stats, top: int) -> None:
    """The functions with the most cumulative time, as shares of the profiled total."""
    entries = stats.stats  # type: ignore[attr-defined]
    total = max(cum for (_, _, _, cum, _) in entries.values())  # `drive`: every request
    rows = sorted(entries.items(), key=lambda item: item[1][3], reverse=True)
    print(f"{'cum %':>6} {'own %':>6} {'calls':>8}  function")
    for (path, line, name), (_, calls, own, cum, _) in rows[:top]:
        short = "/".join(Path(path).parts[-3:]) if path != "~" else ""
        print(f"{cum / total:>6.1%} {own / total:>6.1%} {calls:>8}  {short}:{line} {name}")


if __name__ == "__main__":
    asyncio.run(main())
