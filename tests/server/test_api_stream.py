"""POST /ai/stream: a turn's events as Server-Sent Events, ending with the run envelope."""

from __future__ import annotations

from typing import Any

from server_flows import GREETING, TABLE, api, chat_flow, client_for, sse
from support.flows import two_step_flow

from picoflow import EndStep, Flow, Step
from picoflow.testing import ScriptedChatModel, tool_call


async def test_stream_sends_tool_call_step_change_tokens_then_done() -> None:
    model = ScriptedChatModel(
        script=[tool_call("capture_choices", city="Portland", nights=2), "Three hotels match."]
    )
    engine, app = api(two_step_flow(model))
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/stream", json={"flowName": "HotelFlow", "message": "Portland, 2 nights"}
        )
    assert reply.status_code == 200
    assert reply.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert reply.headers["cache-control"] == "no-cache"
    assert "CHAT_SESSION_ID" not in reply.headers  # a new session: its id comes with `done`
    events = sse(reply.text)
    session = events[-1][1]["session"]
    assert events == [
        (
            "tool_call",
            {
                "name": "capture_choices",
                "args": {"city": "Portland", "nights": 2},
                "step": "ExploreStep",
            },
        ),
        ("step_changed", {"from": "ExploreStep", "to": "PresentStep"}),
        ("token", {"text": "Three ", "step": "PresentStep"}),
        ("token", {"text": "hotels ", "step": "PresentStep"}),
        ("token", {"text": "match.", "step": "PresentStep"}),
        (
            "done",
            {
                "success": True,
                "completed": False,
                "message": "Three hotels match.",
                "session": session,
                "contentType": "text/plain",
                "step": "PresentStep",
                "status": 200,
            },
        ),
    ]
    assert (await engine.get_session(session))["current_step"] == "PresentStep"


async def test_stream_continuing_a_session_names_it_in_the_header_from_the_start() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/stream", json={"flowName": "ChatFlow", "message": "hello"})
        session = sse(first.text)[-1][1]["session"]
        second = await client.post(
            "/ai/stream",
            json={"flowName": "ChatFlow", "message": "hello again"},
            headers={"chat_session_id": session},
        )
    assert second.headers["CHAT_SESSION_ID"] == session
    assert second.headers["chat-session-id"] == session
    tokens = "".join(data["text"] for kind, data in sse(second.text) if kind == "token")
    assert tokens == GREETING


async def test_p5_stream_with_a_completed_session_id_leaves_the_header_out() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "bye"})
        old = first.json()["session"]
        assert first.json()["completed"] is True
        again = await client.post(
            "/ai/stream",
            json={"flowName": "ChatFlow", "message": "hi"},
            headers={"CHAT_SESSION_ID": old},
        )
    assert "CHAT_SESSION_ID" not in again.headers
    done = sse(again.text)[-1][1]
    assert done["success"] is True and done["session"] != old


async def test_stream_of_a_direct_markdown_reply_has_no_tokens_and_the_table_in_done() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/stream", json={"flowName": "ChatFlow", "message": "show me a table"}
        )
    events = sse(reply.text)
    assert [kind for kind, _ in events] == ["tool_call", "step_changed", "tool_call", "done"]
    done = events[-1][1]
    assert done["message"] == TABLE
    assert done["contentType"] == "text/markdown"
    assert done["step"] == "TableStep"


async def test_stream_failure_ends_with_done_carrying_the_status() -> None:
    """A refusal found once the turn runs (here: a session of another flow) is the `done`
    event's status; one the route can see first is a real 400 (test_h1_requests)."""
    model = ScriptedChatModel(script=["Hi!"])
    _, app = api(two_step_flow(model), chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/run", json={"flowName": "ChatFlow", "message": "hi"})
        session = first.json()["session"]
        reply = await client.post(
            "/ai/stream",
            json={"flowName": "HotelFlow", "message": "more"},
            headers={"CHAT_SESSION_ID": session},
        )
    assert reply.status_code == 200  # the stream had started; `done` says what /ai/run would
    assert sse(reply.text) == [
        (
            "done",
            {
                "success": False,
                "completed": False,
                "message": f"Session '{session}' belongs to flow 'ChatFlow', not 'HotelFlow'. "
                "Continue it with flow 'ChatFlow', or omit the session id to start a new "
                "session.",
                "session": session,
                "contentType": "text/plain",
                "code": "invalid_request",
                "requestId": reply.headers["X-Request-ID"],
                "status": 400,
            },
        )
    ]


async def test_stream_bug_ends_with_done_carrying_a_request_id() -> None:
    model = ScriptedChatModel(script=[RuntimeError("provider exploded")])
    _, app = api(two_step_flow(model))
    async with client_for(app) as client:
        reply = await client.post("/ai/stream", json={"flowName": "HotelFlow", "message": "hi"})
    [(kind, done)] = sse(reply.text)
    assert kind == "done"
    assert done["status"] == 500 and done["success"] is False
    assert done["requestId"] in done["message"]
    assert "provider exploded" not in done["message"]


def summarised_flow(model: ScriptedChatModel) -> type[Flow]:
    class ChatStep(Step):
        pass

    class SummaryFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            (
                self.get_memory()
                .set_summary_model(model)
                .set_summary_config(min_messages=8, recent_messages=4)
                .enable_summary("chat")
            )

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ChatStep(self).use_memory("chat"), EndStep(self).use_memory("end")]

    return SummaryFlow


async def test_m10_summary_calls_never_appear_as_tokens() -> None:
    summary = "SUMMARY: the user counts to six."
    model = ScriptedChatModel(
        script={"summary": [summary] * 6, "*": [f"Reply {n}." for n in range(1, 7)]}
    )
    _, app = api(summarised_flow(model))
    session, compactions = None, []
    async with client_for(app) as client:
        for n in range(1, 7):
            headers = {"CHAT_SESSION_ID": session} if session else {}
            reply = await client.post(
                "/ai/stream", json={"flowName": "SummaryFlow", "message": f"{n}"}, headers=headers
            )
            events = sse(reply.text)
            tokens = "".join(data["text"] for kind, data in events if kind == "token")
            assert tokens == f"Reply {n}."  # the reply, the whole reply and nothing else
            assert events[-1][1]["message"] == f"Reply {n}."
            session = events[-1][1]["session"]
            compactions += [data for kind, data in events if kind == "compaction"]
    summary_calls = [r for r in model.requests if r.metadata.get("picoflow_purpose") == "summary"]
    # The summariser ran (and said its piece) during these streams, yet no token carried it.
    assert summary_calls
    assert {c["namespace"] for c in compactions} == {"chat"}
    assert "compacted" in [c["outcome"] for c in compactions]
