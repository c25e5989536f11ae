"""H8-H11: every route follows `/ai/run`'s input rules, checked once for the whole app (issue 36).

Each test lists the app's routes from `app.routes` (through `app_routes`, which opens the routers
FastAPI keeps as one entry), so a route added later, the protocol routes included, is covered
without anyone remembering to add it here.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import pytest
from server_flows import api, chat_flow, client_for
from starlette.routing import Mount
from support.approval_flows import booking_flow
from test_api_errors import HINT, error_body, failure

from picoflow import FlowEngine
from picoflow.server import Principal, api_key_auth, create_app, offer_scenario_export
from picoflow.server._input_rules import app_routes, hint_for
from picoflow.stores import MemoryStore

HELLO = {"flowName": "ChatFlow", "message": "hello"}
BOOK = {"flowName": "BookingFlow", "message": "book Ritz 900", "config": {"limit": 500}}
KEY = "metrics-key-0123456789"
FILL = {"flow_name": "ChatFlow", "approval_id": "abc", "turn_id": "t"}
NOT_JSON = [
    ("text/plain", "'text/plain'"),
    ("application/x-www-form-urlencoded", "'application/x-www-form-urlencoded'"),
    ("multipart/form-data; boundary=x", "'multipart/form-data; boundary=x'"),
    (None, "none"),
]


def full_app(**options: Any) -> tuple[FlowEngine, Any]:
    """Every route the server has: turns, chat, people, history, scenario, metrics, protocols."""
    engine = FlowEngine(flows=[chat_flow(), booking_flow()], store=MemoryStore())
    app = create_app(engine, chat_route=True, metrics=True, **options)
    return engine, offer_scenario_export(app)


def routes(app: Any, method: str) -> list[str]:
    """The path templates of the app's routes for `method`; a mount as one of its files."""
    found = []
    for template, methods, route in app_routes(app):
        if isinstance(route, Mount):
            found += [f"{template}/app.js"] if method == "GET" else []
        elif methods is not None and method in methods:
            found.append(template)
    assert found, method
    return found


def concrete(template: str, session: str, fill: str | None = None) -> str:
    """The template with its parameters filled in: the real session, or `fill` for all."""

    def value(match: re.Match[str]) -> str:
        if fill is not None:
            return fill
        return session if match.group(1) == "session_id" else FILL.get(match.group(1), "x")

    return re.sub(r"\{(\w+)(?::\w+)?\}", value, template)


async def started(client: Any) -> str:
    reply = await client.post("/ai/run", json=HELLO)
    assert reply.status_code == 200, reply.text
    return str(reply.json()["session"])


def test_h8_the_listing_sees_every_kind_of_route() -> None:
    """The routes the rules must hold on are all in the listing the tests below walk."""
    _, app = full_app()
    posts, gets = routes(app, "POST"), routes(app, "GET")
    for path in ("/ai/run", "/ai/chat", "/ai/stream", "/ai/end", "/ai/scenario"):
        assert path in posts
    for path in ("/ai/approvals/{approval_id}", "/ai/operator/reply", "/ai/operator/return"):
        assert path in posts
    assert "/ai/sessions/{session_id}/edit" in posts
    for path in ("/metrics", "/ai/events", "/ai/approvals", "/ai/handoffs", "/static/app.js"):
        assert path in gets


@pytest.mark.parametrize(("content_type", "shown"), NOT_JSON)
async def test_h8_every_post_route_answers_415_to_a_body_not_declared_json(
    content_type: str | None, shown: str
) -> None:
    """The message is `/ai/run`'s, with the route's own example body; nothing runs or changes."""
    engine, app = full_app()
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with client_for(app) as client:
        session = await started(client)
        before = await engine.get_session(session)
        for template in routes(app, "POST"):
            path = concrete(template, session)
            sent = {**headers, "CHAT_SESSION_ID": session}
            reply = await client.post(path, content=b'{"message": "hi"}', headers=sent)
            assert reply.status_code == 415, (path, reply.text)
            assert error_body(reply) == failure(
                f"The request's Content-Type is {shown}, but this server reads only JSON "
                f"bodies. {hint_for(template)}",
                code="unsupported_media_type",
            ), path
    assert await engine.get_session(session) == before
    assert hint_for("/ai/run") == HINT


