"""E1-E4 and P1, P3-P5: the engine's turn contract over a real store."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import pytest
from support.failed_turns import apart_from_error
from support.flows import (
    ExploreStep,
    Plain,
    PresentStep,
    RecordingStore,
    engine_for,
    make_flow,
    two_step_flow,
)

from picoflow import FlowEngine, Step, tool
from picoflow.session import SCHEMA_VERSION
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel, tool_call

P1_KEYS = {
    "id",
    "schema_version",
    "revision",
    "flow",
    "run_status",
    "created_at",
    "updated_at",
    "expires_at",
    "context",
    "current_step",
    "sequence",
    "steps",
    "memory",
    "usage",
    "warnings",
    "log",  # U5
    "error",  # U5
    "debug",  # U5
}


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return MemoryStore() if request.param == "memory" else SQLiteStore(str(tmp_path / "s.db"))


async def test_p1_document_shape(store: Any) -> None:
    model = ScriptedChatModel(
        script=[tool_call("capture_choices", city="Portland", nights=2), "Listed."]
    )
    engine = engine_for(two_step_flow(model), store=store)
    result = await engine.run("HotelFlow", "hi", config={"tenant": "acme"})
    doc = await engine.get_session(result.session_id)
    assert set(doc) == P1_KEYS
    assert doc["id"] == result.session_id and doc["schema_version"] == SCHEMA_VERSION
    assert (doc["revision"], doc["flow"], doc["run_status"]) == (0, "HotelFlow", "running")
    assert doc["current_step"] == "PresentStep" and doc["expires_at"] is None
    assert doc["steps"]["ExploreStep"] == {
        "state": {
            "criteria": {"city": "Portland", "nights": 2},
            "_saveOn": doc["steps"]["ExploreStep"]["state"]["_saveOn"],
        },
        "model": None,
    }
    assert set(doc["memory"]["ExploreStep"]) == {
        "messages",
        "summary",
        "summary_generation",
        "archived",
        "dropped_facts",
        "summary_usage",
    }
    assert doc["usage"]["model"]["calls"] == 2 and doc["usage"]["summary"]["calls"] == 0
    await engine.aclose()


async def test_e4_turn_result_fields_and_usage_per_turn(store: Any) -> None:
    model = ScriptedChatModel(script=["one", "two"])
    engine = engine_for(make_flow(lambda f: [Plain(f)], model=model), store=store)
    first = await engine.run("F", "hello")
    second = await engine.run("F", "again", session_id=first.session_id)
    assert (second.success, second.completed, second.step, second.content_type) == (
        True,
        False,
        "Plain",
        "text/plain",
    )
    assert second.usage["model"]["calls"] == 1
    doc = await engine.get_session(first.session_id)
    total = first.usage["model"]["total_tokens"] + second.usage["model"]["total_tokens"]
    assert doc["usage"]["model"]["total_tokens"] == total and doc["revision"] == 1
    await engine.aclose()


@pytest.mark.parametrize(
    ("flow_name", "session_id", "message"),
    [
        ("Nope", None, "Unknown flow 'Nope'. Registered flows: F."),
        (
            "F",
            "../../etc/passwd",
            "Invalid session id: pass the session_id returned by an earlier turn (16 to 128 "
            "letters, digits, '-' or '_'), or None to start a new session.",
        ),
        ("F", {"$ne": None}, "Invalid session id: pass the session_id"),
        ("F", 12345678901234567, "Invalid session id: pass the session_id"),
        ("F", "short", "Invalid session id: pass the session_id"),
    ],
)
async def test_e2_bad_requests_fail_cleanly_and_write_nothing(
    flow_name: str, session_id: Any, message: str
) -> None:
    store = RecordingStore()
    engine = engine_for(make_flow(lambda f: [Plain(f)]), store=store)
    result = await engine.run(flow_name, "hi", session_id=session_id)
    assert (result.success, result.completed, result.session_id) == (False, False, None)
    assert result.message.startswith(message)
    assert store.calls == []  # rejected before it reached the store (P5)


async def test_e2_empty_message_on_an_existing_session(store: Any) -> None:
    engine = engine_for(make_flow(lambda f: [Plain(f)]), store=store)
    first = await engine.run("F", "hi")
    before = await engine.get_session(first.session_id)
    result = await engine.run("F", "   ", session_id=first.session_id)
    assert result.success is False and result.session_id == first.session_id
    assert result.message == (
        "The message is empty. Send the user's text; an empty message only starts a new session."
    )
    assert await engine.get_session(first.session_id) == before
    await engine.aclose()


async def test_e2_non_string_message_and_bad_config() -> None:
    engine = engine_for(make_flow(lambda f: [Plain(f)]))
    assert (await engine.run("F", None)).message == "The message must be a string, got NoneType."  # type: ignore[arg-type]
    bad = await engine.run("F", "hi", config=["x"])  # type: ignore[arg-type]
    assert bad.message == "config must be a JSON object (dict), got list."


async def test_p3_model_error_mid_turn_leaves_session_unchanged(store: Any) -> None:
    model = ScriptedChatModel(
        script=[
            "hello",
            tool_call("capture_choices", city="X", nights=1),
            RuntimeError("model down"),
        ]
    )
    engine = engine_for(two_step_flow(model), store=store)
    first = await engine.run("HotelFlow", "hi")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("HotelFlow", "X for 1 night", session_id=first.session_id)
    assert (failed.success, failed.completed, failed.error) == (False, False, "RuntimeError")
    assert failed.message == (
        "The turn failed and the session was not changed: RuntimeError: model down"
    )
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # U5: only the error is written
    assert [e["error"] for e in after["error"]] == ["RuntimeError"]
    await engine.aclose()


async def test_p4_turns_of_one_session_are_serialised_in_process() -> None:
    gate, inside = asyncio.Event(), asyncio.Event()
    entered: list[str] = []

    async def policy(messages: list, tools: list[str]) -> str:
        text = messages[-1].content
        entered.append(f"start {text}")
        if text == "first":
            inside.set()
            await gate.wait()
        entered.append(f"end {text}")
        return f"reply to {text}"

    model = ScriptedChatModel(policy=policy)
    engine = engine_for(make_flow(lambda f: [Plain(f)], model=model))
    opened = await engine.run("F", "open")
    sid = opened.session_id
    one = asyncio.create_task(engine.run("F", "first", session_id=sid))
    two = asyncio.create_task(engine.run("F", "second", session_id=sid))
    await inside.wait()
    assert entered[-1] == "start first"
    gate.set()
    results = await asyncio.gather(one, two)
    assert [r.success for r in results] == [True, True]
    assert entered[2:] == ["start first", "end first", "start second", "end second"]
    doc = await engine.get_session(sid)
    assert doc["revision"] == 2


async def test_p4_second_writer_fails_with_conflict_and_nothing_is_lost() -> None:
    store = MemoryStore()
    other: list[FlowEngine] = []
    sid: list[str] = []

    async def policy(messages: list, tools: list[str]) -> str:
        text = messages[-1].content
        if text == "slow turn":  # meanwhile another process finishes a turn on the session
            result = await other[0].run("F", "fast turn", session_id=sid[0])
            assert result.success
        return f"re: {text}"

    model = ScriptedChatModel(policy=policy)
    flow = make_flow(lambda f: [Plain(f)], model=model)
    engine, other_engine = engine_for(flow, store=store), engine_for(flow, store=store)
    other.append(other_engine)
    first = await engine.run("F", "hi")
    sid.append(first.session_id)
    slow = await engine.run("F", "slow turn", session_id=first.session_id)
    assert (slow.success, slow.error) == (False, "SessionConflictError")
    assert slow.message == (
        f"Session '{first.session_id}' was saved by another writer: expected revision 0, found 1. "
        "Nothing was written; reload the session and retry the turn."
    )
    doc = await engine.get_session(first.session_id)
    texts = [m["data"]["content"] for m in doc["memory"]["Plain"]["messages"][1:]]
    assert texts == ["hi", "re: hi", "fast turn", "re: fast turn"]


def test_p5_session_ids_are_unguessable_and_well_formed() -> None:
    from picoflow.session import is_session_id, new_session_id

    ids = {new_session_id() for _ in range(2000)}
    assert len(ids) == 2000
    assert all(is_session_id(i) and len(i) == 24 for i in ids)
    assert all(i[0].isalnum() for i in ids)  # never read as an option by a command line


async def test_p5_unknown_expired_and_completed_ids_start_new_sessions(store: Any) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: "hi")
    engine = FlowEngine(
        flows=[make_flow(lambda f: [Plain(f)], model=model)], store=store, session_ttl=60
    )
    unknown = "A" * 24
    result = await engine.run("F", "hello", session_id=unknown)
    assert result.success and result.session_id != unknown
    doc = await engine.get_session(result.session_id)
    assert doc["expires_at"] is not None
    doc["expires_at"] = "2020-01-01T00:00:00.000Z"
    await store.save(doc, doc["revision"])
    message = {"type": "human", "data": {"content": "my card ends 4242", "type": "human"}}
    await store.archive(result.session_id, "Plain", [{"position": 1, "message": message}])
    expired = await engine.run("F", "hello", session_id=result.session_id)
    assert expired.success and expired.session_id != result.session_id
    # The expired session and its archive are deleted when a turn finds them.
    assert await engine.get_session(result.session_id) is None
    assert await store.search_archive(result.session_id, "Plain", "4242") == []
    await engine.aclose()


class RenewedMeanwhile(MemoryStore):
    """Another process saves the session between this engine's load and its next write."""

    armed = False

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        if self.armed:
            self.armed = False
            current = await self.load(doc["id"])
            assert current is not None
            current["expires_at"] = None  # that process's turn renewed the session
            await super().save(current, current["revision"])
        return await super().save(doc, expected_revision)


