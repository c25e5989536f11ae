"""K10, W1: every history revision names its cause (`action`), on MemoryStore and SQLite.

One session goes through each kind of change a person or the engine makes (a turn, an approval,
a handoff, an operator's reply, a return, a failed turn's error, a rewind, an edit, a fork), and
another through a compaction; after each, the newest revision's `action` is what caused it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage
from support.approval_flows import RUNS_FILE, booking_flow, booking_policy

from picoflow import Flow, FlowEngine, Step, summarise
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.testing import ScriptedChatModel


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return MemoryStore() if request.param == "memory" else SQLiteStore(str(tmp_path / "s.db"))


def failing_on_boom(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The booking policy, except that "boom" makes the model fail (a failed turn)."""
    if str(messages[-1].content) == "boom":
        raise RuntimeError("the model is down")
    return booking_policy(messages, tools)


async def actions(engine: FlowEngine, session: str, count: int) -> list[Any]:
    """The actions of the newest `count` revisions, oldest first."""
    listed = await engine.history(session, limit=count)
    return [entry["action"] for entry in reversed(listed)]


async def test_k10_each_revision_names_its_cause(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RUNS_FILE, str(tmp_path / "runs.jsonl"))
    flow = booking_flow(ScriptedChatModel(policy=failing_on_boom))
    engine = FlowEngine(flows=[flow], store=store)
    first = await engine.run("BookingFlow", "book Ritz 900", owner="ann")
    session = first.session_id
    assert await actions(engine, session, 1) == ["turn"]
    [approval] = first.pending_approvals
    assert (await engine.resolve_approval(session, approval["id"], "approve", by="boss")).success
    # claimed, the tool's result, the model's answer: three saves of one approval (K3)
    assert await actions(engine, session, 3) == ["approval"] * 3
    assert (await engine.run("BookingFlow", "I want a person", session_id=session)).success
    assert await actions(engine, session, 1) == ["handoff"]
    assert (await engine.run("BookingFlow", "hello?", session_id=session)).success
    assert await actions(engine, session, 1) == ["turn"]  # a user's message, held for the operator
    assert (await engine.operator_reply(session, "Sam here.", by="sam")).success
    assert await actions(engine, session, 1) == ["operator"]
    assert (await engine.return_to_flow(session, by="sam")).success
    assert await actions(engine, session, 1) == ["return"]
    returned = (await engine.history(session, limit=1))[0]["revision"]
    assert not (await engine.run("BookingFlow", "boom", session_id=session)).success
    assert await actions(engine, session, 1) == ["error"]  # U5: its error, written alone
    await engine.rewind(session, returned)
    assert await actions(engine, session, 1) == ["rewind"]
    assert (await engine.run("BookingFlow", "hi", session_id=session)).success
    said = (await engine.history(session, limit=1))[0]["revision"]
    assert (await engine.edit_message(session, said, "hi again")).success
    assert await actions(engine, session, 1) == ["edit"]
    copy = await engine.fork(session)
    assert await actions(engine, copy, 1) == ["fork"]
    assert all(e["action"] is not None for e in await engine.history(session))


class Chat(Step):
    pass


def compacting_flow(model: ScriptedChatModel) -> type[Flow]:
    class CompactFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(model).set_policy("chat", summarise(16, 4))

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    return CompactFlow


async def test_k10_a_compaction_is_named_a_compaction(store: Store) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: "ok")
    engine = FlowEngine([compacting_flow(model)], store=store)
    session = None
    for i in range(4):
        result = await engine.run("CompactFlow", f"message {i}", session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    assert (await engine.compact(session))["compacted"] is True
    assert await actions(engine, session, 5) == ["turn"] * 4 + ["compaction"]
