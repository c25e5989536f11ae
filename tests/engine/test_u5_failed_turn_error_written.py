"""U5: a failed turn's error is written with the failure, so a restart or a last turn keeps it.

The write changes the session's `error` array alone (P3), with the revision check; another
principal's failure never reaches a session (H4); and when the error cannot be written at once
(the store failed, another worker holds the session's lease) it goes with the next save.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.failed_turns import apart_from_error

from picoflow import Flow, FlowEngine, Step
from picoflow.errors import StoreError
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.testing import ScriptedChatModel


class Chat(Step):
    pass


def chat_flow() -> type[Flow]:
    """A flow whose model answers, except that "boom" makes it fail (a failed turn)."""

    def policy(messages: Any, tools: Any) -> str:
        if messages[-1].content == "boom":
            raise RuntimeError("the model is down")
        return "ok"

    model = ScriptedChatModel(policy=policy)

    class ChatFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self)]

    return ChatFlow


def errors_of(doc: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert doc is not None
    return [(entry["error"], entry["message"]) for entry in doc["error"]]


async def test_u5_a_failed_last_turn_keeps_its_error_through_a_restart(tmp_path: Path) -> None:
    path = str(tmp_path / "sessions.db")
    engine = FlowEngine([chat_flow()], store=SQLiteStore(path))
    first = await engine.run("ChatFlow", "hello", owner="ann")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("ChatFlow", "boom", session_id=first.session_id, owner="ann")
    assert (failed.success, failed.error) == (False, "RuntimeError")
    await engine.aclose()  # the process ends: nothing is left in memory

    restarted = FlowEngine([chat_flow()], store=SQLiteStore(path))
    doc = await restarted.get_session(first.session_id)
    assert errors_of(doc) == [("RuntimeError", failed.message)]
    assert apart_from_error(doc) == apart_from_error(before)  # P3: nothing else changed
    [newest] = await restarted.history(first.session_id, limit=1)
    assert newest["action"] == "error"
    await restarted.aclose()


async def test_u5_another_principals_failure_is_not_written_to_the_session() -> None:
    store = MemoryStore()
    engine = FlowEngine([chat_flow()], store=store)
    first = await engine.run("ChatFlow", "hello", owner="ann")
    before = await store.load(first.session_id)
    other = await engine.run("ChatFlow", "boom", session_id=first.session_id, owner="eve")
    assert not other.success  # H4: ann's session is unknown to eve, whose new turn failed
    assert await store.load(first.session_id) == before
    later = await engine.run("ChatFlow", "again", session_id=first.session_id, owner="ann")
    assert later.success
    assert errors_of(await store.load(first.session_id)) == []  # nor with ann's next save


async def test_u5_an_error_the_store_could_not_take_goes_with_the_next_save(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    store = MemoryStore()
    engine = FlowEngine([chat_flow()], store=store)
    first = await engine.run("ChatFlow", "hello")
    before = await store.load(first.session_id)
    save = store.save

    async def down_once(*args: Any, **kwargs: Any) -> int:
        monkeypatch.setattr(store, "save", save)
        raise StoreError("the store is down")

    monkeypatch.setattr(store, "save", down_once)
    failed = await engine.run("ChatFlow", "boom", session_id=first.session_id)
    assert not failed.success
    assert await store.load(first.session_id) == before  # not written: the store was down
    later = await engine.run("ChatFlow", "again", session_id=first.session_id)
    assert later.success
    assert errors_of(await store.load(first.session_id)) == [("RuntimeError", failed.message)]


async def test_u5_while_another_worker_holds_the_lease_the_error_waits_for_the_next_save(
    tmp_path: Path,
) -> None:
    store: Store = SQLiteStore(str(tmp_path / "s.db"))
    leases: Any = store
    engine = FlowEngine([chat_flow()], store=store, concurrent_turns="queue", turn_timeout=0.2)
    first = await engine.run("ChatFlow", "hello")
    before = await store.load(first.session_id)
    assert await leases.acquire_lease(first.session_id, "another worker", 30.0)
    waited = await engine.run("ChatFlow", "are you there?", session_id=first.session_id)
    assert (waited.success, waited.error) == (False, "TurnTimeout")  # O4: it queued, in vain
    assert await store.load(first.session_id) == before  # O4: that worker's turn is not broken
    await leases.release_lease(first.session_id, "another worker")
    later = await engine.run("ChatFlow", "again", session_id=first.session_id)
    assert later.success
    assert errors_of(await store.load(first.session_id)) == [("TurnTimeout", waited.message)]
    await engine.aclose()


async def test_u5_the_same_failure_again_adds_no_entry_and_no_revision() -> None:
    """A client that keeps sending into the same refusal does not fill the history with it."""
    engine = FlowEngine([chat_flow()], store=MemoryStore())
    first = await engine.run("ChatFlow", "hello")
    for _ in range(3):
        failed = await engine.run("ChatFlow", "boom", session_id=first.session_id)
        assert failed.error == "RuntimeError"
    doc = await engine.get_session(first.session_id or "")
    assert errors_of(doc) == [("RuntimeError", failed.message)]
    assert [e["action"] for e in await engine.history(first.session_id or "")] == ["error", "turn"]
