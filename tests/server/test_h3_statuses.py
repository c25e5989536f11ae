"""H3: the status says what the client can do; transient is 503, never-succeeds is never 503."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from server_flows import api, chat_flow, client_for
from test_api_errors import error_body, failure

from picoflow import FlowEngine
from picoflow.errors import StoreError
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

HELLO = {"flowName": "ChatFlow", "message": "hello"}
MODEL_DOWN = (
    "The language model is unavailable or rate limited right now; nothing was changed. Send the "
    "same request again in a few seconds."
)
REFUSED = (
    "This session can no longer be saved or read: it is over the store's limits, was damaged, "
    "or was written by a newer version of this server; nothing was changed. Sending it again "
    "cannot help: omit the session header to start a new session."
)
REQUEST = httpx.Request("POST", "https://api.openai.example/v1/chat/completions")


def rate_limited() -> openai.RateLimitError:
    response = httpx.Response(429, request=REQUEST, headers={"retry-after": "20"})
    return openai.RateLimitError("Rate limit reached for gpt-4o", response=response, body=None)


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        (rate_limited(), "model_unavailable", MODEL_DOWN),
        (openai.APITimeoutError(request=REQUEST), "model_unavailable", MODEL_DOWN),
        (openai.APIConnectionError(request=REQUEST), "model_unavailable", MODEL_DOWN),
        (httpx.ReadTimeout("timed out", request=REQUEST), "model_unavailable", MODEL_DOWN),
        (TimeoutError(), "model_unavailable", MODEL_DOWN),  # a model call that timed out
    ],
    ids=["rate-limit", "openai-timeout", "connection", "httpx-timeout", "timeout"],
)
async def test_h3_a_model_timeout_or_rate_limit_is_503_with_retry_after(
    error: Exception, code: str, message: str
) -> None:
    # V9: every attempt fails (the first call and its 3 retries); the retries wait for nothing
    model = ScriptedChatModel(script=[error] * 4)
    engine = FlowEngine(flows=[chat_flow(model)], store=MemoryStore(), sleep=_no_wait)
    app = create_app(engine)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json=HELLO)
    assert (reply.status_code, reply.headers["Retry-After"]) == (503, "5")
    assert error_body(reply) == failure(message, code=code)
    assert "openai.example" not in reply.text


async def _no_wait(seconds: float) -> None:
    return None


class RefusingStore(MemoryStore):
    """Refuses every new session as too large, as MongoStore does past 15 MB."""

    async def create(self, doc: dict[str, Any]) -> None:
        raise StoreError(
            "Session 'x' is 16.2 MB as BSON, over MongoStore's 15 MB limit (mongodb://db:27017).",
            retryable=False,
        )


async def test_h3_a_document_over_the_store_limit_is_422_never_503() -> None:
    _, app = api(chat_flow(), store=RefusingStore())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json=HELLO)
    assert reply.status_code == 422
    assert "Retry-After" not in reply.headers
    assert error_body(reply) == failure(REFUSED, code="session_refused")


async def test_h3_a_session_written_by_a_newer_picoflow_is_422() -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        session = (await client.post("/ai/run", json=HELLO)).json()["session"]
        doc = await engine.store.load(session)
        doc["schema_version"] = 99
        await engine.store.save(doc, doc["revision"])
        fresh_engine, fresh_app = api(chat_flow(), store=engine.store)  # no cached copy
        async with client_for(fresh_app) as fresh:
            reply = await fresh.post(
                "/ai/run", json={**HELLO, "message": "hi"}, headers={"CHAT_SESSION_ID": session}
            )
    assert reply.status_code == 422
    assert error_body(reply) == failure(REFUSED, session, code="session_refused")


async def test_h3_a_hand_damaged_sqlite_row_is_422_naming_no_path(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(str(path))
    engine, app = api(chat_flow(), store=store)
    async with client_for(app) as client:
        session = (await client.post("/ai/run", json=HELLO)).json()["session"]
        with sqlite3.connect(path) as connection:
            connection.execute("UPDATE sessions SET doc = ? WHERE id = ?", ('{"id": "', session))
        _, fresh_app = api(chat_flow(), store=store)
        async with client_for(fresh_app) as fresh:
            reply = await fresh.post(
                "/ai/run", json={**HELLO, "message": "hi"}, headers={"CHAT_SESSION_ID": session}
            )
    await store.aclose()
    assert reply.status_code == 422
    assert error_body(reply) == failure(REFUSED, session, code="session_refused")
    assert str(tmp_path) not in reply.text
    assert (
        f"The stored document of session '{session}' is damaged: it is not a JSON object, so it "
        "was changed outside picoflow. Delete the session or restore it from a backup."
    ) in caplog.text


def test_h3_store_error_says_whether_a_retry_can_help() -> None:
    transient, refused = StoreError("down"), StoreError("too big", retryable=False)
    assert (transient.retryable, refused.retryable) == (True, False)
    assert repr(refused) == "StoreError('too big', retryable=False)"


async def test_h3_json_error_bodies_are_json_even_for_a_stream() -> None:
    """A refusal found before a stream starts is a plain JSON reply with its real status."""
    _, app = api(chat_flow(), max_message_chars=3)
    async with client_for(app) as client:
        reply = await client.post("/ai/stream", json=HELLO)
    assert reply.status_code == 413
    assert json.loads(reply.text)["code"] == "message_too_long"


async def test_h3_a_turn_past_the_engines_deadline_is_503_turn_timeout() -> None:
    never = asyncio.Event()

    async def hung(messages: list[Any], tools: list[str]) -> str:
        await never.wait()  # a model call that never answers
        return "too late"

    engine = FlowEngine(
        flows=[chat_flow(ScriptedChatModel(policy=hung))], store=MemoryStore(), turn_timeout=0.05
    )
    async with client_for(create_app(engine)) as client:
        reply = await client.post("/ai/run", json=HELLO)
    assert (reply.status_code, reply.headers["Retry-After"]) == (503, "5")
    assert error_body(reply) == failure(
        "The turn took longer than this server allows; nothing was changed. Send the same "
        "request again in a few seconds.",
        code="turn_timeout",
    )