async def test_h8_a_cross_site_form_cannot_resolve_an_approval() -> None:
    """The adversarial run's case: text/plain resolved an approval and the tool ran."""
    engine, app = full_app()
    async with client_for(app) as client:
        asked = (await client.post("/ai/run", json=BOOK)).json()
        session, approval = asked["session"], asked["pendingApprovals"][0]["id"]
        posted = await client.post(
            f"/ai/approvals/{approval}?session={session}",
            content=b'{"decision": "approve"}',
            headers={"Content-Type": "text/plain"},
        )
        bare = await client.post(
            "/ai/approvals/abc", content=b"{}", headers={"Content-Type": "text/plain"}
        )
    assert (posted.status_code, posted.json()["code"]) == (415, "unsupported_media_type")
    assert (bare.status_code, bare.json()["code"]) == (415, "unsupported_media_type")
    assert [a["id"] for a in await engine.pending_approvals(session)] == [approval]


@pytest.mark.parametrize(
    "body",
    [
        b'{"flowName": "ChatFlow", "flowName": "ChatFlow", "message": "hi"}',
        b'{"config": {"a": 1, "a": 2}}',
    ],
    ids=["top-level", "nested"],
)
async def test_h8_every_post_route_refuses_a_duplicate_json_key_with_400(body: bytes) -> None:
    engine, app = full_app()
    async with client_for(app) as client:
        session = await started(client)
        before = await engine.get_session(session)
        for template in routes(app, "POST"):
            path = concrete(template, session)
            headers = {"Content-Type": "application/json", "CHAT_SESSION_ID": session}
            reply = await client.post(path, content=body, headers=headers)
            assert reply.status_code == 400, (path, reply.text)
            assert error_body(reply)["code"] == "invalid_body", path
            assert "appears twice in one JSON object" in reply.json()["message"], path
    assert await engine.get_session(session) == before


@pytest.mark.parametrize(
    "headers",
    [[("X-Big", "x" * 40_000)], [(f"X-H{n}", "1") for n in range(120)]],
    ids=["big", "many"],
)
async def test_h9_every_route_answers_431_to_headers_over_the_limits(
    headers: list[tuple[str, str]],
) -> None:
    """GET and POST, `/metrics`, `/ai/events`, people, history, pages and files alike."""
    _, app = full_app()
    async with client_for(app) as client:
        session = await started(client)
        for method in ("GET", "POST"):
            for template in routes(app, method):
                path = concrete(template, session)
                reply = await client.request(method, path, json={}, headers=headers)
                assert reply.status_code == 431, (method, path, reply.text)
                assert error_body(reply)["code"] == "headers_too_large", path
                assert "accepts at most 100 headers and 32768 bytes" in reply.json()["message"]


@pytest.mark.parametrize("name", ["CHAT_SESSION_ID", "chat-session-id", "Idempotency-Key"])
async def test_h9_every_route_answers_400_to_a_header_naming_one_thing_sent_twice(
    name: str,
) -> None:
    """The approval routes took the first of two session headers; now every route refuses."""
    engine, app = full_app()
    async with client_for(app) as client:
        session = await started(client)
        before = await engine.get_session(session)
        twice = [(name, session), (name, session if name != "Idempotency-Key" else "k-2")]
        for method in ("GET", "POST"):
            for template in routes(app, method):
                path = concrete(template, session)
                reply = await client.request(method, path, json={}, headers=twice)
                assert reply.status_code == 400, (method, path, reply.text)
                assert error_body(reply) == failure(
                    f"The {name} header was sent more than once. Send it once, with one value.",
                    code="duplicate_header",
                ), path
    assert await engine.get_session(session) == before


