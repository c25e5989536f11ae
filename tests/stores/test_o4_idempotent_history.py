"""H5/O4 for the history changes: a retried undo, rewind, fork or edit changes the session once.

`undo` is the sharp one: sent twice it undoes two turns, so a client that timed out and
retried lost an answer it never meant to. With an idempotency key the retry gets the first
result instead, on any engine sharing the store. Two engines on one store stand for two
worker processes (each has its own locks and caches); every test runs on each store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.history_flows import ChatFlow, humans

from picoflow import FlowEngine, IdempotencyKeyReusedError, RevisionNotFoundError
from picoflow.stores import Store


def two_engines(store: Store) -> tuple[FlowEngine, FlowEngine]:
    return FlowEngine(flows=[ChatFlow], store=store), FlowEngine(flows=[ChatFlow], store=store)


async def chat(engine: FlowEngine, *texts: str) -> str:
    session_id: str | None = None
    for text in texts:
        result = await engine.run("ChatFlow", text, session_id)
        assert result.success, result
        session_id = result.session_id
    assert session_id is not None
    return session_id


def actions(history: list[dict[str, Any]]) -> list[str]:
    return [entry["action"] for entry in history][::-1]


async def test_o4_a_retried_undo_on_another_engine_undoes_one_turn(store: Store) -> None:
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two", "three")
    first = await first_worker.undo(session_id, idempotency_key="undo-1")
    retry = await second_worker.undo(session_id, idempotency_key="undo-1")
    assert retry == first == 3
    doc = await store.load(session_id)
    assert humans(doc) == ["one", "two"] and doc["revision"] == 3
    assert actions(await first_worker.history(session_id)) == ["turn", "turn", "turn", "rewind"]
    # Without a key an undo is a new request: it undoes the turn before.
    assert await second_worker.undo(session_id) == 4
    assert humans(await store.load(session_id)) == ["one"]


async def test_o4_an_undo_and_its_retry_at_once_undo_one_turn(store: Store) -> None:
    """The retry arrives while the first still runs: on one engine it waits for the session's
    lock and then finds the record; on the other it loses the save and then finds it."""
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two", "three")
    same, other = await asyncio.gather(
        first_worker.undo(session_id, idempotency_key="u"),
        first_worker.undo(session_id, idempotency_key="u"),
    )
    assert same == other == 3
    raced = await asyncio.gather(
        first_worker.undo(session_id, idempotency_key="v"),
        second_worker.undo(session_id, idempotency_key="v"),
    )
    assert raced[0] == raced[1] == 4
    assert humans(await store.load(session_id)) == ["one"]
    assert actions(await first_worker.history(session_id)).count("rewind") == 2


async def test_o4_a_retried_rewind_returns_the_first_revision(store: Store) -> None:
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two", "three")
    first = await first_worker.rewind(session_id, 0, idempotency_key="r")
    await first_worker.run("ChatFlow", "four", session_id)
    retry = await second_worker.rewind(session_id, 0, idempotency_key="r")
    assert retry == first == 3
    doc = await store.load(session_id)
    assert humans(doc) == ["one", "four"] and doc["revision"] == 4


async def test_o4_a_retried_fork_returns_the_first_copy(store: Store) -> None:
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two")
    copy = await first_worker.fork(session_id, 0, idempotency_key="f")
    again = await second_worker.fork(session_id, 0, idempotency_key="f")
    assert again == copy != session_id
    forked = await store.load(copy)
    assert humans(forked) == ["one"] and forked["forked_from"] == {
        "session_id": session_id,
        "revision": 0,
    }
    raced = await asyncio.gather(
        first_worker.fork(session_id, idempotency_key="g"),
        second_worker.fork(session_id, idempotency_key="g"),
    )
    assert raced[0] == raced[1] not in (copy, session_id)
    assert humans(await store.load(raced[0])) == ["one", "two"]
    # Another key is another request: another copy.
    assert await second_worker.fork(session_id, 0, idempotency_key="h") not in (copy, raced[0])


async def test_o4_a_retried_edit_replays_the_first_result(store: Store) -> None:
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two")
    first = await first_worker.edit_message(session_id, 1, "deux", idempotency_key="e")
    retry = await second_worker.edit_message(session_id, 1, "deux", idempotency_key="e")
    assert (first.success, first.replayed, retry.success, retry.replayed) == (
        True,
        False,
        True,
        True,
    )
    assert retry.message == first.message == "echo: deux"
    assert retry.session_id == session_id and retry.step == "ChatStep"
    doc = await store.load(session_id)
    assert humans(doc) == ["one", "deux"] and doc["revision"] == 2
    assert actions(await first_worker.history(session_id)) == ["turn", "turn", "edit"]


async def test_o4_a_key_sent_again_with_another_change_is_refused(store: Store) -> None:
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two", "three")
    await first_worker.undo(session_id, idempotency_key="k-1")
    with pytest.raises(IdempotencyKeyReusedError, match="'k-1' was already used") as caught:
        await second_worker.rewind(session_id, 0, idempotency_key="k-1")
    assert caught.value.key == "k-1" and isinstance(caught.value, ValueError)
    edit = await second_worker.edit_message(session_id, 1, "deux", idempotency_key="k-1")
    assert (edit.success, edit.error) == (False, "IdempotencyKeyReused")
    doc = await store.load(session_id)
    assert humans(doc) == ["one", "two"] and doc["revision"] == 3


async def test_o4_a_keyed_turn_stays_answered_after_an_undo(store: Store) -> None:
    """H5: the message is stored once. A late retry of a turn that was then undone gets the
    turn's first reply; it does not put the undone message back."""
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one")
    sent = ("ChatFlow", "two", session_id)
    await first_worker.run(*sent, idempotency_key="t")
    await first_worker.undo(session_id)
    retry = await second_worker.run(*sent, idempotency_key="t")
    assert (retry.replayed, retry.message) == (True, "echo: two")
    assert humans(await store.load(session_id)) == ["one"]


async def test_o4_a_failed_keyed_undo_records_nothing(store: Store) -> None:
    """A change that failed saved nothing (P3), so its retry runs and fails the same way."""
    engine, _ = two_engines(store)
    session_id = await chat(engine, "one")
    for _attempt in range(2):
        with pytest.raises(RevisionNotFoundError, match="no earlier turn to undo"):
            await engine.undo(session_id, idempotency_key="x")
    doc = await store.load(session_id)
    assert doc["revision"] == 0 and "idempotency" not in doc


async def test_o4_a_retry_that_checked_before_the_first_undo_saved_still_replays_it(
    store: Store,
) -> None:
    """The retry looked for a record, found none, and the first undo saved right after: the
    retry must not undo the turn before, nor fail with "no earlier turn to undo"."""
    first_worker, second_worker = two_engines(store)
    session_id = await chat(first_worker, "one", "two")
    before = await store.load(session_id)
    looked = second_worker._sessions.load

    async def stale_once(sid: str) -> Any:
        second_worker._sessions.load = looked  # type: ignore[method-assign]
        assert await first_worker.undo(session_id, idempotency_key="late") == 2
        return before, None  # what the retry read, a moment before that save

    second_worker._sessions.load = stale_once  # type: ignore[method-assign]
    assert await second_worker.undo(session_id, idempotency_key="late") == 2
    doc = await store.load(session_id)
    assert humans(doc) == ["one"] and doc["revision"] == 2
