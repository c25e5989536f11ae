"""What the protocol tests share (G1-G3): the booking flow's app, a client, the two SSE readers."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from support.approval_flows import booking_flow

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore

FLOW = "BookingFlow"


def app_for(**options: Any) -> tuple[FlowEngine, Any]:
    """The people-in-the-loop booking flow behind an app: `book X 900` waits for approval."""
    engine = FlowEngine(flows=[booking_flow()], store=MemoryStore())
    return engine, create_app(engine, **options)


def client_for(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://test")


def data_frames(text: str) -> list[Any]:
    """The `data:` payloads of an SSE body, decoded from JSON (`[DONE]` stays a string)."""
    frames = []
    for frame in text.split("\n\n"):
        lines = [line for line in frame.split("\n") if line.startswith("data: ")]
        if lines:
            payload = lines[0].removeprefix("data: ")
            frames.append(payload if payload == "[DONE]" else json.loads(payload))
    return frames


def run_input(thread: str, run: str, *texts: str, **extra: Any) -> dict[str, Any]:
    """A RunAgentInput whose messages are the user's `texts` (the client resends them all)."""
    messages = [{"id": f"u{i}", "role": "user", "content": t} for i, t in enumerate(texts)]
    return {"threadId": thread, "runId": run, "messages": messages, **extra}


def chat_request(chat: str, *texts: str, **extra: Any) -> dict[str, Any]:
    """What useChat sends: the chat id, UIMessages with text parts, the trigger."""
    messages = [
        {"id": f"{chat}-u{i}", "role": "user", "parts": [{"type": "text", "text": t}]}
        for i, t in enumerate(texts)
    ]
    return {"id": chat, "messages": messages, "trigger": "submit-message", **extra}


@dataclass
class LiveServer:
    """A uvicorn server running an app in its own thread and event loop."""

    url: str


@contextmanager
def live_server(app: Any) -> Iterator[LiveServer]:
    """Serve `app` on a free loopback port, for clients in another process (Node).

    The socket listens before uvicorn starts, so a client may connect at once: the kernel
    queues the connection until the server accepts it (no polling for readiness).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none", http="h11")
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(server.serve(sockets=[sock]),), daemon=True
    )
    thread.start()
    try:
        yield LiveServer(url=f"http://127.0.0.1:{sock.getsockname()[1]}")
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        loop.close()
        sock.close()


NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"


def node_report(script: str, url: str) -> dict[str, Any]:
    """Run one of this folder's Node clients against `url`; its JSON report.

    The clients are pinned in tests/package.json and installed by `make test` (`npm ci`);
    a missing install fails here with the command that makes it, never a skip.
    """
    node = shutil.which("node")
    assert node is not None, "node is not installed: apt-get install nodejs npm (.ci/run does)"
    assert NODE_MODULES.is_dir(), "the Node clients are not installed: run `make node-clients`"
    done = subprocess.run(
        [node, str(Path(__file__).parent / script), url, FLOW],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report
