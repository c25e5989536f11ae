"""G2, G3 over HTTP: `POST /ai-sdk/{flowName}` answers the AI SDK's UI message stream protocol."""

from __future__ import annotations

from typing import Any

from protocol_kit import FLOW, app_for, chat_request, client_for, data_frames

from picoflow.server import Principal

ROUTE = f"/ai-sdk/{FLOW}"
CHAT = "Xq7fT2mLp9sVb3Kd"  # what useChat's generateId makes: 16 letters and digits


def types(frames: list[Any]) -> list[str]:
    return [f if f == "[DONE]" else f["type"] for f in frames]


def state(frames: list[Any]) -> dict[str, Any]:
    return next(f for f in frames if f != "[DONE]" and f["type"] == "data-state")["data"]


async def test_g2_a_turn_is_a_ui_message_stream_with_tool_step_and_state_parts() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        reply = await client.post(ROUTE, json=chat_request(CHAT, "book Inn 100"))
    assert reply.status_code == 200
    assert reply.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert reply.headers["content-type"].startswith("text/event-stream")
    frames = data_frames(reply.text)
    assert types(frames) == [
        "start", "data-step", "tool-input-available", "text-start", *["text-delta"] * 5,
        "text-end", "tool-output-available", "data-state", "finish", "[DONE]",
    ]  # fmt: skip
    asked, output = frames[2], frames[10]
    assert (asked["toolName"], asked["input"]) == ("book", {"hotel": "Inn", "total": 100})
    assert (output["toolCallId"], output["output"]) == (asked["toolCallId"], "Booked Inn for 100.")
    assert frames[1] == {
        "type": "data-step",
        "id": "step",
        "data": {"step": "BookStep", "from": None},
    }
    assert (
        "".join(f["delta"] for f in frames[3:9] if f["type"] == "text-delta")
        == "Result: Booked Inn for 100."
    )
    assert state(frames)["step"] == "BookStep" and frames[-2]["finishReason"] == "stop"


async def test_g2_an_approval_is_a_tool_part_awaiting_approval_answered_in_the_next_request() -> (
    None
):
    engine, app = app_for()
    async with client_for(app) as client:
        asked = data_frames(
            (await client.post(ROUTE, json=chat_request(CHAT, "book Big 900"))).text
        )
        request = next(f for f in asked if f != "[DONE]" and f["type"] == "tool-approval-request")
        body = chat_request(CHAT, "book Big 900")
        approval = {"id": request["approvalId"], "approved": True}
        part = {
            "type": "tool-book", "toolCallId": request["toolCallId"], "state": "approval-responded",
            "input": {"hotel": "Big", "total": 900}, "approval": approval,
        }  # fmt: skip
        body["messages"].append({"id": asked[0]["messageId"], "role": "assistant", "parts": [part]})
        done = data_frames((await client.post(ROUTE, json=body)).text)
    assert state(asked)["pendingApprovals"] == [request["approvalId"]]
    assert asked[-2]["finishReason"] == "other"
    assert done[0] == {"type": "start", "messageId": asked[0]["messageId"]}  # continues it
    output = next(f for f in done if f != "[DONE]" and f["type"] == "tool-output-available")
    assert (output["toolCallId"], output["output"]) == (
        request["toolCallId"],
        "Booked Big for 900.",
    )
    assert "".join(f["delta"] for f in done if f != "[DONE]" and f["type"] == "text-delta") == (
        "Result: Booked Big for 900."
    )
    assert await engine.pending_approvals(state(done)["session"]) == []


async def test_g2_a_refused_approval_is_a_denied_tool_output() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        asked = data_frames(
            (await client.post(ROUTE, json=chat_request(CHAT, "book Big 900"))).text
        )
        request = next(f for f in asked if f != "[DONE]" and f["type"] == "tool-approval-request")
        body = chat_request(CHAT, "book Big 900")
        approval = {"id": request["approvalId"], "approved": False, "reason": "too dear"}
        part = {
            "type": "tool-book",
            "toolCallId": request["toolCallId"],
            "state": "approval-responded",
            "approval": approval,
        }
        body["messages"].append({"id": "a1", "role": "assistant", "parts": [part]})
        done = data_frames((await client.post(ROUTE, json=body)).text)
    assert {"type": "tool-output-denied", "toolCallId": request["toolCallId"]} in done
    assert done[-1] == "[DONE]" and done[-2]["type"] == "finish"


