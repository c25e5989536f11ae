"""Every failure keeps the envelope and gets the status that says what the client should do."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import pytest
from server_flows import api, chat_flow, client_for, last_human
from support.flows import two_step_flow

from picoflow import Flow, FlowEngine, Step, stay, tool
from picoflow.errors import StoreError
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

HINT = (
    'Send a JSON object such as {"flowName": "HotelFlow", "message": "Hi"} with '
    "Content-Type: application/json."
)
ROUTES = (
    "POST /ai/run, POST /ai/stream, GET /ai/stream/{turn}, POST /ai/end, GET /ai/flows, "
    "GET /ai/sessions/{id}/history, POST /ai/sessions/{id}/rewind|undo|fork|edit, "
    "GET /healthcheck, GET /ready"
)


def failure(message: str, session: str = "", *, code: str) -> dict[str, Any]:
    return {
        "success": False,
        "completed": False,
        "message": message,
        "session": session,
        "contentType": "text/plain",
        "code": code,
    }


def error_body(reply: Any) -> dict[str, Any]:
    """The envelope without its request id, which must be the X-Request-ID header (H2)."""
    body = dict(reply.json())
    request_id = body.pop("requestId")
    assert request_id == reply.headers["X-Request-ID"]
    assert re.fullmatch(r"[0-9a-f]{32}|[A-Za-z0-9._:-]{1,128}", request_id)
    return body


async def start(client: Any, flow: str = "ChatFlow") -> str:
    reply = await client.post("/ai/run", json={"flowName": flow, "message": "hello"})
    assert reply.status_code == 200
    return reply.json()["session"]


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_e2_unknown_flow_is_400(route: str) -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(route, json={"flowName": "NoSuchFlow", "message": "hi"})
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "Unknown flow 'NoSuchFlow'. Registered flows: ChatFlow (GET /ai/flows lists them).",
        code="unknown_flow",
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (
            b"{not json",
            "the body is not valid JSON: Expecting property name enclosed in double quotes",
        ),
        (b"", "the body is not valid JSON: Expecting value"),
        (b'{"flowName": NaN}', "the body is not valid JSON: NaN is not a JSON number"),
        (b"[1, 2]", "the body must be a JSON object"),
        (b'{"message": "hi"}', "flowName: Field required"),
        (b'{"flowName": "ChatFlow", "message": 42}', "message: Input should be a valid string"),
        (
            b'{"flowName": "ChatFlow", "config": "tenant=acme"}',
            "config: Input should be a valid dictionary",
        ),
        # Fields that would be ignored without a word: a session id in the body started a new
        # session every turn, `userMessage` (PicoFlow's Swagger name) sent an empty message.
        (
            b'{"flowName": "ChatFlow", "message": "hi", "sessionId": "abc"}',
            "body: the session id goes in the CHAT_SESSION_ID header, not in the body's "
            "'sessionId' (without the header every message starts a new session)",
        ),
        (
            b'{"flowName": "ChatFlow", "message": "hi", "session": "abc"}',
            "body: the session id goes in the CHAT_SESSION_ID header, not in the body's "
            "'session' (without the header every message starts a new session)",
        ),
        (
            b'{"flowName": "ChatFlow", "userMessage": "hi"}',
            "body: the user's text goes in 'message', not 'userMessage'",
        ),
    ],
)
@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_malformed_body_is_400_never_a_raw_422(route: str, body: bytes, problem: str) -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(route, content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"The request is not valid ({problem}). {HINT}", code="invalid_body"
    )


async def test_a_misplaced_session_id_reaches_no_model_and_other_fields_are_ignored() -> None:
    """E2/H1: a body naming the session is refused before any turn; unknown fields pass.

    PicoFlow's server ignores fields it does not read, and so does this one, except the few
    that would otherwise be ignored to the client's cost (see `RunRequest`).
    """
    model = ScriptedChatModel(script=["ok"])
    engine, app = api(two_step_flow(model))
    async with client_for(app) as client:
        refused = await client.post(
            "/ai/run", json={"flowName": "HotelFlow", "message": "hi", "session_id": "abc"}
        )
        extra = await client.post(
            "/ai/run", json={"flowName": "HotelFlow", "message": "hi", "locale": "en-US"}
        )
    assert refused.status_code == 400 and error_body(refused)["code"] == "invalid_body"
    assert extra.status_code == 200 and extra.json()["success"] is True
    assert len(model.requests) == 1


async def test_a_form_body_is_415() -> None:
    """A form is what a page of another site can post without a preflight (issue #25)."""
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", data={"flowName": "ChatFlow"})
    assert reply.status_code == 415
    assert error_body(reply) == failure(
        "The request's Content-Type is 'application/x-www-form-urlencoded', but this server "
        f"reads only JSON bodies. {HINT}",
        code="unsupported_media_type",
    )


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream", "/ai/end"])
@pytest.mark.parametrize("bad", ["short", "has spaces in it ok?", "x" * 200, "../../etc/passwd/x"])
async def test_p5_malformed_session_id_is_400(route: str, bad: str) -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(
            route, json={"flowName": "ChatFlow", "message": "hi"}, headers={"CHAT_SESSION_ID": bad}
        )
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "The CHAT_SESSION_ID header is not a session id this server issued. Send the `session` "
        "value of an earlier reply, or omit the header to start a new session.",
        code="invalid_session_header",
    )


