"""A server process of the two-worker scenario: the HTTP API on MongoDB, on a port of its own.

    python http_worker.py MONGO_URI DATABASE crashy|steady [reject|queue]

It prints `ready PORT` once it listens. A `crashy` worker kills itself with SIGKILL right after
the store has saved a turn whose message starts with "crash-", before any reply is sent: the
worst moment for a client, which cannot know whether its turn was saved. The last argument is
the engine's `concurrent_turns` (O4; "reject" by default).
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from typing import Any

import uvicorn
from store_worker import ChatFlow

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores.mongo import MongoStore


def crash_if_asked(doc: dict[str, Any]) -> None:
    messages = doc["memory"]["ChatStep"]["messages"]
    said = [m["data"]["content"] for m in messages[-2:] if m["type"] == "human"]
    if any(str(text).startswith("crash-") for text in said):
        os.kill(os.getpid(), signal.SIGKILL)


class CrashAfterSave(MongoStore):
    async def create(self, doc: dict[str, Any]) -> None:
        await super().create(doc)
        crash_if_asked(doc)

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        revision = await super().save(doc, expected_revision)
        crash_if_asked(doc)
        return revision


async def serve(uri: str, database: str, kind: str, mode: str = "reject") -> None:
    store = CrashAfterSave(uri, database) if kind == "crashy" else MongoStore(uri, database)
    engine = FlowEngine(
        flows=[ChatFlow],
        store=store,
        turn_timeout=20,
        concurrent_turns="queue" if mode == "queue" else "reject",
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    config = uvicorn.Config(create_app(engine), log_level="warning", http="h11", ws="none")
    print(f"ready {sock.getsockname()[1]}", flush=True)  # connections queue until served
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    asyncio.run(serve(*sys.argv[1:]))