async def test_g3_a_resent_message_id_gets_the_first_reply_and_runs_once() -> None:
    engine, app = app_for()
    async with client_for(app) as client:
        first = data_frames((await client.post(ROUTE, json=chat_request(CHAT, "hello"))).text)
        again = chat_request(CHAT, "hello", trigger="regenerate-message")
        second = data_frames((await client.post(ROUTE, json=again)).text)
    text = [
        "".join(f["delta"] for f in fs if f != "[DONE]" and f["type"] == "text-delta")
        for fs in (first, second)
    ]
    assert text == ["You said: hello", "You said: hello"]
    doc = await engine.get_session(state(first)["session"])
    assert (
        doc is not None
        and [m["type"] for m in doc["memory"]["BookStep"]["messages"]].count("human") == 1
    )


def by_header(request: Any) -> Principal | None:
    name = request.headers.get("X-User")
    return Principal(name) if name else None


async def test_g3_another_owners_chat_id_never_reaches_their_conversation() -> None:
    _, app = app_for(authorize=by_header)
    async with client_for(app) as client:
        ann = data_frames(
            (
                await client.post(
                    ROUTE, json=chat_request(CHAT, "hello"), headers={"X-User": "ann"}
                )
            ).text
        )
        eve = data_frames(
            (
                await client.post(ROUTE, json=chat_request(CHAT, "hi"), headers={"X-User": "eve"})
            ).text
        )
        nobody = await client.post(ROUTE, json=chat_request(CHAT, "hi"))
    assert state(ann)["session"] != state(eve)["session"]
    assert nobody.status_code == 401


async def test_g3_a_failed_turn_is_an_error_chunk_with_the_code_of_ai_run() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        await client.post(ROUTE, json=chat_request(CHAT, "hello"))
        failed = data_frames((await client.post(ROUTE, json=chat_request(CHAT, "hello", " "))).text)
    assert types(failed) == ["start", "data-error", "error", "[DONE]"]
    assert failed[1]["data"]["code"] == "invalid_request" and failed[1]["transient"] is True


async def test_g3_bad_chat_requests_get_a_clear_4xx_never_a_5xx() -> None:
    _, app = app_for()
    huge = chat_request(CHAT, *(["x" * 100] * 5000))
    assistant_last = chat_request(CHAT, "hi")
    assistant_last["messages"].append(
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hi"}]}
    )
    cases: list[tuple[dict[str, Any], str, int, str]] = [
        (
            {"content": b"[1, 2", "headers": {"content-type": "application/json"}},
            ROUTE,
            400,
            "invalid_body",
        ),
        ({"json": [1, 2]}, ROUTE, 400, "invalid_body"),
        ({"json": {"id": CHAT, "messages": "hi"}}, ROUTE, 400, "invalid_body"),
        ({"json": chat_request("a/b", "hi")}, ROUTE, 400, "invalid_thread_id"),
        ({"json": {**chat_request(CHAT, "hi"), "id": None}}, ROUTE, 400, "invalid_thread_id"),
        ({"json": chat_request(CHAT, "hi")}, "/ai-sdk/NoSuchFlow", 404, "unknown_flow"),
        ({"json": huge}, ROUTE, 413, "body_too_large"),
        ({"json": chat_request(CHAT, "x" * 9000)}, ROUTE, 413, "message_too_long"),
        (
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            ROUTE,
            415,
            "unsupported_media_type",
        ),
        ({"json": assistant_last}, ROUTE, 400, "invalid_body"),
        (
            {"json": {"id": CHAT, "messages": [{"id": "u", "role": "user", "parts": "hi"}]}},
            ROUTE,
            400,
            "invalid_body",
        ),
    ]
    async with client_for(app) as client:
        for request, route, status, code in cases:
            reply = await client.post(route, **request)
            assert (reply.status_code, reply.json().get("code")) == (status, code), (
                request,
                reply.text,
            )


async def test_g2_two_new_chats_with_no_message_each_get_a_session_of_their_own() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        one = data_frames((await client.post(ROUTE, json=chat_request("chat-one-0000000"))).text)
        two = data_frames((await client.post(ROUTE, json=chat_request("chat-two-0000000"))).text)
    assert state(one)["session"] != state(two)["session"]