async def test_two_spellings_naming_different_sessions_is_400() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first, second = await start(client), await start(client)
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hi"},
            headers={"CHAT_SESSION_ID": first, "chat-session-id": second},
        )
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"The CHAT_SESSION_ID and chat-session-id headers name different sessions ('{first}' "
        f"and '{second}'). Send the session id in one of them.",
        code="invalid_session_header",
    )


async def test_end_without_a_session_header_is_400() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/end")
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "Send the session to end in the CHAT_SESSION_ID header; none was sent.",
        code="invalid_session_header",
    )


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_a_message_over_the_limit_is_413_and_reaches_no_model(route: str) -> None:
    model = ScriptedChatModel(script=["ok"])
    _, app = api(two_step_flow(model), max_message_chars=10)
    async with client_for(app) as client:
        long = await client.post(route, json={"flowName": "HotelFlow", "message": "x" * 11})
        fits = await client.post("/ai/run", json={"flowName": "HotelFlow", "message": "x" * 10})
    assert long.status_code == 413
    assert error_body(long) == failure(
        "The message has 11 characters; this server accepts at most 10. Shorten it or send it "
        "over several turns.",
        code="message_too_long",
    )
    assert fits.status_code == 200
    assert len(model.requests) == 1


async def test_e2_an_empty_message_on_a_running_session_is_400_with_the_session() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        session = await start(client)
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "  "},
            headers={"CHAT_SESSION_ID": session},
        )
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "The message is empty. Send the user's text; an empty message only starts a new session.",
        session,
        code="invalid_request",
    )
    assert reply.headers["CHAT_SESSION_ID"] == session


async def test_a_session_of_another_flow_is_400() -> None:
    _, app = api(chat_flow(name="ChatFlow"), chat_flow(name="OtherFlow"))
    async with client_for(app) as client:
        session = await start(client, "ChatFlow")
        reply = await client.post(
            "/ai/run",
            json={"flowName": "OtherFlow", "message": "hi"},
            headers={"CHAT_SESSION_ID": session},
        )
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"Session '{session}' belongs to flow 'ChatFlow', not 'OtherFlow'. Continue it with "
        "flow 'ChatFlow', or omit the session id to start a new session.",
        session,
        code="invalid_request",
    )


