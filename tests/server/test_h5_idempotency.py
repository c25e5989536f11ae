"""H5: a request retried with the same `Idempotency-Key` gets the first result; one turn runs."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import httpx
import pytest
from langchain_core.messages import BaseMessage
from server_flows import api, chat_flow, client_for, last_human, live_server, sse
from test_api_errors import FailingSaveStore, error_body, failure

from picoflow.server import api_key_auth
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

HELLO = {"flowName": "ChatFlow", "message": "hello"}


def humans(doc: dict[str, Any]) -> list[str]:
    messages = doc["memory"]["GreetStep"]["messages"]
    return [m["data"]["content"] for m in messages if m["type"] == "human"]


def echo_model() -> ScriptedChatModel:
    return ScriptedChatModel(policy=lambda messages, tools: f"echo: {last_human(messages)}")


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_h5_a_retry_after_the_first_finished_gets_its_result(route: str) -> None:
    model = echo_model()
    engine, app = api(chat_flow(model))
    async with client_for(app) as client:
        start = await client.post("/ai/run", json=HELLO)
        session = start.json()["session"]
        headers = {"CHAT_SESSION_ID": session, "Idempotency-Key": "turn-2"}
        body = {**HELLO, "message": "two nights"}
        first = await client.post(route, json=body, headers=headers)
        retry = await client.post(route, json=body, headers=headers)
    if route == "/ai/run":
        assert first.json() == retry.json()
        assert first.json()["message"] == "echo: two nights"
        assert (first.headers.get("Idempotent-Replayed"), retry.headers["Idempotent-Replayed"]) == (
            None,
            "true",
        )
    else:
        assert sse(retry.text) == [sse(first.text)[-1]]  # only `done`, the first one's
        assert sse(retry.text)[0][1]["message"] == "echo: two nights"
    assert len(model.requests) == 2
    doc = await engine.get_session(session)
    assert humans(doc) == ["hello", "two nights"] and doc["revision"] == 1


class CountingStore(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.created: list[str] = []

    async def create(self, doc: dict[str, Any]) -> None:
        self.created.append(doc["id"])
        await super().create(doc)


class RetryJoined(logging.Handler):
    """Sets an event when the server logs that a retry waits for the first request."""

    def __init__(self) -> None:
        super().__init__()
        self.joined = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "once that request finishes" in record.getMessage():
            self.joined.set()


async def test_h5_a_retry_while_the_first_still_runs_waits_for_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client timed out and retried; the first turn was still running: one turn, one result."""
    entered, release = asyncio.Event(), asyncio.Event()

    async def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        entered.set()
        await release.wait()
        return f"echo: {last_human(messages)}"

    model = ScriptedChatModel(policy=policy)
    engine, app = api(chat_flow(model), store=CountingStore())
    handler = RetryJoined()
    caplog.set_level(logging.INFO, logger="picoflow.server._idempotency")
    logging.getLogger("picoflow.server._idempotency").addHandler(handler)
    headers = {"Idempotency-Key": "3f1c2a9e-first-turn"}
    try:
        async with client_for(app) as client:
            first = asyncio.create_task(client.post("/ai/run", json=HELLO, headers=headers))
            await entered.wait()
            retry = asyncio.create_task(client.post("/ai/run", json=HELLO, headers=headers))
            await handler.joined.wait()
            release.set()
            replies = await asyncio.gather(first, retry)
    finally:
        logging.getLogger("picoflow.server._idempotency").removeHandler(handler)
    assert replies[0].json() == replies[1].json()
    assert len(model.requests) == 1
    session = replies[0].json()["session"]
    assert humans(await engine.get_session(session)) == ["hello"]
    assert engine.store.created == [session]  # one session, not one per request


async def test_h5_a_key_reused_for_another_message_is_422() -> None:
    _, app = api(chat_flow(echo_model()))
    headers = {"Idempotency-Key": "k-1"}
    async with client_for(app) as client:
        await client.post("/ai/run", json=HELLO, headers=headers)
        other = await client.post(
            "/ai/run", json={**HELLO, "message": "something else"}, headers=headers
        )
    assert other.status_code == 422
    assert error_body(other) == failure(
        "The Idempotency-Key 'k-1' was already used for a different request (another route, flow, "
        "message, session, revision or config). Send each new message with a new key, and reuse a "
        "key only to retry the same request.",
        code="idempotency_key_reused",
    )


@pytest.mark.parametrize("key", ["", "x" * 256, "has space", "tab\tkey", "ключ"])
async def test_h5_a_malformed_key_is_400(key: str) -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json=HELLO, headers={"Idempotency-Key": key.encode()})
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "The Idempotency-Key header must be 1 to 255 visible ASCII characters (a UUID works "
        "well); send a new one for each new message and the same one when you retry.",
        code="invalid_idempotency_key",
    )


