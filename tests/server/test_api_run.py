"""The PicoFlow contract over HTTP: /ai/run, /ai/end, /ai/flows, /healthcheck, docs, CORS, page."""

from __future__ import annotations

import re
from datetime import datetime

import httpx
import pytest
from server_flows import GREETING, TABLE, api, chat_flow, client_for
from support.flows import two_step_flow

from picoflow.server import create_app
from picoflow.testing import ScriptedChatModel, tool_call


async def test_run_starts_a_session_and_names_it_in_body_and_header() -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
    assert reply.status_code == 200
    body = reply.json()
    session = body["session"]
    assert body == {
        "success": True,
        "completed": False,
        "message": GREETING,
        "session": session,
        "contentType": "text/plain",
        "step": "GreetStep",
    }
    assert reply.headers["CHAT_SESSION_ID"] == session
    assert reply.headers["chat-session-id"] == session
    assert (await engine.get_session(session))["flow"] == "ChatFlow"


async def test_run_header_round_trip_continues_the_session() -> None:
    model = ScriptedChatModel(script=["Hi! Where to?", "Noted: Lisbon."])
    engine, app = api(two_step_flow(model))
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "HotelFlow", "message": "hi"})
        session = first.headers["CHAT_SESSION_ID"]
        second = await client.post(
            "/ai/run",
            json={"flowName": "HotelFlow", "message": "Lisbon"},
            headers={"CHAT_SESSION_ID": session},
        )
    assert second.status_code == 200
    assert second.json()["session"] == session
    assert second.headers["CHAT_SESSION_ID"] == session
    assert second.json()["message"] == "Noted: Lisbon."
    doc = await engine.get_session(session)
    assert doc["revision"] == 1
    sent = [m.text for m in model.requests[1].messages if m.type != "system"]
    assert sent == ["hi", "Hi! Where to?", "Lisbon"]


@pytest.mark.parametrize("header", ["chat_session_id", "Chat_Session_Id", "chat-session-id"])
async def test_run_accepts_the_header_in_any_case_and_with_dashes(header: str) -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        session = first.json()["session"]
        second = await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": "again"}, headers={header: session}
        )
    assert second.json()["session"] == session
    assert (await engine.get_session(session))["revision"] == 1


async def test_run_with_an_empty_header_starts_a_new_session() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        second = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hi"},
            headers={"CHAT_SESSION_ID": ""},
        )
    assert second.status_code == 200
    assert second.json()["session"] != first.json()["session"]


async def test_p5_run_with_a_completed_session_id_starts_a_new_session() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        old = first.json()["session"]
        end = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "bye"},
            headers={"CHAT_SESSION_ID": old},
        )
        assert end.json() == {
            "success": True,
            "completed": True,
            "message": "Goodbye!",
            "session": old,
            "contentType": "text/plain",
            "step": "EndStep",
        }
        again = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hello"},
            headers={"CHAT_SESSION_ID": old},
        )
    new = again.json()["session"]
    assert again.status_code == 200 and new != old
    assert again.headers["CHAT_SESSION_ID"] == new
    assert again.json()["completed"] is False and again.json()["step"] == "GreetStep"


async def table_reply(accept: str | None) -> httpx.Response:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        headers = {"CHAT_SESSION_ID": first.json()["session"]}
        if accept is not None:
            headers["Accept"] = accept
        return await client.post(
            "/ai/run", json={"flowName": "ChatFlow", "message": "a table please"}, headers=headers
        )


@pytest.mark.parametrize(
    "accept",
    [None, "*/*", "application/json", "application/json, text/plain, */*", "text/*"],
)
async def test_run_answers_a_markdown_reply_with_the_envelope_by_default(
    accept: str | None,
) -> None:
    """PicoFlow's JS client and chat-ui call .json() on every reply (issue 14, item 6)."""
    table = await table_reply(accept)
    session = table.headers["CHAT_SESSION_ID"]
    assert (table.status_code, table.headers["content-type"]) == (200, "application/json")
    assert table.json() == {
        "success": True,
        "completed": False,
        "message": TABLE,
        "session": session,
        "contentType": "text/markdown",
        "step": "TableStep",
    }


@pytest.mark.parametrize(
    "accept", ["text/markdown", "text/markdown, */*", "application/json;q=0.5, text/markdown"]
)
async def test_run_answers_raw_markdown_when_accept_asks_for_it(accept: str) -> None:
    table = await table_reply(accept)
    assert table.status_code == 200
    assert table.headers["content-type"] == "text/markdown; charset=utf-8"
    assert table.text == TABLE
    assert re.fullmatch(r"[A-Za-z0-9_-]{24}", table.headers["CHAT_SESSION_ID"])


async def test_run_without_a_message_opens_a_new_session() -> None:
    model = ScriptedChatModel(script=["Welcome! Where would you like to stay?"])
    _, app = api(two_step_flow(model))
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json={"flowName": "HotelFlow"})
    assert reply.status_code == 200
    assert reply.json()["message"] == "Welcome! Where would you like to stay?"


async def test_f7_run_stores_config_in_the_new_session_context() -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hello", "config": {"tenant": "acme"}},
        )
    doc = await engine.get_session(reply.json()["session"])
    assert doc["context"] == {"config": {"tenant": "acme"}}


async def test_end_deletes_the_session() -> None:
    engine, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hello"})
        session = first.json()["session"]
        ended = await client.post("/ai/end", headers={"CHAT_SESSION_ID": session})
        again = await client.post("/ai/end", headers={"chat-session-id": session})
    assert ended.status_code == 200
    assert ended.json() == {
        "success": True,
        "session": session,
        "message": "The session was ended.",
    }
    assert await engine.get_session(session) is None
    assert again.status_code == 200
    assert again.json() == {
        "success": True,
        "session": session,
        "message": "There was no such session to end.",
    }