async def test_h9_credentials_come_first_on_every_route_but_the_public_ones() -> None:
    """As on `/ai/run` (H4): a caller without a key hears 401, not what else is wrong."""
    _, app = full_app(authorize=api_key_auth({KEY: "ops"}))
    public = {"/", "/healthcheck", "/ready", "/operator", "/docs", "/redoc", "/openapi.json"}
    public.add("/docs/oauth2-redirect")
    async with client_for(app) as client:
        for method in ("GET", "POST"):
            for template in routes(app, method):
                path = concrete(template, "s")
                headers = [("Content-Type", "text/plain"), ("CHAT_SESSION_ID", "a")] * 2
                reply = await client.request(method, path, content=b"x", headers=headers)
                public_path = template in public or template.startswith("/static")
                expected = 400 if public_path else 401
                assert reply.status_code == expected, (method, path, reply.text)


async def test_h10_metrics_need_a_principal_when_authorize_is_set() -> None:
    _, app = full_app(authorize=api_key_auth({KEY: "ops"}))
    async with client_for(app) as client:
        anonymous = await client.get("/metrics")
        keyed = await client.get("/metrics", headers={"Authorization": f"Bearer {KEY}"})
    assert anonymous.status_code == 401
    assert error_body(anonymous)["code"] == "unauthorized"
    assert "picoflow" not in anonymous.text
    assert keyed.status_code == 200 and "picoflow_turns" in keyed.text


async def test_h8_get_routes_and_a_bodyless_end_need_no_content_type() -> None:
    _, app = full_app()
    async with client_for(app) as client:
        session = await started(client)
        for path in ("/ai/flows", "/healthcheck", "/ai/approvals", "/ai/handoffs", "/metrics"):
            assert (await client.get(path)).status_code == 200, path
        history = await client.get(f"/ai/sessions/{session}/history")
        ended = await client.post("/ai/end", headers={"CHAT_SESSION_ID": session})
    assert history.status_code == 200
    assert ended.status_code == 200  # no body, no type: `/ai/end` takes none


def operator(request: Any) -> Principal:
    return Principal("sam", frozenset({"operator", "approver"}))


@pytest.mark.parametrize(
    ("path", "body", "code", "limit"),
    [
        ("/ai/operator/reply", {"message": "y" * 51}, "message_too_long", "at most 50"),
        ("/ai/operator/return", {"note": "y" * 51}, "note_too_long", "at most 50"),
        (
            "/ai/approvals/abc",
            {"decision": "reject", "note": "y" * 51},
            "note_too_long",
            "at most 50",
        ),
        (
            "/ai/approvals/abc",
            {"decision": "edit", "args": {"a": "y" * 200}},
            "args_too_large",
            "at most 100",
        ),
        (
            "/ai/sessions/{s}/edit",
            {"revision": 1, "message": "y" * 51},
            "message_too_long",
            "at most 50",
        ),
    ],
)
async def test_h11_every_text_people_send_has_a_limit(
    path: str, body: dict[str, Any], code: str, limit: str
) -> None:
    """Operator replies, notes, decision args and edited messages: 413, naming the limit."""
    engine, app = full_app(authorize=operator, max_message_chars=50, max_config_bytes=100)
    async with client_for(app) as client:
        session = await started(client)
        before = await engine.get_session(session)
        url = path.replace("{s}", session)
        reply = await client.post(url, json=body, headers={"CHAT_SESSION_ID": session})
    assert reply.status_code == 413, reply.text
    assert error_body(reply)["code"] == code
    assert limit in reply.json()["message"]
    assert await engine.get_session(session) == before


async def test_h11_a_200000_character_operator_reply_is_413_at_the_default_limit() -> None:
    _, app = full_app()
    async with client_for(app) as client:
        session = await started(client)
        reply = await client.post(
            "/ai/operator/reply",
            json={"message": "y" * 200_000},
            headers={"CHAT_SESSION_ID": session},
        )
    assert (reply.status_code, reply.json()["code"]) == (413, "message_too_long")
    assert reply.json()["message"] == (
        "The message has 200000 characters; this server accepts at most 8000 "
        "(max_message_chars). Shorten it."
    )