def racing_flow(other: dict[str, Any]) -> type[Flow]:
    """A flow whose model, on "race", lets a second engine save the same session first (P4)."""

    async def policy(messages: list[Any], tool_names: list[str]) -> str:
        said = last_human(messages)
        if said == "race":
            result = await other["engine"].run("ChatFlow", "sneak in", other["session"])
            assert result.success, result.message
        return f"echo: {said}"

    return chat_flow(ScriptedChatModel(policy=policy))


async def test_p4_a_session_saved_by_another_engine_meanwhile_is_409() -> None:
    store, other = MemoryStore(), {}
    flow = racing_flow(other)
    engine, app = api(flow, store=store)
    other["engine"] = FlowEngine(flows=[flow], store=store)  # e.g. a second worker process
    async with client_for(app) as client:
        session = other["session"] = await start(client)
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "race"},
            headers={"CHAT_SESSION_ID": session},
        )
    assert reply.status_code == 409
    assert error_body(reply) == failure(
        "Another request saved this session first; nothing was changed. Send the same request "
        "again: it runs on the saved session.",
        session,
        code="session_conflict",
    )
    assert reply.headers["CHAT_SESSION_ID"] == session
    doc = await engine.get_session(session)
    said = [m for m in doc["memory"]["GreetStep"]["messages"] if m["type"] in ("human", "ai")]
    assert [m["data"]["content"] for m in said] == [
        "hello",
        "echo: hello",
        "sneak in",
        "echo: sneak in",
    ]


STORE_DOWN = (
    "The session store is unavailable right now; nothing was changed. Send the same request "
    "again in a few seconds."
)
LEAKY = "SQLiteStore could not write /srv/app/sessions.db: disk I/O error (mongodb://db-1:27017)"


class FailingSaveStore(MemoryStore):
    """A store that is reachable for reads but refuses writes, as a full disk would."""

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        raise StoreError(LEAKY)


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_h2_h3_a_store_failure_is_503_with_retry_after_and_no_internals(
    route: str, caplog: pytest.LogCaptureFixture
) -> None:
    _, app = api(chat_flow(), store=FailingSaveStore())
    async with client_for(app) as client:
        session = await start(client)
        reply = await client.post(
            route,
            json={"flowName": "ChatFlow", "message": "hi"},
            headers={"CHAT_SESSION_ID": session},
        )
    request_id = reply.headers["X-Request-ID"]
    if route == "/ai/stream":
        done = reply.text.split("event: done\ndata: ")[1].split("\n")[0]  # then `id:` (O5)
        assert "/srv" not in reply.text and "db-1" not in reply.text
        assert json.loads(done) == {
            **failure(STORE_DOWN, session, code="store_unavailable"),
            "requestId": request_id,
            "status": 503,
        }
    else:
        assert (reply.status_code, reply.headers["Retry-After"]) == (503, "5")
        assert error_body(reply) == failure(STORE_DOWN, session, code="store_unavailable")
    logged = [r for r in caplog.records if r.name == "picoflow.server._errors"]
    assert [r.getMessage() for r in logged] == [
        f"turn of ChatFlow failed with StoreError (request id {request_id}): {LEAKY}"
    ]


class BuggyStep(Step):
    def get_prompt(self) -> str:
        raise self.flow.bug  # type: ignore[attr-defined]


def buggy_flow(bug: Exception) -> type[Flow]:
    model = ScriptedChatModel(script=["never reached"])

    class BuggyFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.bug = bug

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [BuggyStep(self)]

    return BuggyFlow


def bug_message(request_id: str) -> str:
    return (
        "The server failed to handle this request because of a bug in the flow or the server; "
        f"the session was not changed. The failure is logged with request id {request_id}: "
        "retry, and report that id if it happens again."
    )


