"""O6: `/ready` asks the store; a shutdown lets running turns finish and refuses new ones."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest
from langchain_core.messages import BaseMessage
from server_flows import api, chat_flow, client_for, last_human
from test_api_errors import error_body, failure

from picoflow.errors import StoreError
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

HELLO = {"flowName": "ChatFlow", "message": "hello"}
SHUTTING_DOWN = (
    "This server is shutting down and takes no new turns; nothing was changed. Send the same "
    "request again in a few seconds (another server will take it)."
)
STORE_DOWN = (
    "The session store is unavailable right now, so this server cannot run turns. Try again "
    "in a few seconds."
)


class DownStore(MemoryStore):
    async def revision(self, session_id: str) -> int | None:
        raise StoreError("connection refused by db-7.internal:27017")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_o6_ready_is_200_when_the_store_answers(kind: str, tmp_path: Path) -> None:
    store = MemoryStore() if kind == "memory" else SQLiteStore(tmp_path / "s.db")
    _, app = api(chat_flow(), store=store)
    async with client_for(app) as client:
        reply = await client.get("/ready")
    await store.aclose()
    assert reply.status_code == 200 and reply.json()["status"] == "ready"


async def test_o6_ready_is_503_with_retry_after_when_the_store_does_not_answer() -> None:
    """No internals in the reply (H2): the host stays in the log. (MongoDB: tests/stores.)"""
    store = DownStore()
    _, app = api(chat_flow(), store=store)
    async with client_for(app) as client:
        reply = await client.get("/ready")
        health = await client.get("/healthcheck")
    await store.aclose()
    assert (reply.status_code, reply.headers["Retry-After"]) == (503, "5")
    assert error_body(reply) == failure(STORE_DOWN, code="store_unavailable")
    assert health.status_code == 200  # liveness never asks the store


def held_model() -> tuple[ScriptedChatModel, asyncio.Event, asyncio.Event]:
    entered, release = asyncio.Event(), asyncio.Event()

    async def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        if last_human(messages) == "slow":
            entered.set()
            await release.wait()
        return f"echo: {last_human(messages)}"

    return ScriptedChatModel(policy=policy), entered, release


class Draining(logging.Handler):
    """Sets an event when the shutdown says it waits for running turns."""

    def __init__(self) -> None:
        super().__init__()
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("shutdown: waiting up to"):
            self.event.set()


@pytest.fixture
def draining() -> Iterator[asyncio.Event]:
    handler = Draining()
    logger = logging.getLogger("picoflow.server._lifecycle")
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield handler.event
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_o6_shutdown_lets_a_running_turn_finish_and_refuses_new_ones(
    route: str, draining: asyncio.Event
) -> None:
    model, entered, release = held_model()
    store = MemoryStore()
    engine, app = api(chat_flow(model), store=store, shutdown_grace=30)
    async with client_for(app) as client:
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        running = asyncio.create_task(client.post(route, json={**HELLO, "message": "slow"}))
        await entered.wait()
        stopping = asyncio.create_task(lifespan.__aexit__(None, None, None))
        await draining.wait()
        refused = await client.post("/ai/run", json=HELLO)
        not_ready = await client.get("/ready")
        assert not stopping.done()
        release.set()
        finished = await running
        await stopping
    assert finished.status_code == 200
    assert (refused.status_code, refused.headers["Retry-After"]) == (503, "5")
    assert error_body(refused) == failure(SHUTTING_DOWN, code="shutting_down")
    assert not_ready.status_code == 503 and not_ready.json()["code"] == "shutting_down"
    assert repr(store) == "MemoryStore(sessions=0)"  # closed after the turn was saved


async def test_o6_a_turn_past_the_grace_period_does_not_hold_the_shutdown(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model, entered, release = held_model()
    _, app = api(chat_flow(model), shutdown_grace=0.05)
    async with client_for(app) as client:
        lifespan = app.router.lifespan_context(app)
        await lifespan.__aenter__()
        running = asyncio.create_task(client.post("/ai/run", json={**HELLO, "message": "slow"}))
        await entered.wait()
        await lifespan.__aexit__(None, None, None)
        release.set()
        await running
    assert (
        "shutdown: 1 turn(s) still running after the grace period of 0.05s; closing anyway "
        "(they will not be saved)"
    ) in caplog.text
