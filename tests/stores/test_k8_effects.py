"""K8: effects are facts, on every store.

A tool declared with `@tool(effects=True)` (and every tool that needs approval) is recorded in
the session's `effects` each time it runs; a turn that fails after one ran (budget, deadline,
model error) is saved up to that tool's result with a reply that says what was done; an
idempotent retry replays it and never runs the tool again; the key of a call does not depend on
the model's call ids, so a retry that does call again calls with the same key.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, ToolMessage
from support.effect_flows import effect_flow, effect_policy, failing_after_tools

from picoflow import FlowDefinitionError, FlowEngine, Step, StoreError, tool
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel


async def test_k8_each_run_of_a_tool_with_effects_is_recorded_in_the_session(
    store: Store,
) -> None:
    runs: list[str] = []
    engine = FlowEngine([effect_flow(ScriptedChatModel(policy=effect_policy), runs)], store=store)
    first = await engine.run("EffectFlow", "look Inn")
    booked = await engine.run("EffectFlow", "book Inn", first.session_id)
    assert booked.success, booked.message
    doc = await store.load(booked.session_id or "")
    assert doc is not None
    [effect] = doc["effects"]  # the look-up is no effect; the booking is one
    assert effect["tool"] == "book"
    assert effect["args"] == {"hotel": "Inn"}
    assert effect["key"] == runs[0] == f"{booked.session_id}:{doc['revision']}:book#1"
    assert effect["result"] == {"content": "Booked Inn, reference R-1.", "status": "success"}
    assert effect["revision"] == doc["revision"]
    assert effect["at"].endswith("Z") and effect["step"] == "BookStep"
    assert booked.effects == [effect]


async def test_k8_a_budget_refusal_after_an_effect_saves_the_turn_and_a_retry_replays_it(
    store: Store,
) -> None:
    runs: list[str] = []
    flow = effect_flow(ScriptedChatModel(policy=effect_policy), runs)
    engine = FlowEngine([flow], store=store, budgets={"model_calls_per_turn": 1})
    start = await engine.run("EffectFlow", "hello")
    stopped = await engine.run("EffectFlow", "book Inn", start.session_id, idempotency_key="k1")

    assert (stopped.success, stopped.error) == (False, "BudgetExceeded")
    assert stopped.session_id == start.session_id and stopped.step == "BookStep"
    assert "book(hotel='Inn') -> Booked Inn, reference R-1." in stopped.message
    assert "model_calls_per_turn" in stopped.message
    doc = await store.load(start.session_id or "")
    assert doc is not None
    assert [e["key"] for e in doc["effects"]] == runs == [f"{start.session_id}:k1:book#1"]
    kinds = [m["type"] for m in doc["memory"]["BookStep"]["messages"][-4:]]
    assert kinds == ["human", "ai", "tool", "ai"]  # the call, its result, the closing reply

    for _ in range(2):  # the client retries: replayed, the tool never runs again
        again = await engine.run("EffectFlow", "book Inn", start.session_id, idempotency_key="k1")
        assert (again.replayed, again.success, again.error) == (True, False, "BudgetExceeded")
        assert again.message == stopped.message
    assert len(runs) == 1


async def test_k8_a_model_error_after_an_effect_saves_the_turn(store: Store) -> None:
    runs: list[str] = []
    model = ScriptedChatModel(policy=failing_after_tools)
    engine = FlowEngine([effect_flow(model, runs)], store=store)
    stopped = await engine.run("EffectFlow", "book Inn")
    assert (stopped.success, stopped.error) == (False, "RuntimeError")
    assert stopped.session_id is not None  # a first turn with an effect creates the session
    doc = await store.load(stopped.session_id)
    assert doc is not None and [e["tool"] for e in doc["effects"]] == ["book"]
    assert "of an error (RuntimeError)" in stopped.message


async def test_k8_a_failure_before_any_effect_still_saves_nothing(store: Store) -> None:
    runs: list[str] = []
    model = ScriptedChatModel(policy=failing_after_tools)
    engine = FlowEngine([effect_flow(model, runs)], store=store)
    start = await engine.run("EffectFlow", "hello")
    before = await store.load(start.session_id or "")
    failed = await engine.run("EffectFlow", "look Inn", start.session_id)
    assert (failed.success, failed.error, failed.effects) == (False, "RuntimeError", [])
    doc = await store.load(start.session_id or "")
    assert doc is not None and before is not None and "effects" not in doc
    assert doc["memory"] == before["memory"]  # P3: the turn itself saved nothing


async def test_k8_a_tool_that_raised_is_recorded_too(store: Store) -> None:
    runs: list[str] = []
    flow = effect_flow(ScriptedChatModel(policy=effect_policy), runs, fails=True)
    engine = FlowEngine([flow], store=store)
    result = await engine.run("EffectFlow", "book Inn")
    assert result.success
    doc = await store.load(result.session_id or "")
    assert doc is not None
    [effect] = doc["effects"]  # it may have acted before it raised
    assert effect["result"]["status"] == "error"
    assert "the booking system answered 500" in effect["result"]["content"]


async def test_k8_the_deadline_after_an_effect_saves_the_turn(store: Store) -> None:
    runs: list[str] = []
    never = asyncio.Event()

    class Hanging(ScriptedChatModel):
        async def _agenerate(self, messages: list[BaseMessage], *args: Any, **kw: Any) -> Any:
            if isinstance(messages[-1], ToolMessage):
                await never.wait()  # the deadline ends it
            return await super()._agenerate(messages, *args, **kw)

    engine = FlowEngine(
        [effect_flow(Hanging(policy=effect_policy), runs)], store=store, turn_timeout=0.5
    )
    stopped = await engine.run("EffectFlow", "book Inn")
    assert (stopped.success, stopped.error) == (False, "TurnTimeout")
    assert "reached its deadline" in stopped.message
    doc = await store.load(stopped.session_id or "")
    assert doc is not None and [e["key"] for e in doc["effects"]] == runs


def test_k8_effects_must_be_a_bool() -> None:
    with pytest.raises(FlowDefinitionError, match=r"@tool\(effects='yes'\): pass True"):

        class Bad(Step):
            @tool(effects="yes")  # type: ignore[arg-type]
            def book(self) -> str:
                """Book."""
                return "ok"


def test_k8_every_tool_that_needs_approval_has_effects() -> None:
    class Gated(Step):
        @tool(requires_approval=True)
        def pay(self) -> str:
            """Pay."""
            return "paid"

        @tool(requires_approval=lambda args, step: False)
        def maybe(self) -> str:
            """Maybe pay."""
            return "paid"

        @tool
        def read(self) -> str:
            """Read."""
            return "read"

    from picoflow.tools import collect_tools

    effects = {spec.name: spec.has_effects for spec in collect_tools(Gated)}
    assert effects == {"pay": True, "maybe": True, "read": False}


async def test_k8_a_retry_after_a_worker_died_before_its_save_never_runs_the_tool_again(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worker's save never happens (it died): the claim it took in the store stops the retry."""
    runs: list[str] = []
    flow = effect_flow(ScriptedChatModel(policy=effect_policy), runs)
    dying, other = FlowEngine([flow], store=store), FlowEngine([flow], store=store)
    start = await dying.run("EffectFlow", "hello")
    session_id = start.session_id or ""
    real_save = store.save

    async def died(*args: Any, **kwargs: Any) -> int:
        raise StoreError("the worker died")  # nothing after the tool reaches the store

    monkeypatch.setattr(store, "save", died)
    lost = await dying.run("EffectFlow", "book Inn", session_id, idempotency_key="k9")
    assert not lost.success and runs == [f"{session_id}:k9:book#1"]
    monkeypatch.setattr(store, "save", real_save)

    retried = await other.run("EffectFlow", "book Inn", session_id, idempotency_key="k9")
    assert retried.success, retried.message
    assert len(runs) == 1  # the claim of the attempt that died holds: not run again
    doc = await store.load(session_id)
    assert doc is not None
    [effect] = doc["effects"]
    assert (effect["key"], effect["result"]["status"]) == (runs[0], "interrupted")
    assert "whether it took effect is unknown" in effect["result"]["content"]
    next_turn = await other.run("EffectFlow", "book Ritz", session_id)
    assert next_turn.success and len(runs) == 2  # a new request's call has a key of its own
