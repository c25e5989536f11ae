"""O4/H5: a keyed turn's result is saved with the turn, so a retry on any engine replays it.

Two engines on one store stand for two worker processes: each has its own caches, and only the
store is shared. Every test runs on each store.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import BaseMessage

from picoflow import Flow, FlowEngine, Step
from picoflow.stores import Store
from picoflow.testing import ScriptedChatModel

REUSED = (
    "The Idempotency-Key 'k-1' was already used for a different request (another route, flow, "
    "message, session, revision or config). Send each new message with a new key, and reuse a key "
    "only to retry the same request."
)


class ChatStep(Step):
    pass


def chat_flow(model: ScriptedChatModel) -> type[Flow]:
    class ChatFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ChatStep(self)]

    return ChatFlow


def echo() -> ScriptedChatModel:
    def reply(messages: list[BaseMessage], tools: list[str]) -> str:
        return f"ok: {messages[-1].content}"

    return ScriptedChatModel(policy=reply)


def humans(doc: dict[str, Any]) -> list[str]:
    return [m["data"]["content"] for m in doc["memory"]["ChatStep"]["messages"][1:][::2]]


def two_engines(store: Store, model: ScriptedChatModel) -> tuple[FlowEngine, FlowEngine]:
    flow = chat_flow(model)
    return FlowEngine(flows=[flow], store=store), FlowEngine(flows=[flow], store=store)


async def test_o4_a_retry_on_another_engine_replays_the_first_result(store: Store) -> None:
    model = echo()
    first_worker, second_worker = two_engines(store, model)
    start = await first_worker.run("ChatFlow", "hello")
    sent = ("ChatFlow", "two nights", start.session_id)
    first = await first_worker.run(*sent, idempotency_key="k-1")
    retry = await second_worker.run(*sent, idempotency_key="k-1")
    assert (first.replayed, retry.replayed) == (False, True)
    assert (retry.success, retry.session_id, retry.message) == (
        True,
        start.session_id,
        "ok: two nights",
    )
    assert (retry.step, retry.completed, retry.content_type) == ("ChatStep", False, "text/plain")
    assert len(model.requests) == 2
    doc = await store.load(start.session_id)
    assert humans(doc) == ["hello", "two nights"] and doc["revision"] == 1


async def test_o4_a_retry_of_a_first_turn_finds_the_session_it_started(store: Store) -> None:
    """Item 5 of issue #25: the first turn's retry has no session id to send."""
    model = echo()
    first_worker, second_worker = two_engines(store, model)
    first = await first_worker.run("ChatFlow", "hello", idempotency_key="start-1")
    retry = await second_worker.run("ChatFlow", "hello", idempotency_key="start-1")
    assert retry.replayed and retry.session_id == first.session_id
    assert retry.message == first.message == "ok: hello"
    assert len(model.requests) == 1
    other = await second_worker.run("ChatFlow", "hello", idempotency_key="start-2")
    assert not other.replayed and other.session_id != first.session_id  # a new key: a new turn


async def test_o4_a_retry_racing_the_first_loses_at_the_save_and_replays(store: Store) -> None:
    """Both workers run the turn at once; one save wins, the other finds its result."""
    entered = 0
    both_in = asyncio.Event()

    async def reply(messages: list[BaseMessage], tools: list[str]) -> str:
        nonlocal entered
        if messages[-1].content == "two nights":
            entered += 1
            if entered == 2:
                both_in.set()
            await both_in.wait()
        return f"ok: {messages[-1].content}"

    model = ScriptedChatModel(policy=reply)
    first_worker, second_worker = two_engines(store, model)
    start = await first_worker.run("ChatFlow", "hello")
    sent = ("ChatFlow", "two nights", start.session_id)
    results = await asyncio.gather(
        first_worker.run(*sent, idempotency_key="k-1"),
        second_worker.run(*sent, idempotency_key="k-1"),
    )
    assert [r.success for r in results] == [True, True]
    assert sorted(r.replayed for r in results) == [False, True]
    assert {r.message for r in results} == {"ok: two nights"}
    doc = await store.load(start.session_id)
    assert humans(doc) == ["hello", "two nights"]  # stored once


async def test_o4_a_key_reused_for_another_request_is_refused(store: Store) -> None:
    first_worker, second_worker = two_engines(store, echo())
    start = await first_worker.run("ChatFlow", "hello")
    await first_worker.run("ChatFlow", "one", start.session_id, idempotency_key="k-1")
    other = await second_worker.run("ChatFlow", "two", start.session_id, idempotency_key="k-1")
    assert (other.success, other.error, other.message) == (False, "IdempotencyKeyReused", REUSED)
    assert humans(await store.load(start.session_id)) == ["hello", "one"]


async def test_o4_keys_are_per_owner(store: Store) -> None:
    model = echo()
    first_worker, second_worker = two_engines(store, model)
    alice = await first_worker.run("ChatFlow", "hello", owner="alice", idempotency_key="k")
    bob = await second_worker.run("ChatFlow", "hello", owner="bob", idempotency_key="k")
    assert not bob.replayed and bob.session_id != alice.session_id
    assert len(model.requests) == 2


async def test_o4_a_failed_turn_is_not_recorded_so_its_retry_runs(store: Store) -> None:
    model = ScriptedChatModel(script=[RuntimeError("provider down"), "ok: hello"])
    first_worker, second_worker = two_engines(store, model)
    failed = await first_worker.run("ChatFlow", "hello", idempotency_key="k-1")
    retry = await second_worker.run("ChatFlow", "hello", idempotency_key="k-1")
    assert (failed.success, retry.success, retry.replayed) == (False, True, False)
    assert retry.message == "ok: hello"
