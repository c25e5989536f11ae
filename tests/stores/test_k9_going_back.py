"""K9: rewind, undo, edit_message and fork never remove an effect from the record, on every store.

Going back to before a tool acted on the world fails with `EffectInHistoryError` naming what
was done; `force=True` goes back, keeps the record and tells the step's next model call.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import SystemMessage
from support.effect_flows import effect_flow, effect_policy

from picoflow import EffectInHistoryError, FlowEngine
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel


async def _booked(store: Store) -> tuple[FlowEngine, ScriptedChatModel, str, int, list[str]]:
    """A session: a chat turn, a booking, a chat turn."""
    runs: list[str] = []
    model = ScriptedChatModel(policy=effect_policy)
    engine = FlowEngine([effect_flow(model, runs)], store=store)
    first = await engine.run("EffectFlow", "hello")
    session_id = first.session_id or ""
    booked = await engine.run("EffectFlow", "book Inn", session_id)
    assert booked.success and [e["tool"] for e in booked.effects] == ["book"]
    await engine.run("EffectFlow", "thanks", session_id)
    return engine, model, session_id, booked.effects[0]["revision"], runs


async def test_k9_a_rewind_to_before_an_effect_is_refused_naming_it(store: Store) -> None:
    engine, _, session_id, booked_at, _ = await _booked(store)
    before = await store.load(session_id)
    with pytest.raises(EffectInHistoryError) as raised:
        await engine.rewind(session_id, booked_at - 1)
    assert raised.value.effects[0]["tool"] == "book"
    assert f"cannot go back to revision {booked_at - 1}" in str(raised.value)
    assert "book (revision" in str(raised.value) and "force=True" in str(raised.value)
    assert await store.load(session_id) == before  # nothing was written


async def test_k9_undo_of_the_booking_turn_is_refused_but_later_turns_undo(store: Store) -> None:
    engine, _, session_id, _, _ = await _booked(store)
    revision = await engine.undo(session_id)  # the "thanks" turn: after the effect, allowed
    doc = await store.load(session_id)
    assert doc is not None and doc["revision"] == revision
    assert [e["tool"] for e in doc["effects"]] == ["book"]  # the record is kept
    with pytest.raises(EffectInHistoryError):
        await engine.undo(session_id)  # the booking turn itself


async def test_k9_a_forced_rewind_keeps_the_effects_and_tells_the_next_model_call(
    store: Store,
) -> None:
    engine, model, session_id, booked_at, runs = await _booked(store)
    await engine.rewind(session_id, booked_at - 1, force=True)
    doc = await store.load(session_id)
    assert doc is not None
    assert [e["tool"] for e in doc["effects"]] == ["book"]
    assert doc["effects_notice"] == booked_at - 1
    assert all("book" not in str(m) for m in doc["memory"]["BookStep"]["messages"][1:])

    await engine.run("EffectFlow", "hi again", session_id)
    system = model.requests[-1].messages[0]
    assert isinstance(system, SystemMessage)
    assert "Already done in this conversation" in str(system.content)
    assert "book(hotel='Inn') -> Booked Inn, reference R-1." in str(system.content)
    after = await store.load(session_id)
    assert after is not None and "effects_notice" not in after  # told once, then dropped
    assert "Already done" not in str(after["memory"]["BookStep"]["messages"][0])  # not stored
    assert len(runs) == 1


async def test_k9_a_fork_from_before_an_effect_is_refused_unless_forced(store: Store) -> None:
    engine, _, session_id, booked_at, _ = await _booked(store)
    with pytest.raises(EffectInHistoryError):
        await engine.fork(session_id, booked_at - 1)
    copy_id = await engine.fork(session_id, booked_at - 1, force=True)
    copy = await store.load(copy_id)
    assert copy is not None and [e["tool"] for e in copy["effects"]] == ["book"]
    whole = await store.load(await engine.fork(session_id))  # a fork of now needs no force
    assert whole is not None and [e["tool"] for e in whole["effects"]] == ["book"]


async def test_k9_editing_the_message_that_booked_fails_unless_forced(store: Store) -> None:
    engine, _, session_id, booked_at, runs = await _booked(store)
    refused = await engine.edit_message(session_id, booked_at, "book Ritz")
    assert (refused.success, refused.error) == (False, "EffectInHistoryError")
    assert "book (revision" in refused.message
    assert len(runs) == 1
    edited = await engine.edit_message(session_id, booked_at, "book Ritz", force=True)
    assert edited.success, edited.message
    doc = await store.load(session_id)
    assert doc is not None and [e["args"]["hotel"] for e in doc["effects"]] == ["Inn", "Ritz"]
