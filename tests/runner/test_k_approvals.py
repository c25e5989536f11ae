"""K1-K5: a tool call that needs approval waits as a saved point, and runs once when approved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.approval_flows import RUNS_FILE, BookStep, booking_engine, booking_policy, runs
from support.flows import transcript

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_calls

WAITING = (
    "This needs a person's approval before I can go on: book(hotel='Ritz', total=900). I'll "
    "continue as soon as it is decided."
)


@pytest.fixture
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUNS_FILE, str(path))
    return path


async def _waiting(engine: FlowEngine) -> tuple[str, str]:
    first = await engine.run("BookingFlow", "book Ritz 900", config={"limit": 500})
    assert first.success, first.message
    return first.session_id or "", first.pending_approvals[0]["id"]


async def test_k1_a_call_over_the_limit_is_recorded_not_run(run_log: Path) -> None:
    engine = booking_engine()
    result = await engine.run("BookingFlow", "book Ritz 900", config={"limit": 500}, owner="ann")

    assert (result.success, result.message, result.step) == (True, WAITING, "BookStep")
    assert runs(run_log) == []
    [approval] = result.pending_approvals
    assert {k: approval[k] for k in ("status", "step", "tool", "args", "requested_by")} == {
        "status": "pending",
        "step": "BookStep",
        "tool": "book",
        "args": {"hotel": "Ritz", "total": 900},
        "requested_by": "ann",
    }
    assert approval["requested_at"].endswith("Z")
    assert approval["id"].startswith("apr_")
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None
    assert [a["id"] for a in doc["approvals"]] == [approval["id"]]
    assert await engine.pending_approvals(result.session_id or "") == result.pending_approvals
    assert transcript(doc, "BookStep") == [("human", "book Ritz 900"), ("ai", "call book")]


async def test_k1_a_call_under_the_limit_runs_at_once(run_log: Path) -> None:
    engine = booking_engine()
    result = await engine.run("BookingFlow", "book Inn 120", config={"limit": 500})

    assert (result.message, result.pending_approvals) == ("Result: Booked Inn for 120.", [])
    assert [r["hotel"] for r in runs(run_log)] == ["Inn"]


async def test_k1_on_approval_requested_gives_the_reply() -> None:
    class AskingStep(BookStep):
        def on_approval_requested(self, approval: dict[str, Any]) -> str:
            return f"Your manager must approve {approval['args']['total']} first."

    model = ScriptedChatModel(policy=booking_policy)

    class AskingFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [AskingStep(self)]

    engine = FlowEngine(flows=[AskingFlow], store=MemoryStore())
    result = await engine.run("AskingFlow", "book Ritz 900")
    assert result.message == "Your manager must approve 900 first."


async def test_k1_other_calls_of_the_same_reply_are_answered_not_run(run_log: Path) -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls(
                ("book", {"hotel": "Inn", "total": 100}), ("book", {"hotel": "Ritz", "total": 900})
            ),
            "Both handled.",
        ]
    )
    engine = booking_engine(model=model)
    first = await engine.run("BookingFlow", "two bookings")
    assert [a["args"]["hotel"] for a in first.pending_approvals] == ["Ritz"]
    assert runs(run_log) == []
    doc = await engine.get_session(first.session_id or "")
    assert doc is not None
    stored = doc["memory"]["BookStep"]["messages"][-1]["data"]
    assert stored["content"] == (
        "Not run: this reply also called book, which waits for a person's approval. Call this "
        "tool again once that is decided, if it is still needed."
    )

    done = await engine.resolve_approval(
        first.session_id or "", first.pending_approvals[0]["id"], "approve"
    )
    assert done.message == "Both handled."
    assert [r["hotel"] for r in runs(run_log)] == ["Ritz"]


def test_k1_requires_approval_must_be_a_bool_or_a_function() -> None:
    with pytest.raises(FlowDefinitionError) as raised:
        tool(requires_approval="yes")  # type: ignore[call-overload]
    assert str(raised.value) == (
        "@tool(requires_approval='yes'): pass True, False, or a function (args, step) -> bool "
        "that says whether this call needs a person's approval."
    )


async def test_k2_a_user_message_while_pending_gets_a_waiting_reply(run_log: Path) -> None:
    model = ScriptedChatModel(policy=booking_policy)
    engine = booking_engine(model=model)
    session_id, approval_id = await _waiting(engine)
    calls = len(model.requests)

    held = await engine.run("BookingFlow", "book Ritz 900", session_id)

    assert held.message == (
        "I'm still waiting for a person to approve book. I'll continue as soon as it is "
        "decided; what you wrote is noted."
    )
    assert [a["id"] for a in held.pending_approvals] == [approval_id]
    assert len(model.requests) == calls  # no model call, so no second call of the tool
    assert runs(run_log) == []

    await engine.resolve_approval(session_id, approval_id, "approve")
    doc = await engine.get_session(session_id)
    assert doc is not None
    assert transcript(doc, "BookStep") == [
        ("human", "book Ritz 900"),
        ("ai", "call book"),
        ("tool", "Booked Ritz for 900."),
        ("human", "book Ritz 900"),  # what the user wrote meanwhile, after the result
        ("ai", "Result: Booked Ritz for 900."),
    ]
    assert len(runs(run_log)) == 1


async def test_k2_a_step_may_answer_a_message_while_pending() -> None:
    class PatientStep(BookStep):
        def on_message_while_pending(self, message: str, pending: list[dict[str, Any]]) -> str:
            return f"Noted '{message}'; {len(pending)} request waits."

    model = ScriptedChatModel(policy=booking_policy)

    class PatientFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [PatientStep(self)]

    engine = FlowEngine(flows=[PatientFlow], store=MemoryStore())
    first = await engine.run("PatientFlow", "book Ritz 900")
    held = await engine.run("PatientFlow", "any news?", first.session_id)
    assert held.message == "Noted 'any news?'; 1 request waits."


async def test_k3_approve_runs_the_recorded_call_and_the_model_answers(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)

    done = await engine.resolve_approval(session_id, approval_id, "approve", by="boss")

    assert (done.success, done.message, done.pending_approvals) == (
        True,
        "Result: Booked Ritz for 900.",
        [],
    )
    assert [(r["hotel"], r["total"]) for r in runs(run_log)] == [("Ritz", 900)]
    doc = await engine.get_session(session_id)
    assert doc is not None
    [record] = doc["approvals"]
    assert {k: record[k] for k in ("status", "decision", "resolved_by", "result", "reply")} == {
        "status": "resolved",
        "decision": "approve",
        "resolved_by": "boss",
        "result": {"content": "Booked Ritz for 900.", "status": "success"},
        "reply": "Result: Booked Ritz for 900.",
    }


async def test_k3_edit_runs_the_call_with_the_new_arguments(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)

    done = await engine.resolve_approval(
        session_id, approval_id, "edit", args={"hotel": "Ritz", "total": 450}, by="boss"
    )

    assert done.message == "Result: Booked Ritz for 450."
    assert [(r["hotel"], r["total"]) for r in runs(run_log)] == [("Ritz", 450)]
    [record] = (await engine.get_session(session_id) or {})["approvals"]
    assert (record["requested_args"], record["args"]) == (
        {"hotel": "Ritz", "total": 900},
        {"hotel": "Ritz", "total": 450},
    )


async def test_k3_edit_validates_the_new_arguments(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)

    refused = await engine.resolve_approval(
        session_id, approval_id, "edit", args={"hotel": "Ritz", "total": "lots"}
    )

    assert (refused.success, refused.error) == (False, "InvalidRequest")
    assert refused.message.startswith(
        "The edited arguments for tool 'book' are not valid: 1 validation error for book\ntotal"
    )
    assert refused.message.endswith("Send arguments that fit the tool's schema.")
    assert [a["id"] for a in await engine.pending_approvals(session_id)] == [approval_id]
    assert runs(run_log) == []


async def test_k3_reject_answers_the_call_as_declined(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)

    done = await engine.resolve_approval(
        session_id, approval_id, "reject", by="boss", note="over budget"
    )

    assert done.message == (
        "Result: Declined by boss: a person did not approve this call of book, and it was not "
        "run. Reason: over budget Tell the user, and do not call it again unless they ask for "
        "something different."
    )
    assert runs(run_log) == []


async def test_k3_a_second_resolve_returns_the_recorded_outcome(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)
    first = await engine.resolve_approval(session_id, approval_id, "approve")
    before = await engine.get_session(session_id)

    again = await engine.resolve_approval(session_id, approval_id, "approve")

    assert (again.success, again.message) == (True, first.message)
    assert await engine.get_session(session_id) == before  # nothing ran, nothing was written
    assert len(runs(run_log)) == 1

    other = await engine.resolve_approval(session_id, approval_id, "reject")
    assert (other.success, other.error, other.message) == (
        False,
        "ApprovalAlreadyResolved",
        f"Approval '{approval_id}' was already decided: approve by None; it cannot be changed "
        "to 'reject'.",
    )


async def test_k3_resolving_what_does_not_exist_says_so() -> None:
    engine = booking_engine()
    session_id, _ = await _waiting(engine)

    unknown = await engine.resolve_approval(session_id, "apr_nope", "approve")
    assert (unknown.error, unknown.message) == (
        "ApprovalNotFound",
        f"Session '{session_id}' has no approval 'apr_nope'. List what waits with "
        "pending_approvals(session_id) (GET /ai/approvals).",
    )
    nosession = await engine.resolve_approval("A" * 24, "apr_nope", "approve")
    assert (nosession.error, nosession.message) == (
        "SessionNotFound",
        f"There is no running session '{'A' * 24}' on this engine.",
    )
    bad = await engine.resolve_approval(session_id, "apr_nope", "maybe")
    assert (bad.error, bad.message) == (
        "InvalidRequest",
        "decision must be one of approve, reject, edit; got 'maybe'.",
    )
    no_args = await engine.resolve_approval(session_id, "apr_nope", "edit")
    assert no_args.message == "An 'edit' decision needs the new arguments as a dict (args={...})."


async def test_k3_when_the_model_fails_after_the_tool_the_result_is_kept(run_log: Path) -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls(("book", {"hotel": "Ritz", "total": 900})),
            ValueError("the model broke"),
            "Booked, finally.",
        ]
    )
    engine = booking_engine(model=model)
    first = await engine.run("BookingFlow", "book")
    approval_id = first.pending_approvals[0]["id"]

    failed = await engine.resolve_approval(first.session_id or "", approval_id, "approve")
    assert (failed.success, failed.error) == (False, "ValueError")
    assert len(runs(run_log)) == 1

    retried = await engine.resolve_approval(first.session_id or "", approval_id, "approve")
    assert (retried.success, retried.message) == (True, "Booked, finally.")
    assert len(runs(run_log)) == 1  # K5: the recorded result is replayed, the tool not re-run


async def test_k3_a_claimed_call_is_never_run_again(run_log: Path) -> None:
    """A resolver that died after its claim: in progress until the lease, then interrupted."""
    store = MemoryStore()
    engine = booking_engine(store)
    session_id, approval_id = await _waiting(engine)
    doc = await store.load(session_id)
    assert doc is not None
    doc["approvals"][0].update(status="running", decision="approve", resolved_at=doc["updated_at"])
    await store.save(doc, doc["revision"])

    busy = await engine.resolve_approval(session_id, approval_id, "approve")
    assert (busy.error, busy.message) == (
        "ApprovalInProgress",
        f"Approval '{approval_id}' is being carried out (claimed at {doc['updated_at']}); ask "
        "again once it is done.",
    )

    engine.approval_lease = 0
    done = await engine.resolve_approval(session_id, approval_id, "approve")
    key = doc["approvals"][0]["key"]
    assert done.message == (
        "Result: Interrupted: this call of book was approved, but the process running it stopped "
        "before its result was recorded, so whether it took effect is unknown. It was not run "
        f"again. Its key is {key}: check it before calling the tool again."
    )
    assert runs(run_log) == []
    assert (await engine.get_session(session_id) or {})["approvals"][0]["status"] == "interrupted"


async def test_k5_the_tool_runs_with_the_key_recorded_at_the_request(run_log: Path) -> None:
    engine = booking_engine()
    session_id, approval_id = await _waiting(engine)
    [approval] = await engine.pending_approvals(session_id)

    await engine.resolve_approval(session_id, approval_id, "approve")

    assert approval["key"] == f"{session_id}:1:book#1"  # K8: not the model's call id
    assert [r["key"] for r in runs(run_log)] == [approval["key"]]


async def test_k5_a_tool_outside_approvals_reads_its_key_too(run_log: Path) -> None:
    engine = booking_engine()
    result = await engine.run("BookingFlow", "book Inn 10")
    assert [r["key"] for r in runs(run_log)] == [f"{result.session_id}:1:book#1"]


def test_k5_tool_call_key_outside_a_tool_call_is_an_error() -> None:
    flow = booking_flow_instance()
    with pytest.raises(RuntimeError) as raised:
        _ = flow.get_step(BookStep).tool_call_key
    assert str(raised.value) == (
        "BookStep.tool_call_key was read outside a tool call. Read it inside a @tool method, "
        "where it names the call being answered."
    )


def booking_flow_instance() -> Flow:
    from support.approval_flows import booking_flow

    return booking_flow()()


async def test_k5_a_retried_turn_replays_its_reply_in_any_engine(run_log: Path) -> None:
    store = MemoryStore()
    first_engine, other_engine = booking_engine(store), booking_engine(store)
    start = await first_engine.run("BookingFlow", "hello")
    session_id = start.session_id or ""

    done = await first_engine.run("BookingFlow", "book Inn 90", session_id, idempotency_key="k-1")
    retried = await other_engine.run(
        "BookingFlow", "book Inn 90", session_id, idempotency_key="k-1"
    )

    assert (retried.success, retried.message) == (True, done.message)
    assert [r["key"] for r in runs(run_log)] == [f"{session_id}:k-1:book#1"]  # ran once
    doc = await other_engine.get_session(session_id)
    assert doc is not None
    assert [t for t in transcript(doc, "BookStep") if t == ("human", "book Inn 90")] == [
        ("human", "book Inn 90")
    ]
    # One record of the keyed turn, the one every engine replays from (O4); no second copy.
    assert "turns" not in doc
    assert [r["reply"]["message"] for r in doc["idempotency"].values()] == [done.message]


async def test_k5_a_session_saved_by_an_older_release_loses_its_second_record() -> None:
    """Releases before 2026-12-02 kept keyed turns twice (`turns` beside `idempotency`)."""
    store = MemoryStore()
    engine = booking_engine(store)
    start = await engine.run("BookingFlow", "hello")
    session_id = start.session_id or ""
    doc = await store.load(session_id)
    assert doc is not None
    doc["turns"] = {"k-0": {"reply": "old", "at": doc["updated_at"]}}
    await store.save(doc, doc["revision"])

    await engine.run("BookingFlow", "book Inn 90", session_id, idempotency_key="k-1")

    saved = await store.load(session_id)
    assert saved is not None and "turns" not in saved
    assert len(saved["idempotency"]) == 1


async def test_k1_a_nested_run_cannot_pause_for_approval(run_log: Path) -> None:
    class ParentStep(Step):
        @tool
        async def delegate(self) -> str:
            """Let the booking step do it."""
            return str(await self.run_step(BookStep, "book Ritz 900"))

    model = ScriptedChatModel(
        script={
            "ParentStep": [tool_calls(("delegate", {}))],
            "BookStep": [tool_calls(("book", {"hotel": "Ritz", "total": 900}))],
        }
    )

    class NestingFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ParentStep(self), BookStep(self)]

    engine = FlowEngine(flows=[NestingFlow], store=MemoryStore())
    result = await engine.run("NestingFlow", "go")

    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message == (
        "BookStep called tool 'book', which needs approval, while running nested inside "
        "ParentStep (run_step/run_steps); a nested run cannot pause for a person. Give the tool "
        "to ParentStep instead, so the turn can stop at the call."
    )
    assert runs(run_log) == []


async def test_k7_a_store_without_waiting_says_so() -> None:
    class PlainStore(MemoryStore):
        waiting = None  # type: ignore[assignment]

    engine = booking_engine(PlainStore())
    with pytest.raises(TypeError) as raised:
        await engine.waiting()
    assert str(raised.value) == (
        "PlainStore cannot list the sessions that wait for a person; give it a waiting(limit) "
        "method (MemoryStore, SQLiteStore and MongoStore have one)."
    )
