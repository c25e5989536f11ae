"""H4: pluggable authentication, an API-key helper, sessions owned by their principal."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from server_flows import GREETING, api, chat_flow, client_for, sse
from test_api_errors import error_body, failure

from picoflow import FlowEngine
from picoflow.server import api_key_auth, create_app
from picoflow.stores import MemoryStore

ALICE_KEY = "alice-key-0123456789abcdef"
BOB_KEY = "bob-key-0123456789abcdef"
KEYS = {ALICE_KEY: "alice", BOB_KEY: "bob"}
ALICE = {"Authorization": f"Bearer {ALICE_KEY}"}
BOB = {"X-API-Key": BOB_KEY}
UNAUTHORIZED = (
    "This server needs credentials, and the request has none it accepts. Send your API key as "
    "`Authorization: Bearer <key>` (or `X-API-Key: <key>`)."
)
HELLO = {"flowName": "ChatFlow", "message": "hello"}


def secured(**options: Any) -> tuple[FlowEngine, Any]:
    return api(chat_flow(), authorize=api_key_auth(KEYS), **options)


@pytest.mark.parametrize(
    ("method", "route"),
    [("POST", "/ai/run"), ("POST", "/ai/stream"), ("POST", "/ai/end"), ("GET", "/ai/flows")],
)
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer wrong-key-0123456789"},
        {"X-API-Key": ""},
        {"Authorization": ALICE_KEY},
    ],
    ids=["none", "wrong", "empty", "no-bearer-scheme"],
)
async def test_h4_without_valid_credentials_every_api_route_is_401(
    method: str, route: str, headers: dict[str, str]
) -> None:
    _, app = secured()
    async with client_for(app) as client:
        reply = await client.request(method, route, json=HELLO, headers=headers)
    assert reply.status_code == 401
    assert reply.headers["WWW-Authenticate"] == "Bearer"
    assert error_body(reply) == failure(UNAUTHORIZED, code="unauthorized")


async def test_h4_health_chat_page_and_docs_need_no_credentials() -> None:
    _, app = secured()
    async with client_for(app) as client:
        for path in ("/healthcheck", "/", "/static/app.js", "/docs", "/openapi.json"):
            assert (await client.get(path)).status_code == 200, path


@pytest.mark.parametrize(
    "headers", [ALICE, {"authorization": f"bearer  {ALICE_KEY} "}, {"X-API-Key": ALICE_KEY}]
)
async def test_h4_a_key_works_as_bearer_token_or_x_api_key(headers: dict[str, str]) -> None:
    engine, app = secured()
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json=HELLO, headers=headers)
    assert reply.status_code == 200
    assert reply.json()["message"] == GREETING
    assert (await engine.get_session(reply.json()["session"]))["owner"] == "alice"


async def test_h4_another_principals_session_behaves_as_an_unknown_id() -> None:
    """Bob holding Alice's id gets exactly what an id nobody issued gets: a new session."""
    engine, app = secured()
    unknown = "U" * 24
    async with client_for(app) as client:
        alice = (await client.post("/ai/run", json=HELLO, headers=ALICE)).json()["session"]

        async def as_bob(route: str, session: str) -> Any:
            headers = {**BOB, "CHAT_SESSION_ID": session}
            return await client.post(route, json={**HELLO, "message": "hi"}, headers=headers)

        foreign, never = await as_bob("/ai/run", alice), await as_bob("/ai/run", unknown)
        for reply in (foreign, never):
            assert reply.status_code == 200
            assert reply.json()["session"] not in (alice, unknown)
            assert reply.json()["step"] == "GreetStep" and reply.json()["completed"] is False
        streamed = await as_bob("/ai/stream", alice)
        assert "chat_session_id" not in streamed.headers
        assert sse(streamed.text)[-1][1]["session"] not in (alice, "")
        ended, ended_unknown = await as_bob("/ai/end", alice), await as_bob("/ai/end", unknown)
        assert ended.json() == {**ended_unknown.json(), "session": alice}
        assert ended.json()["message"] == "There was no such session to end."
        mine = await client.post("/ai/end", headers={**ALICE, "CHAT_SESSION_ID": alice})
    doc = await engine.get_session(alice, owner="alice")
    assert doc is None  # Alice could end it; Bob could not
    assert mine.json()["message"] == "The session was ended."