async def test_h11_paths_are_logged_with_control_characters_escaped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A NUL, a terminal escape and a newline that would forge a log line, in the path of every
    route with a parameter; the reply to an unknown path shows them escaped too."""
    _, app = full_app()
    nasty, shown = "a%00b%1b%5B31m%0Aforged", "a\\x00b\\x1b[31m\\x0aforged"
    templated = [(m, t) for m in ("GET", "POST") for t in routes(app, m) if "{" in t]
    twice = [("CHAT_SESSION_ID", "a"), ("CHAT_SESSION_ID", "b")]
    with caplog.at_level(logging.INFO, logger="picoflow.server._errors"):
        async with client_for(app) as client:
            for method, template in templated:
                path = concrete(template, "", fill=nasty)
                reply = await client.request(method, path, json={}, headers=twice)
                assert reply.status_code == 400, (path, reply.text)
            unknown = await client.get(f"/nope/{nasty}")
    lines = [record.getMessage() for record in caplog.records]
    for method, template in templated:
        logged = f"{method} {concrete(template, '', fill=shown)} answered 400 duplicate_header"
        assert any(line.startswith(logged) for line in lines), (logged, lines)
    assert not any(char in line for line in lines for char in "\x00\x1b\n")
    assert f"GET /nope/{shown} is not part of this API" in unknown.json()["message"]


async def test_h8_h9_a_route_added_later_follows_the_rules_too() -> None:
    """The rules are the app's, not each route's: a route nobody told about them is covered."""
    engine = FlowEngine(flows=[chat_flow()], store=MemoryStore())
    app = create_app(engine)
    ran: list[str] = []

    async def later() -> dict[str, bool]:
        ran.append("later")
        return {"ok": True}

    app.add_api_route("/later", later, methods=["POST"])
    async with client_for(app) as client:
        typed = await client.post("/later", content=b"{}", headers={"Content-Type": "text/plain"})
        twice = await client.post("/later", json={}, headers=[("Idempotency-Key", "a")] * 2)
        big = await client.post("/later", json={}, headers={"X-Big": "x" * 40_000})
        fine = await client.post("/later", json={})
    assert [typed.status_code, twice.status_code, big.status_code] == [415, 400, 431]
    assert typed.json()["message"].endswith(
        "Send a JSON object with Content-Type: application/json."
    )
    assert fine.status_code == 200 and ran == ["later"]


async def test_h9_the_people_routes_read_the_session_as_the_turn_routes_do() -> None:
    """Two spellings naming two sessions, or `?session=` and the header disagreeing: 400."""
    _, app = api(chat_flow())
    async with client_for(app) as client:
        one, two = await started(client), await started(client)
        both = {"CHAT_SESSION_ID": one, "chat-session-id": two}
        spelled = await client.post("/ai/operator/reply", json={"message": "hi"}, headers=both)
        queried = await client.post(
            f"/ai/operator/reply?session={one}",
            json={"message": "hi"},
            headers={"CHAT_SESSION_ID": two},
        )
        run = await client.post("/ai/run", json=HELLO, headers=both)
    assert spelled.status_code == queried.status_code == run.status_code == 400
    assert spelled.json()["message"] == run.json()["message"]
    assert error_body(queried)["code"] == "invalid_session_header"


async def test_h8_a_refusal_of_the_rules_carries_the_cors_headers() -> None:
    """CORS wraps the rules, so a page of an allowed origin can read why it was refused."""
    origin = "http://shop.example"
    _, app = api(chat_flow(), cors_origins=[origin])
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/approvals/a1",
            content=b"{}",
            headers={"Content-Type": "text/plain", "Origin": origin},
        )
    assert reply.status_code == 415
    assert reply.headers["Access-Control-Allow-Origin"] == origin