@pytest.mark.parametrize("bug", [KeyError("criteria"), ValueError("bad date")])
async def test_p3_a_bug_in_flow_code_is_500_with_a_logged_request_id(
    bug: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    _, app = api(buggy_flow(bug))
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json={"flowName": "BuggyFlow", "message": "hi"})
    assert reply.status_code == 500
    body = reply.json()
    request_id = body["requestId"]
    assert re.fullmatch(r"[0-9a-f]{32}", request_id)
    assert body == {
        **failure(bug_message(request_id), code="internal_error"),
        "requestId": request_id,
    }
    assert reply.headers["X-Request-ID"] == request_id
    assert str(bug) not in body["message"]  # internals stay in the log
    logged = [r for r in caplog.records if r.name == "picoflow.server._errors"]
    assert [r.getMessage() for r in logged] == [
        f"turn of BuggyFlow failed with {type(bug).__name__} (request id {request_id}): The turn "
        f"failed and the session was not changed: {type(bug).__name__}: {bug}"
    ]
    assert logged[0].request_id == request_id


async def test_a_500_reuses_the_proxy_request_id() -> None:
    _, app = api(buggy_flow(KeyError("x")))
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/run",
            json={"flowName": "BuggyFlow", "message": "hi"},
            headers={"X-Request-ID": "edge-7f3a"},
        )
    assert reply.status_code == 500
    assert reply.json()["requestId"] == "edge-7f3a"


class LoopStep(Step):
    @tool
    def think(self) -> Any:
        """Think again."""
        return stay("keep thinking")


async def test_r7_a_tool_loop_is_500_with_a_request_id() -> None:
    model = ScriptedChatModel(script=[tool_call("think")] * 3)

    class LoopFlow(Flow):
        max_tool_rounds = 2

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [LoopStep(self)]

    _, app = api(LoopFlow)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json={"flowName": "LoopFlow", "message": "hi"})
    assert reply.status_code == 500
    assert reply.json()["message"] == bug_message(reply.json()["requestId"])


class ExplodingDeleteStore(MemoryStore):
    async def delete(self, session_id: str) -> bool:
        raise RuntimeError("driver crashed")


async def test_an_exception_escaping_a_route_is_500_with_a_logged_request_id(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, app = api(chat_flow(), store=ExplodingDeleteStore())
    async with client_for(app, raise_app_exceptions=False) as client:
        session = await start(client)
        reply = await client.post("/ai/end", headers={"CHAT_SESSION_ID": session})
    assert reply.status_code == 500
    request_id = reply.json()["requestId"]
    assert error_body(reply) == failure(bug_message(request_id), code="internal_error")
    logged = [r for r in caplog.records if r.name == "picoflow.server._errors"]
    assert [r.getMessage() for r in logged] == [f"POST /ai/end failed (request id {request_id})"]
    assert logged[0].levelno == logging.ERROR and "driver crashed" in caplog.text


async def test_h2_a_store_error_outside_a_turn_is_503_without_internals() -> None:
    class DownStore(MemoryStore):
        async def delete(self, session_id: str) -> bool:
            raise StoreError(LEAKY)

    _, app = api(chat_flow(), store=DownStore())
    async with client_for(app) as client:
        session = await start(client)
        reply = await client.post("/ai/end", headers={"CHAT_SESSION_ID": session})
    assert (reply.status_code, reply.headers["Retry-After"]) == (503, "5")
    assert error_body(reply) == failure(STORE_DOWN, code="store_unavailable")


@pytest.mark.parametrize(
    ("method", "path", "status", "reason", "code"),
    [
        ("GET", "/ai/nothing", 404, "Not Found", "not_found"),
        ("GET", "/ai/run", 405, "Method Not Allowed", "method_not_allowed"),
    ],
)
async def test_unknown_routes_and_methods_keep_the_envelope(
    method: str, path: str, status: int, reason: str, code: str
) -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.request(method, path)
    assert reply.status_code == status
    assert error_body(reply) == failure(
        f"{reason}: {method} {path} is not part of this API. The routes are {ROUTES}.",
        code=code,
    )