async def test_h4_bob_cannot_touch_alices_session_through_the_engine() -> None:
    engine, app = secured()
    async with client_for(app) as client:
        alice = (await client.post("/ai/run", json=HELLO, headers=ALICE)).json()["session"]
        await client.post(
            "/ai/run", json={**HELLO, "message": "bye"}, headers={**BOB, "CHAT_SESSION_ID": alice}
        )
    doc = await engine.get_session(alice)
    said = [m["data"]["content"] for m in doc["memory"]["GreetStep"]["messages"][1:]]
    assert (doc["revision"], doc["run_status"], said) == (0, "running", ["hello", GREETING])
    assert await engine.get_session(alice, owner="bob") is None
    assert await engine.end_session(alice, owner="bob") is False
    assert await engine.get_session(alice, owner="alice") is not None


async def test_h4_sessions_made_without_an_owner_are_not_reachable_by_a_principal() -> None:
    store = MemoryStore()
    engine = FlowEngine(flows=[chat_flow()], store=store)
    result = await engine.run("ChatFlow", "hello")
    again = await engine.run("ChatFlow", "hi", result.session_id, owner="alice")
    assert again.success and again.session_id != result.session_id
    trusted = await engine.run("ChatFlow", "hi", again.session_id)  # no owner: trusted caller
    assert trusted.session_id == again.session_id


async def test_h4_an_async_hook_may_refuse_with_403() -> None:
    async def authorize(request: Any) -> str | None:
        user = request.headers.get("X-Forwarded-User")
        if user == "mallory":
            raise PermissionError("mallory's account is suspended; contact support.")
        return user

    engine, app = api(chat_flow(), authorize=authorize)
    async with client_for(app) as client:
        ok = await client.post("/ai/run", json=HELLO, headers={"X-Forwarded-User": "carol"})
        refused = await client.post("/ai/run", json=HELLO, headers={"X-Forwarded-User": "mallory"})
    assert ok.status_code == 200
    assert (await engine.get_session(ok.json()["session"]))["owner"] == "carol"
    assert refused.status_code == 403
    assert error_body(refused) == failure(
        "mallory's account is suspended; contact support.", code="forbidden"
    )


async def test_h4_a_hook_returning_a_non_string_is_a_logged_bug(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, app = api(chat_flow(), authorize=lambda request: 42)
    async with client_for(app, raise_app_exceptions=False) as client:
        reply = await client.post("/ai/run", json=HELLO)
    assert reply.status_code == 500 and reply.json()["code"] == "internal_error"
    assert (
        "authorize() must return a principal name (a non-empty string), a Principal or None, "
        "got 42." in caplog.text
    )
    assert any(r.levelno == logging.ERROR for r in caplog.records)


async def test_h4_no_body_is_read_for_a_caller_without_credentials() -> None:
    _, app = secured(max_body_bytes=10)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=b"x" * 1000)
    assert reply.status_code == 401  # not 413: the body was never looked at


async def test_h4_docs_can_be_switched_off() -> None:
    _, app = secured(expose_docs=False)
    async with client_for(app) as client:
        for path in ("/docs", "/redoc", "/openapi.json"):
            reply = await client.get(path)
            assert reply.status_code == 404, path
            assert reply.json()["code"] == "not_found"


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({}, "api_key_auth needs at least one API key; none were given."),
        (
            {"short": "alice"},
            "API keys must be strings of at least 16 characters; the key of principal 'alice' "
            "is 5. Generate keys with "
            "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`.",
        ),
        (
            {ALICE_KEY: ""},
            "Each API key must name a principal (a non-empty string), got ''.",
        ),
    ],
)
def test_h4_api_key_auth_refuses_unusable_keys(keys: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        api_key_auth(keys)
    assert str(caught.value) == message


async def test_h4_two_keys_of_one_principal_share_its_sessions() -> None:
    """Key rotation: the old and the new key both work until the old one is removed."""
    new_key = "alice-new-key-0123456789"
    engine = FlowEngine(flows=[chat_flow()], store=MemoryStore())
    app = create_app(engine, authorize=api_key_auth({ALICE_KEY: "alice", new_key: "alice"}))
    async with client_for(app) as client:
        first = await client.post("/ai/run", json=HELLO, headers=ALICE)
        session = first.json()["session"]
        second = await client.post(
            "/ai/run",
            json={**HELLO, "message": "again"},
            headers={"X-API-Key": new_key, "CHAT_SESSION_ID": session},
        )
    assert second.json()["session"] == session