class FlakySaveStore(MemoryStore):
    """Refuses the first save of a session, as a store that blinked would."""

    def __init__(self) -> None:
        super().__init__()
        self.failures = 1

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        if self.failures:
            self.failures -= 1
            await FailingSaveStore().save(doc, expected_revision)
        return await super().save(doc, expected_revision)


async def test_h5_a_failed_first_attempt_is_run_again_on_retry() -> None:
    """A failed turn saved nothing (P3), so its retry must run, not replay the failure."""
    model = echo_model()
    engine, app = api(chat_flow(model), store=FlakySaveStore())
    async with client_for(app) as client:
        session = (await client.post("/ai/run", json=HELLO)).json()["session"]
        headers = {"CHAT_SESSION_ID": session, "Idempotency-Key": "retry-me"}
        body = {**HELLO, "message": "again"}
        failed = await client.post("/ai/run", json=body, headers=headers)
        retried = await client.post("/ai/run", json=body, headers=headers)
    assert (failed.status_code, retried.status_code) == (503, 200)
    assert retried.json()["message"] == "echo: again"
    assert humans(await engine.get_session(session)) == ["hello", "again"]


async def test_h5_keys_belong_to_their_principal() -> None:
    alice, bob = "alice-key-0123456789abcdef", "bob-key-0123456789abcdef"
    model = echo_model()
    _, app = api(chat_flow(model), authorize=api_key_auth({alice: "alice", bob: "bob"}))
    async with client_for(app) as client:
        replies = [
            await client.post(
                "/ai/run", json=HELLO, headers={"X-API-Key": key, "Idempotency-Key": "same"}
            )
            for key in (alice, bob)
        ]
    assert replies[0].json()["session"] != replies[1].json()["session"]
    assert len(model.requests) == 2


async def test_h5_a_stream_whose_client_left_still_answers_its_retry() -> None:
    """The first client hangs up mid-turn; its retry gets the turn's result, run once."""
    client_gone = threading.Event()

    async def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        assert await asyncio.to_thread(client_gone.wait, 10)  # answers after the hang-up
        return f"echo: {last_human(messages)}"

    model = ScriptedChatModel(policy=policy)
    engine, app = api(chat_flow(model), store=CountingStore())
    headers = {"Idempotency-Key": "stream-1"}
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            async with client.stream("POST", "/ai/stream", json=HELLO, headers=headers) as first:
                assert first.status_code == 200
            client_gone.set()  # the first connection is closed before any event
            retry = await client.post("/ai/stream", json=HELLO, headers=headers, timeout=10)
    done = sse(retry.text)
    assert [kind for kind, _ in done] == ["done"]
    assert done[0][1]["message"] == "echo: hello"
    assert len(model.requests) == 1
    assert engine.store.created == [done[0][1]["session"]]


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_o4_a_retry_sent_to_another_worker_gets_the_first_result(route: str) -> None:
    """Two apps on one store, as two worker processes behind a load balancer (no stickiness):
    the retry of a first turn, sent to the other one, finds the session the first started."""
    model = echo_model()
    store = MemoryStore()
    _, first_app = api(chat_flow(model), store=store)
    engine, other_app = api(chat_flow(model), store=store)
    headers = {"Idempotency-Key": "first-turn-7"}
    async with client_for(first_app) as one, client_for(other_app) as other:
        first = await one.post(route, json=HELLO, headers=headers)
        retry = await other.post(route, json=HELLO, headers=headers)
    if route == "/ai/run":
        assert retry.headers["Idempotent-Replayed"] == "true"
        assert retry.json() == first.json()
        session = first.json()["session"]
    else:
        assert sse(retry.text) == [sse(first.text)[-1]]  # only `done`, the first one's
        session = sse(first.text)[-1][1]["session"]
    assert len(model.requests) == 1
    assert humans(await engine.get_session(session)) == ["hello"]


async def test_o4_a_key_reused_on_another_worker_is_422() -> None:
    store = MemoryStore()
    _, first_app = api(chat_flow(echo_model()), store=store)
    _, other_app = api(chat_flow(echo_model()), store=store)
    async with client_for(first_app) as one, client_for(other_app) as other:
        session = (await one.post("/ai/run", json=HELLO)).json()["session"]
        headers = {"Idempotency-Key": "k-1", "CHAT_SESSION_ID": session}
        await one.post("/ai/run", json={**HELLO, "message": "one"}, headers=headers)
        reply = await other.post("/ai/run", json={**HELLO, "message": "two"}, headers=headers)
    assert reply.status_code == 422
    assert error_body(reply) == failure(
        "The Idempotency-Key 'k-1' was already used for a different request (another route, flow, "
        "message, session, revision or config). Send each new message with a new key, and reuse a "
        "key only to retry the same request.",
        session,
        code="idempotency_key_reused",
    )