async def test_flows_lists_the_registered_names_in_order() -> None:
    _, app = api(chat_flow(name="ChatFlow"), chat_flow(name="OtherFlow"))
    async with client_for(app) as client:
        reply = await client.get("/ai/flows")
    assert reply.status_code == 200
    assert reply.json() == ["ChatFlow", "OtherFlow"]


async def test_healthcheck_answers_ok_with_a_utc_timestamp() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.get("/healthcheck")
    assert reply.status_code == 200
    assert reply.json()["status"] == "ok"
    assert datetime.fromisoformat(reply.json()["timestamp"]).utcoffset().total_seconds() == 0


HISTORY_TAILS = ("", "/history", "/rewind", "/undo", "/fork", "/edit")


async def test_openapi_describes_the_wire_names() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        schema = (await client.get("/openapi.json")).json()
        docs = await client.get("/docs")
    assert docs.status_code == 200 and "swagger" in docs.text.lower()
    components = schema["components"]["schemas"]
    assert list(components["RunRequest"]["properties"]) == ["flowName", "message", "config"]
    assert components["RunRequest"]["required"] == ["flowName"]
    assert list(components["RunEnvelope"]["properties"]) == [
        "success",
        "completed",
        "message",
        "session",
        "contentType",
        "step",
        "pendingApprovals",  # K1: absent from a reply when nothing waits
    ]
    assert "requestId" in components["ErrorEnvelope"]["properties"]
    run = schema["paths"]["/ai/run"]["post"]
    assert [p["name"] for p in run["parameters"]] == [
        "CHAT_SESSION_ID",
        "chat-session-id",
        "Idempotency-Key",
    ]
    body = run["requestBody"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/RunRequest"}
    assert {"400", "401", "403", "409", "413", "422", "500", "503"} <= set(run["responses"])
    for status in ("413", "422"):  # never FastAPI's own validation shape
        content = run["responses"][status]["content"]["application/json"]["schema"]
        assert content == {"$ref": "#/components/schemas/ErrorEnvelope"}
    assert "HTTPValidationError" not in components
    people = {  # K7
        "/ai/approvals",
        "/ai/approvals/{approval_id}",
        "/ai/handoffs",
        "/ai/operator/reply",
        "/ai/operator/return",
        "/ai/events",
    }
    history = {f"/ai/sessions/{{session_id}}{tail}" for tail in HISTORY_TAILS}  # W1-W4
    assert set(schema["paths"]) == {
        "/ai/run",
        "/ai/stream",
        "/ai/stream/{turn_id}",  # O5: the rest of a dropped stream
        "/ai/end",
        "/ai/flows",
        "/healthcheck",
        *people,
        *history,
        "/ready",
        "/ag-ui/{flow_name}",  # G1
        "/ai-sdk/{flow_name}",  # G2
        "/ai-sdk/{flow_name}/{chat_id}/stream",  # G2, O5: useChat's reconnect
    }


async def test_cors_allows_and_exposes_the_session_header() -> None:
    _, app = api(chat_flow(), cors_origins=["https://chat.example.com"])
    async with client_for(app) as client:
        preflight = await client.options(
            "/ai/run",
            headers={
                "Origin": "https://chat.example.com",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "content-type,chat_session_id",
            },
        )
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hello"},
            headers={"Origin": "https://chat.example.com"},
        )
        other = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hello"},
            headers={"Origin": "https://evil.example.net"},
        )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "https://chat.example.com"
    assert "chat_session_id" in preflight.headers["access-control-allow-headers"].lower()
    assert reply.headers["access-control-allow-origin"] == "https://chat.example.com"
    exposed = reply.headers["access-control-expose-headers"].lower().split(", ")
    assert {"chat_session_id", "chat-session-id", "x-request-id"} <= set(exposed)
    assert "access-control-allow-origin" not in other.headers


async def test_without_cors_origins_no_cross_site_headers_are_sent() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/run",
            json={"flowName": "ChatFlow", "message": "hello"},
            headers={"Origin": "https://chat.example.com"},
        )
    assert reply.status_code == 200
    assert "access-control-allow-origin" not in reply.headers


async def test_the_chat_page_and_its_assets_are_served_and_need_no_other_site() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        page = await client.get("/")
        assets = [await client.get(f"/static/{name}") for name in ("app.js", "app.css")]
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert 'src="static/app.js"' in page.text and 'href="static/app.css"' in page.text
    assert [a.status_code for a in assets] == [200, 200]
    assert (
        assets[0].headers["content-type"].startswith(("text/javascript", "application/javascript"))
    )
    for text in (page.text, *(a.text for a in assets)):
        text = text.replace("http://www.w3.org/2000/svg", "")  # the inline favicon's namespace
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.IGNORECASE)


@pytest.mark.parametrize("bad", [0, -5, 1.5, True, "8000"])
def test_create_app_refuses_a_bad_message_limit(bad: object) -> None:
    engine, _ = api(chat_flow())
    with pytest.raises(ValueError) as caught:
        create_app(engine, max_message_chars=bad)  # type: ignore[arg-type]
    assert str(caught.value) == f"max_message_chars must be a positive integer, got {bad!r}."


async def test_stay_tools_and_tool_results_do_not_leak_into_the_reply() -> None:
    model = ScriptedChatModel(
        script=[tool_call("capture_choices", city="Porto", nights=3), "Three hotels in Porto."]
    )
    _, app = api(two_step_flow(model))
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json={"flowName": "HotelFlow", "message": "Porto x3"})
    assert reply.json()["message"] == "Three hotels in Porto."
    assert reply.json()["step"] == "PresentStep"
