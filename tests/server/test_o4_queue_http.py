"""O4 over HTTP: with `concurrent_turns="queue"` a second message for a session whose turn runs
on another worker gets 200 once that turn is done, not 409; "reject" keeps the 409.

Two apps with their own engines on one store stand for two workers behind a load balancer. The
first request is held inside its model call on an event; the store tells when the second
request found the session's lease taken (it is waiting), so no test sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from server_flows import chat_flow, client_for, last_human, sse

from picoflow import Flow, FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel


class LeasingStore(MemoryStore):
    """A MemoryStore that tells when a lease was refused (a turn waits for its session)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = asyncio.Event()

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        granted = await super().acquire_lease(session_id, holder, seconds)
        if not granted:
            self.refused.set()
        return granted


class Held:
    """A model that echoes, holding the messages that start with "slow" on `gate`."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()

        async def policy(messages: list[BaseMessage], tools: list[str]) -> str:
            said = last_human(messages)
            if said.startswith("slow"):
                self.entered.set()
                await self.gate.wait()
            return f"echo: {said}"

        self.flow: type[Flow] = chat_flow(ScriptedChatModel(policy=policy))


def two_workers(
    held: Held, mode: str, store: LeasingStore, second_timeout: float = 10
) -> tuple[Any, Any]:
    apps = []
    for timeout in (10, second_timeout):
        engine = FlowEngine(
            [held.flow],
            store,
            concurrent_turns=mode,  # type: ignore[arg-type]
            turn_timeout=timeout,
        )
        apps.append(create_app(engine))
    return apps[0], apps[1]


def humans(doc: dict[str, Any] | None) -> list[str]:
    assert doc is not None
    messages = doc["memory"]["GreetStep"]["messages"]
    return [m["data"]["content"] for m in messages if m["type"] == "human"]


async def start(client: Any) -> str:
    reply = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
    assert reply.status_code == 200
    return str(reply.json()["session"])


async def slow_turn(client: Any, held: Held) -> tuple[str, asyncio.Future[Any]]:
    """Start a session, then post a turn of it that `held` keeps inside its model call."""
    session = await start(client)
    slow = asyncio.ensure_future(client.post("/ai/run", **turn("slow one", session)))
    await held.entered.wait()
    return session, slow


def turn(message: str, session: str) -> dict[str, Any]:
    return {
        "json": {"flowName": "ChatFlow", "message": message},
        "headers": {"CHAT_SESSION_ID": session},
    }


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_o4_queue_the_second_request_waits_and_gets_200(route: str) -> None:
    held, store = Held(), LeasingStore()
    one, other = two_workers(held, "queue", store)
    async with client_for(one) as first, client_for(other) as second:
        session, slow = await slow_turn(first, held)
        queued = asyncio.ensure_future(second.post(route, **turn("then two", session)))
        await store.refused.wait()  # the second worker waits for the session's lease
        assert not queued.done()
        held.gate.set()
        reply_one, reply_two = await slow, await queued
    assert (reply_one.status_code, reply_one.json()["message"]) == (200, "echo: slow one")
    assert reply_two.status_code == 200
    if route == "/ai/run":
        assert reply_two.json()["message"] == "echo: then two"
    else:
        kind, done = sse(reply_two.text)[-1]
        assert (kind, done["success"], done["message"]) == ("done", True, "echo: then two")
    assert humans(await store.load(session)) == ["hello", "slow one", "then two"]


async def test_o4_reject_the_request_that_saves_second_gets_409() -> None:
    held, store = Held(), LeasingStore()
    one, other = two_workers(held, "reject", store)
    async with client_for(one) as first, client_for(other) as second:
        session, slow = await slow_turn(first, held)
        quick = await second.post("/ai/run", **turn("quick two", session))
        held.gate.set()
        lost = await slow
    assert quick.status_code == 200
    assert (lost.status_code, lost.json()["code"]) == (409, "session_conflict")
    assert not store.refused.is_set()  # "reject" takes no lease
    assert humans(await store.load(session)) == ["hello", "quick two"]


async def test_o4_queue_a_request_still_waiting_at_the_deadline_is_503_turn_timeout() -> None:
    held, store = Held(), LeasingStore()
    one, other = two_workers(held, "queue", store, second_timeout=0.3)
    async with client_for(one) as first, client_for(other) as second:
        session, slow = await slow_turn(first, held)
        late = await second.post("/ai/run", **turn("too late", session))
        held.gate.set()
        assert (await slow).status_code == 200
    assert (late.status_code, late.json()["code"]) == (503, "turn_timeout")
    assert late.headers["Retry-After"]
    assert humans(await store.load(session)) == ["hello", "slow one"]