async def test_p4_an_expired_session_renewed_elsewhere_is_not_deleted() -> None:
    """P4, P5: deleting an expired session never wipes a turn another process saved."""
    store = RenewedMeanwhile()
    model = ScriptedChatModel(policy=lambda messages, tools: "hi")
    engine = FlowEngine(
        flows=[make_flow(lambda f: [Plain(f)], model=model)], store=store, session_ttl=60
    )
    first = await engine.run("F", "hello")
    doc = await store.load(first.session_id)
    assert doc is not None
    doc["expires_at"] = "2020-01-01T00:00:00.000Z"
    await store.save(doc, doc["revision"])
    store.armed = True
    again = await engine.run("F", "hello", session_id=first.session_id)
    assert again.success and again.session_id != first.session_id  # expired here: new session
    kept = await store.load(first.session_id)
    assert kept is not None  # the other process's save won; nothing was deleted
    assert (kept["revision"], kept["run_status"], kept["expires_at"]) == (2, "running", None)


async def test_p1_newer_schema_version_is_refused_clearly() -> None:
    store = MemoryStore()
    engine = engine_for(
        make_flow(lambda f: [Plain(f)], model=ScriptedChatModel(policy=lambda m, t: "x")),
        store=store,
    )
    first = await engine.run("F", "hi")
    doc = await store.load(first.session_id)
    doc["schema_version"] = SCHEMA_VERSION + 1
    await store.save(doc, doc["revision"])
    result = await engine.run("F", "again", session_id=first.session_id)
    assert (result.success, result.error) == (False, "StoreRefused")  # H3: retrying cannot help
    assert result.message == (
        f"Session '{first.session_id}' has schema_version {SCHEMA_VERSION + 1}, but this picoflow "
        f"reads up to {SCHEMA_VERSION}. Upgrade picoflow to read it."
    )


