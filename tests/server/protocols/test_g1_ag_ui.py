"""G1, G3 over HTTP: `POST /ag-ui/{flowName}` speaks AG-UI 1.0, keeps owners, keys and limits."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest
from ag_ui.core import Event
from protocol_kit import FLOW, app_for, client_for, data_frames, run_input
from pydantic import TypeAdapter

from picoflow import Flow, FlowEngine, Step, go, tool
from picoflow.server import Principal, create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
ROUTE = f"/ag-ui/{FLOW}"


def checked(text: str) -> list[dict[str, Any]]:
    """Every frame parses as an AG-UI event of the package, with a whole-ms timestamp."""
    frames = data_frames(text)
    for frame in frames:
        EVENTS.validate_python(frame)
        assert isinstance(frame["timestamp"], int) and frame["timestamp"] > 1_700_000_000_000
    return frames


async def humans(engine: Any, frames: list[dict[str, Any]], owner: str | None = None) -> list[str]:
    """What the user said in the session the run's STATE_SNAPSHOT names (the server's truth)."""
    snapshot = next(f for f in frames if f["type"] == "STATE_SNAPSHOT")["snapshot"]
    doc = await engine.get_session(snapshot["session"], owner=owner)
    said = [
        m["data"]["content"] for m in doc["memory"]["BookStep"]["messages"] if m["type"] == "human"
    ]
    return said


def types(frames: list[dict[str, Any]]) -> list[str]:
    return [frame["type"] for frame in frames]


async def test_g1_a_run_streams_its_step_tool_call_text_and_state() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        reply = await client.post(ROUTE, json=run_input("t-1", "r-1", "book Inn 100"))
    assert reply.status_code == 200
    assert reply.headers["content-type"].startswith("text/event-stream")
    frames = checked(reply.text)
    assert types(frames) == [
        "RUN_STARTED", "STEP_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END",
        "TEXT_MESSAGE_START", *["TEXT_MESSAGE_CONTENT"] * 5, "TEXT_MESSAGE_END",
        "TOOL_CALL_RESULT", "STATE_SNAPSHOT", "STEP_FINISHED", "RUN_FINISHED",
    ]  # fmt: skip
    start, args, result = frames[2], frames[3], frames[12]
    assert (start["toolCallName"], json.loads(args["delta"])) == (
        "book",
        {"hotel": "Inn", "total": 100},
    )
    assert (result["toolCallId"], result["content"]) == (start["toolCallId"], "Booked Inn for 100.")
    text = "".join(f["delta"] for f in frames if f["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "Result: Booked Inn for 100."
    assert frames[13]["snapshot"] == {
        "session": frames[13]["snapshot"]["session"],
        "step": "BookStep", "state": {}, "completed": False, "pendingApprovals": [],
    }  # fmt: skip
    assert (frames[0]["threadId"], frames[-1]["runId"]) == ("t-1", "r-1")
    assert "outcome" not in frames[-1]  # absent outcome: success


async def test_g1_the_thread_continues_and_only_the_newest_user_message_is_a_turn() -> None:
    engine, app = app_for()
    async with client_for(app) as client:
        first = checked((await client.post(ROUTE, json=run_input("t-2", "r-1", "hello"))).text)
        body = run_input("t-2", "r-2", "hello", "how are you")
        again = checked((await client.post(ROUTE, json=body)).text)
    text = "".join(f["delta"] for f in again if f["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "You said: how are you"
    assert first[-3]["snapshot"]["session"] == again[-3]["snapshot"]["session"]
    assert await humans(engine, again) == ["hello", "how are you"]  # history not replayed


async def test_g1_an_approval_ends_the_run_with_an_interrupt_that_resume_answers() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        asked = checked(
            (await client.post(ROUTE, json=run_input("t-3", "r-1", "book Big 900"))).text
        )
        outcome = asked[-1]["outcome"]
        interrupt = outcome["interrupts"][0]
        resume = [
            {
                "interruptId": interrupt["id"],
                "status": "resolved",
                "payload": {"decision": "approve"},
            }
        ]
        done = checked(
            (
                await client.post(
                    ROUTE, json=run_input("t-3", "r-2", "book Big 900", resume=resume)
                )
            ).text
        )
    assert outcome["type"] == "interrupt" and interrupt["reason"] == "tool_approval"
    assert interrupt["metadata"]["args"] == {"hotel": "Big", "total": 900}
    waiting = [f for f in asked if f["type"] == "TOOL_CALL_START"]
    assert [f["toolCallId"] for f in waiting] == [interrupt["toolCallId"]]
    result = next(f for f in done if f["type"] == "TOOL_CALL_RESULT")
    assert (result["toolCallId"], result["content"]) == (
        interrupt["toolCallId"],
        "Booked Big for 900.",
    )
    assert done[-1]["type"] == "RUN_FINISHED" and "outcome" not in done[-1]
    assert done[-1]["result"]["message"] == "Result: Booked Big for 900."


async def test_g1_a_cancelled_interrupt_rejects_the_call() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        asked = data_frames(
            (await client.post(ROUTE, json=run_input("t-4", "r-1", "book Big 900"))).text
        )
        interrupt_id = asked[-1]["outcome"]["interrupts"][0]["id"]
        resume = [{"interruptId": interrupt_id, "status": "cancelled"}]
        done = checked((await client.post(ROUTE, json=run_input("t-4", "r-2", resume=resume))).text)
        again = checked(
            (await client.post(ROUTE, json=run_input("t-4", "r-3", resume=resume))).text
        )
    assert done[-1]["type"] == "RUN_FINISHED"
    assert (
        "declined" in done[-1]["result"]["message"].lower()
        or "reject" in done[-1]["result"]["message"].lower()
    )
    assert again[-1]["result"] == done[-1]["result"]  # K3: deciding again replays, runs nothing


async def test_g1_a_failed_turn_is_run_error_with_the_code_of_ai_run() -> None:
    _, app = app_for()
    async with client_for(app) as client:
        await client.post(ROUTE, json=run_input("t-5", "r-1", "hello"))
        failed = checked(
            (await client.post(ROUTE, json=run_input("t-5", "r-2", "hello", "  "))).text
        )
    assert types(failed) == ["RUN_STARTED", "RUN_ERROR"]
    assert failed[-1]["code"] == "invalid_request" and failed[-1]["metadata"]["requestId"]


ANN, EVE = {"X-User": "ann"}, {"X-User": "eve"}


def by_header(request: Any) -> Principal | None:
    name = request.headers.get("X-User")
    roles = frozenset({"approver"}) if name == "boss" else frozenset()
    return Principal(name, roles) if name else None


async def test_g3_another_owners_thread_id_is_a_conversation_of_its_own() -> None:
    engine, app = app_for(authorize=by_header)
    async with client_for(app) as client:
        await client.post(ROUTE, json=run_input("shared", "r-1", "hello"), headers=ANN)
        eve = await client.post(ROUTE, json=run_input("shared", "r-2", "mine"), headers=EVE)
        body = run_input("shared", "r-3", "hello", "again")
        ann = await client.post(ROUTE, json=body, headers=ANN)
    assert await humans(engine, checked(ann.text), "ann") == ["hello", "again"]
    assert await humans(engine, checked(eve.text), "eve") == ["mine"]


async def test_g3_resume_follows_the_approval_rules_of_k7() -> None:
    _, app = app_for(authorize=by_header)
    async with client_for(app) as client:
        asked = data_frames(
            (
                await client.post(
                    ROUTE, json=run_input("t-6", "r-1", "book Big 900"), headers={"X-User": "ann"}
                )
            ).text
        )
        resume = [
            {
                "interruptId": asked[-1]["outcome"]["interrupts"][0]["id"],
                "status": "resolved",
                "payload": True,
            }
        ]
        refused = checked(
            (
                await client.post(
                    ROUTE, json=run_input("t-6", "r-2", resume=resume), headers={"X-User": "ann"}
                )
            ).text
        )
    assert types(refused) == ["RUN_STARTED", "RUN_ERROR"] and refused[-1]["code"] == "role_required"


async def test_g3_a_retried_run_id_gets_the_first_result_and_books_once() -> None:
    engine, app = app_for()
    body = run_input("t-7", "r-1", "book Inn 100")
    async with client_for(app) as client:
        first = checked((await client.post(ROUTE, json=body)).text)
        second = checked((await client.post(ROUTE, json=body)).text)
    assert first[-1]["result"] == second[-1]["result"]
    assert await humans(engine, first) == ["book Inn 100"]  # stored once (H5)


async def test_g3_bad_inputs_get_a_clear_4xx_never_a_5xx() -> None:
    _, app = app_for()
    huge = run_input("t-8", "r-1", *(["x" * 100] * 5000))
    cases: list[tuple[dict[str, Any], str, int, str]] = [
        (
            {"content": b"{not json", "headers": {"content-type": "application/json"}},
            ROUTE,
            400,
            "invalid_body",
        ),
        ({"json": {"threadId": "t", "messages": []}}, ROUTE, 400, "invalid_body"),
        (
            {"json": {"threadId": "t", "runId": "r", "messages": [{"role": "wizard"}]}},
            ROUTE,
            400,
            "invalid_body",
        ),
        ({"json": run_input("bad id!", "r", "hi")}, ROUTE, 400, "invalid_thread_id"),
        ({"json": run_input("x" * 129, "r", "hi")}, ROUTE, 400, "invalid_thread_id"),
        ({"json": run_input("t", "r", "hi")}, "/ag-ui/NoSuchFlow", 404, "unknown_flow"),
        ({"json": huge}, ROUTE, 413, "body_too_large"),
        ({"json": run_input("t", "r", "x" * 9000)}, ROUTE, 413, "message_too_long"),
        (
            {"content": b"{}", "headers": {"content-type": "text/plain"}},
            ROUTE,
            415,
            "unsupported_media_type",
        ),
        (
            {
                "json": {
                    "threadId": "t",
                    "runId": "r",
                    "messages": [{"id": "a", "role": "assistant", "content": "hi"}],
                }
            },
            ROUTE,
            400,
            "invalid_body",
        ),
        (
            {"json": run_input("t", "r", resume=[{"interruptId": "apr_x", "status": "resolved"}])},
            ROUTE,
            400,
            "invalid_body",
        ),
    ]
    twice = b'{"threadId": "a", "threadId": "b", "runId": "r", "messages": []}'  # H8
    as_json = {"content-type": "application/json"}
    cases += [
        ({"content": twice, "headers": as_json}, ROUTE, 400, "invalid_body"),
        ({"json": run_input("t", "r" * 200, "hi")}, ROUTE, 400, "invalid_body"),
    ]  # fmt: skip
    async with client_for(app) as client:
        for request, route, status, code in cases:
            reply = await client.post(route, **request)
            assert (reply.status_code, reply.json().get("code")) == (status, code), (
                request,
                reply.text,
            )


def test_g1_the_core_never_imports_ag_ui() -> None:
    """`ag-ui-protocol` is an extra: importing picoflow, its engine or server loads none of it."""
    code = "import sys, picoflow, picoflow.engine, picoflow.server; print('ag_ui' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


async def test_g1_without_the_extra_the_route_names_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "ag_ui" else find_spec(name, *a),
    )
    _, app = app_for()
    async with client_for(app) as client:
        reply = await client.post(ROUTE, json=run_input("t-9", "r-1", "hello"))
    assert (reply.status_code, reply.json()["code"]) == (501, "ag_ui_not_installed")
    assert "pip install 'picoflow[ag-ui]'" in reply.json()["message"]


def test_g1_token_frames_read_as_the_encoders_own() -> None:
    """The per-token fast path writes what `EventEncoder` writes, for any text (G1)."""
    from ag_ui.core import TextMessageContentEvent
    from ag_ui.encoder import EventEncoder

    from picoflow.server.protocols._ag_ui import AgUiRun

    run = AgUiRun("t", "r", [])
    for text in [
        'say "hi"',
        "two\nlines\ttab",
        "\u00e9\u2028\U0001f600",
        "\x01\x1f\\",
        "</script>",
    ]:
        fast = data_frames("".join(run._token(text, "S")))[-1]
        event = TextMessageContentEvent(message_id=fast["messageId"], delta=text, timestamp=1)
        slow = data_frames(EventEncoder().encode(event))[0]
        assert {**fast, "timestamp": 1} == slow
        EVENTS.validate_python(fast)


async def test_g1_each_step_that_ran_is_started_and_finished_around_its_events() -> None:
    class AskStep(Step):
        @tool
        def advance(self) -> Any:
            """Move on."""
            return go(AnswerStep)

    class AnswerStep(Step):
        pass

    model = ScriptedChatModel(
        policy=lambda messages, tools: tool_call("advance") if "advance" in tools else "In B."
    )

    class TwoSteps(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [AskStep(self), AnswerStep(self)]

    app = create_app(FlowEngine(flows=[TwoSteps], store=MemoryStore()))
    async with client_for(app) as client:
        reply = await client.post("/ag-ui/TwoSteps", json=run_input("t-s", "r-1", "go"))
    frames = checked(reply.text)
    steps = [(f["type"], f["stepName"]) for f in frames if f["type"].startswith("STEP_")]
    assert steps == [
        ("STEP_STARTED", "AskStep"),
        ("STEP_FINISHED", "AskStep"),
        ("STEP_STARTED", "AnswerStep"),
        ("STEP_FINISHED", "AnswerStep"),
    ]
    snapshot = next(f for f in frames if f["type"] == "STATE_SNAPSHOT")["snapshot"]
    assert snapshot["step"] == "AnswerStep" and frames[-1]["type"] == "RUN_FINISHED"
