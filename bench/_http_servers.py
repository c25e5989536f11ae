"""The servers `http_throughput.py` measures, one per child process.

    python bench/_http_servers.py TARGET --db PATH [--model instant|scripted] [--profile DIR]
        [--no-gc-tuning]

The child binds a free port on 127.0.0.1, builds its app, prints `PORT <n>` and serves until
SIGINT. Every uvicorn server runs with the same settings (no access log, lifespan on), and every
app gets `GET /_bench/gc`, which reports the garbage collections it ran since it started serving.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import socket
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI, Request, Response
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, Field

sys.path.insert(0, str(Path(__file__).parents[1]))  # the demo package, when run from anywhere

from picoflow import Flow, FlowEngine, Step  # noqa: E402
from picoflow.server import _heap, create_app  # noqa: E402
from picoflow.stores import MemoryStore, SQLiteStore  # noqa: E402
from picoflow.testing import ScriptedChatModel  # noqa: E402

TARGETS = ("memory", "sqlite", "bare", "demo", "raw")


def _answer(messages: list[BaseMessage], tools: list[str] | None = None) -> str:
    return f"Noted: {str(messages[-1].content)[:40]}"


class InstantModel(BaseChatModel):
    """Answers at once: what is left of a turn is picoflow, LangChain and HTTP."""

    @property
    def _llm_type(self) -> str:
        return "instant"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **_: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage(_answer(messages)))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, **_: Any
    ) -> ChatResult:
        return self._generate(messages)


class Chat(Step):
    def get_prompt(self) -> str:
        return "You are a terse assistant. Acknowledge what the user says."


def bench_app(store: str, db: str, model_kind: str) -> FastAPI:
    """`create_app` over a one-step flow: one model call per turn, nothing else."""
    model = InstantModel() if model_kind == "instant" else ScriptedChatModel(policy=_answer)

    class BenchFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self)]

    sessions = MemoryStore() if store == "memory" else SQLiteStore(db)
    return create_app(FlowEngine([BenchFlow], store=sessions), expose_docs=False)


def demo_app(db: str) -> FastAPI:
    """The app `make serve` runs, built as demo/cli.py builds it, on a fresh database."""
    from demo.hotel.flow import OFFLINE_MODEL, PROVIDERS, HotelFlow

    flows = [HotelFlow.using(OFFLINE_MODEL)]
    return create_app(FlowEngine(flows, store=SQLiteStore(db), providers=PROVIDERS))


class Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    flow_name: str = Field(alias="flowName")
    message: str = ""
    config: dict[str, Any] | None = None


def bare_app() -> FastAPI:
    """The web stack alone, minimal: the same body parsed with pydantic, the same envelope.

    One FastAPI route that reads the raw body and validates it with `Body.model_validate_json`,
    and answers the envelope with the same session and request-id headers, encoded once with
    `json.dumps`. No dependencies, no response model: what any FastAPI service pays at least
    (issue 24 found the earlier bare endpoint, with a `Header` dependency, a body parameter and
    `JSONResponse`, serving half the requests of this one, which flattered every ratio).
    """
    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/ai/run")
    async def run(request: Request) -> Response:
        body = Body.model_validate_json(await request.body())
        session_id = request.headers.get("chat_session_id") or uuid.uuid4().hex
        envelope = {
            "success": True,
            "completed": False,
            "message": f"Noted: {body.message[:40]}",
            "session": session_id,
            "contentType": "text/plain",
            "step": "Chat",
        }
        headers = {"CHAT_SESSION_ID": session_id, "chat-session-id": session_id}
        headers["X-Request-ID"] = uuid.uuid4().hex
        return Response(json.dumps(envelope), media_type="application/json", headers=headers)

    return app


def add_gc_route(app: FastAPI) -> None:
    """GET /_bench/gc: collections since now, with their CPU time (steady on a busy host)."""
    totals = {"full": 0, "full_ms": 0.0, "young": 0, "young_ms": 0.0, "longest_ms": 0.0}
    started = [0.0]

    def track(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            started[0] = time.thread_time()
            return
        took = (time.thread_time() - started[0]) * 1000
        kind = "full" if info["generation"] == 2 else "young"
        totals[kind] += 1
        totals[f"{kind}_ms"] += took
        totals["longest_ms"] = max(totals["longest_ms"], took)

    async def stats() -> dict[str, float]:
        return dict(totals)

    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[Any]:
        async with inner(app) as state:
            gc.callbacks.append(track)  # after the app's own start-up and its collection
            yield state

    app.router.lifespan_context = lifespan
    app.add_api_route("/_bench/gc", stats, methods=["GET"])


async def raw_server(sock: socket.socket) -> None:
    """A canned reply to every request: how many requests/s the client can drive."""
    body = json.dumps({"success": True, "completed": False, "message": "Noted.", "session": ""})
    reply = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
    reply %= (len(body), body.encode())

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                )
                await reader.readexactly(length)
                writer.write(reply)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = await asyncio.start_server(handle, sock=sock)
    await server.serve_forever()


def serve(args: argparse.Namespace) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)  # connections wait in the backlog until the server accepts them
    if args.target == "raw":
        print(f"PORT {sock.getsockname()[1]}", flush=True)
        asyncio.run(raw_server(sock))
        return
    if args.target == "bare":
        app = bare_app()
    elif args.target == "demo":
        app = demo_app(args.db)
    else:
        app = bench_app(args.target, args.db, args.model)
    if args.no_gc_tuning:  # as before the server settled the heap (see picoflow/server/_heap)
        _heap._settled = True
    add_gc_route(app)
    print(f"PORT {sock.getsockname()[1]}", flush=True)  # built; only uvicorn's start is left
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    if not args.profile:
        asyncio.run(server.serve(sockets=[sock]))
        return
    import cProfile

    profiler = cProfile.Profile()
    try:  # the parent stops servers with SIGINT, which uvicorn re-raises once it has stopped
        profiler.runcall(asyncio.run, server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        profiler.dump_stats(str(Path(args.profile) / f"{args.target}.prof"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--db", required=True)
    parser.add_argument("--model", choices=("instant", "scripted"), default="instant")
    parser.add_argument("--profile", metavar="DIR")
    parser.add_argument("--no-gc-tuning", action="store_true")
    try:
        serve(parser.parse_args())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