async def test_p5_session_of_another_flow_is_refused() -> None:
    model = ScriptedChatModel(policy=lambda m, t: "x")
    one = make_flow(lambda f: [Plain(f)], model=model, name="One")
    two = make_flow(lambda f: [Plain(f)], model=model, name="Two")
    engine = FlowEngine(flows=[one, two], store=MemoryStore())
    first = await engine.run("One", "hi")
    result = await engine.run("Two", "hi", session_id=first.session_id)
    assert (result.success, result.error) == (False, "InvalidRequest")
    assert result.message == (
        f"Session '{first.session_id}' belongs to flow 'One', not 'Two'. Continue it with flow "
        "'One', or omit the session id to start a new session."
    )


async def test_e1_store_from_environment_and_default(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    flow = make_flow(lambda f: [Plain(f)])
    with caplog.at_level(logging.WARNING, logger="picoflow.engine"):
        engine = FlowEngine(flows=[flow])
    assert isinstance(engine.store, MemoryStore)
    assert "sessions will not survive a restart" in caplog.text
    monkeypatch.setenv("PICOFLOW_STORE", f"sqlite:///{tmp_path}/env.db")
    engine = FlowEngine(flows=[flow])
    assert isinstance(engine.store, SQLiteStore)
    assert engine.flow_names() == ["F"]
    with pytest.raises(ValueError, match="session_ttl must be a timedelta or a number of seconds"):
        FlowEngine(flows=[flow], store=MemoryStore(), session_ttl=-1)
    FlowEngine(flows=[flow], store=MemoryStore(), session_ttl=timedelta(hours=1))


async def test_e1_end_session_and_get_session(store: Any) -> None:
    engine = engine_for(
        make_flow(lambda f: [Plain(f)], model=ScriptedChatModel(policy=lambda m, t: "x")),
        store=store,
    )
    first = await engine.run("F", "hi")
    assert await engine.end_session(first.session_id) is True
    assert await engine.end_session(first.session_id) is False
    assert await engine.get_session(first.session_id) is None
    assert await engine.get_session("not a valid id!") is None
    assert await engine.end_session({"$gt": ""}) is False  # type: ignore[arg-type]
    await engine.aclose()


class Logged(Step):
    @tool
    def lookup(self) -> str:
        """Look something up."""
        return "found"


async def test_e3_model_and_tool_calls_are_logged_and_tagged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = ScriptedChatModel(script=[tool_call("lookup"), "done"])
    engine = engine_for(make_flow(lambda f: [Logged(f).use_memory("notes")], model=model))
    with caplog.at_level(logging.INFO, logger="picoflow"):
        result = await engine.run("F", "hi")
    records = [r for r in caplog.records if r.name.startswith("picoflow._runner.")]
    assert [r.getMessage() for r in records] == [
        "model call 1 in F.Logged",
        "tool call lookup in Logged",
        "model call 2 in F.Logged",
    ]
    assert {(r.session_id, r.step) for r in records} == {(result.session_id, "Logged")}
    assert records[0].namespace == "notes"
    request = model.requests[0]
    assert request.metadata["picoflow_session_id"] == result.session_id
    assert request.metadata["picoflow_step"] == "Logged"
    assert request.metadata["picoflow_namespace"] == "notes"
    assert request.metadata["picoflow_purpose"] == "reply"
    assert "picoflow:step:Logged" in request.tags


async def test_e4_failure_is_never_completed() -> None:
    model = ScriptedChatModel(script=[RuntimeError("boom")])
    engine = engine_for(two_step_flow(model))
    result = await engine.run("HotelFlow", "hi")
    assert (result.success, result.completed, result.step) == (False, False, None)
    assert ExploreStep and PresentStep


async def test_e2_refused_requests_are_marked_invalid_request_not_bugs() -> None:
    model = ScriptedChatModel(script=["hi", RuntimeError("x")])

    class Buggy(Step):
        def on_restore(self) -> None:
            raise ValueError("a bug in flow code")

    engine = engine_for(make_flow(lambda f: [Buggy(f)], model=model))
    assert (await engine.run("Nope", "hi")).error == "InvalidRequest"
    first = await engine.run("F", "hi")
    assert (await engine.run("F", "", session_id=first.session_id)).error == "InvalidRequest"
    bug = await engine.run("F", "again", session_id=first.session_id)
    assert (bug.success, bug.error) == (False, "ValueError")
    assert bug.message == (
        "The turn failed and the session was not changed: ValueError: a bug in flow code"
    )


async def test_p1_a_session_keeps_its_last_100_warnings() -> None:
    """P1: the stored `warnings` list is capped, on turns that add none as on turns that do."""
    store = MemoryStore()
    engine = engine_for(two_step_flow(ScriptedChatModel(script=["One.", "Two."])), store=store)
    first = await engine.run("HotelFlow", "Hi")
    doc = await store.load(first.session_id)
    doc["warnings"] = [{"at": "2026-01-01T00:00:00.000Z", "message": f"w{n}"} for n in range(150)]
    await store.save(doc, doc["revision"])

    second = await engine.run("HotelFlow", "Again", session_id=first.session_id)

    assert second.success
    saved = await store.load(first.session_id)
    assert [w["message"] for w in saved["warnings"]] == [f"w{n}" for n in range(50, 150)]
