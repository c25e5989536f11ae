"""M12 and M16 on every store: a rebuilt summary forgets nothing, and its range says what it covers.

The drift guard rebuilds every `rebuild_after`-th summary from the archived originals of the
previous summary's range. When the archive no longer holds them all (`archive_limit`, W5), the
rebuild starts from the previous summary and re-reads what the archive still has: before that
fix, a long session's rebuilt summary forgot its earliest messages and claimed to cover them.

The summariser here is faithful: its summary lists every "message <n>" its request shows, so what
a summary keeps is what its request held.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
    message_to_dict,
)

from picoflow import Flow, FlowEngine, Step, summarise
from picoflow._housekeeping import rebuild
from picoflow._housekeeping.rebuild import plan_rebuild
from picoflow.memory import Namespace
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel

REREAD = "Original messages the previous summary was written from"


class Chat(Step):
    pass


def _faithful(messages: Any, tools: Any) -> str:
    body = messages[-1].text
    if "Previous summary" not in body:
        return "ok"
    seen = sorted({int(n) for n in re.findall(r"message (\d+)", body)})
    return "facts: " + ", ".join(f"message {n}" for n in seen)


def _flow(model: ScriptedChatModel) -> type[Flow]:
    class RebuildFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            policy = summarise(8, 2, rebuild_after=2)
            self.get_memory().set_summary_model(model).set_policy("chat", policy)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    return RebuildFlow


async def _talk(engine: FlowEngine, turns: range, session: str | None = None) -> str:
    for i in turns:
        result = await engine.run("RebuildFlow", f"message {i}", session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


def _summary_bodies(model: ScriptedChatModel) -> list[str]:
    return [
        str(r.messages[-1].text)
        for r in model.requests
        if r.metadata.get("picoflow_purpose") == "summary"
    ]


async def _chat(engine: FlowEngine, session: str) -> dict[str, Any]:
    doc = await engine.get_session(session)
    assert doc is not None
    chat: dict[str, Any] = doc["memory"]["chat"]
    return chat


async def test_m12_long_session_with_archive_limit_5_keeps_its_earliest_facts(
    store: Store,
) -> None:
    model = ScriptedChatModel(policy=_faithful)
    engine = FlowEngine([_flow(model)], store=store, archive_limit=5)
    session = await _talk(engine, range(7))  # two summaries: positions 1-6, then 7-12
    first, second = _summary_bodies(model)
    assert "User: message 0" in first and "(none yet)" in first
    # the rebuild: the archive kept only positions 2-6, so message 0 (position 1) comes from
    # the previous summary, the kept originals are re-read, and the new messages are merged
    previous, rest = second.split(f"\n\n{REREAD}", 1)
    assert previous == "Previous summary:\nfacts: message 0, message 1, message 2"
    reread, new = rest.split("\n\nMessages to merge into it, oldest first:\n")
    assert reread.splitlines()[1:] == [
        "Assistant: ok",
        "User: message 1",
        "Assistant: ok",
        "User: message 2",
        "Assistant: ok",
    ]
    assert new.splitlines()[0] == "User: message 3"
    chat = await _chat(engine, session)
    assert chat["summary"] == "facts: " + ", ".join(f"message {n}" for n in range(6))
    assert chat["summary_range"] == {
        "from_seq": 1,
        "to_seq": 12,
        "count": 12,
        "rebuilt_from_seq": 2,
    }
    session = await _talk(engine, range(7, 13), session)  # summary 3, then the rebuild, 4
    chat = await _chat(engine, session)
    assert chat["summary_generation"] == 4
    assert chat["summary"] == "facts: " + ", ".join(f"message {n}" for n in range(12))
    # M16: positions 1-24 are covered; the rebuild re-read 14-18, the archive's newest 5
    assert chat["summary_range"] == {
        "from_seq": 1,
        "to_seq": 24,
        "count": 24,
        "rebuilt_from_seq": 14,
    }
    assert chat["archived"] == 24


async def test_m12_with_the_whole_archive_the_rebuild_is_written_from_originals_alone(
    store: Store,
) -> None:
    model = ScriptedChatModel(policy=_faithful)
    engine = FlowEngine([_flow(model)], store=store)  # archive_limit 1000: nothing trimmed
    session = await _talk(engine, range(7))
    _, second = _summary_bodies(model)
    assert second.startswith("Previous summary:\n(none yet)\n\nMessages to merge")
    assert REREAD not in second
    assert "User: message 0" in second and "User: message 5" in second
    chat = await _chat(engine, session)
    assert chat["summary_range"] == {"from_seq": 1, "to_seq": 12, "count": 12}


async def test_m12_rebuild_with_an_empty_archive_keeps_the_summary_and_says_so(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ScriptedChatModel(policy=_faithful)
    engine = FlowEngine([_flow(model)], store=store)
    session = await _talk(engine, range(4))  # summary 1: positions 1-6

    async def nothing(*args: Any, **kwargs: Any) -> list[Any]:
        return []  # an archive emptied behind the session's back (or never written)

    monkeypatch.setattr(store, "search_archive", nothing)
    session = await _talk(engine, range(4, 7), session)
    _, second = _summary_bodies(model)
    assert second.startswith("Previous summary:\nfacts: message 0, message 1, message 2\n\n")
    assert REREAD not in second
    chat = await _chat(engine, session)
    assert chat["summary"] == "facts: " + ", ".join(f"message {n}" for n in range(6))
    # nothing re-read from the archive: only the new messages (7-12) were read as originals
    assert chat["summary_range"] == {
        "from_seq": 1,
        "to_seq": 12,
        "count": 12,
        "rebuilt_from_seq": 7,
    }


async def test_m12_a_due_rebuild_with_nothing_new_to_evict_changes_nothing(store: Store) -> None:
    model = ScriptedChatModel(policy=_faithful)
    engine = FlowEngine([_flow(model)], store=store)
    session = await _talk(engine, range(5))  # summary 1; the next summary is a rebuild
    before = await _chat(engine, session)
    assert await engine.compact(session) == {
        "compacted": True,
        "summary_message_id": f"{session}:chat:summary:2",
        "compacted_count": 2,
        "to_sequence": 8,
    }
    assert await engine.compact(session) == {
        "ok": True,
        "compacted": False,
        "message": "Nothing to compact",
    }
    assert len(_summary_bodies(model)) == 2  # the second compact asked no summariser
    chat = await _chat(engine, session)
    assert chat["summary_range"] == {"from_seq": 1, "to_seq": 8, "count": 8}
    assert before["summary_range"] == {"from_seq": 1, "to_seq": 6, "count": 6}


# --- the plan of a rebuild, against the store's own archive ----------------------------------


def _tool_turn(n: int) -> list[BaseMessage]:
    call = {"name": "look", "args": {"n": n}, "id": f"c{n}", "type": "tool_call"}
    return [
        HumanMessage(f"message {n}"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(f"result {n}", tool_call_id=f"c{n}", name="look"),
        AIMessage(f"answer {n}"),
    ]


async def _archive(store: Store, messages: list[BaseMessage], start: int = 1) -> None:
    entries = [
        {"position": start + i, "message": message_to_dict(m), "compacted_at": "2026-01-01T00:00Z"}
        for i, m in enumerate(messages)
    ]
    await store.archive("s1", "chat", entries)


def _namespace(from_seq: int, to_seq: int) -> Namespace:
    return Namespace(
        summary="S",
        summary_generation=1,
        archived=to_seq,
        summary_range={"from_seq": from_seq, "to_seq": to_seq, "count": to_seq - from_seq + 1},
    )


async def test_m12_rebuild_never_starts_with_a_tool_result_whose_call_was_trimmed(
    store: Store,
) -> None:
    turns = [m for n in range(3) for m in _tool_turn(n)]  # positions 1-12
    await _archive(
        store, turns[2:], start=3
    )  # the archive lost 1-2: the first call's result is at 3
    plan = await plan_rebuild(store, "s1", "chat", _namespace(1, 12))
    assert plan is not None and plan.carried
    assert plan.first == 4 and [m.text for m in plan.originals[:2]] == ["answer 0", "message 1"]
    assert all(
        any(c["id"] == m.tool_call_id for o in plan.originals for c in getattr(o, "tool_calls", []))
        for m in plan.originals
        if isinstance(m, ToolMessage)
    )


async def test_m12_rebuild_reads_only_the_previous_summarys_range(store: Store) -> None:
    await _archive(store, [HumanMessage(f"message {n}") for n in range(1, 21)])
    # positions 1-8 were archived before the namespace was erased (T4): not this summary's
    plan = await plan_rebuild(store, "s1", "chat", _namespace(9, 16))
    assert plan is not None and not plan.carried
    assert [m.text for m in plan.originals] == [f"message {n}" for n in range(9, 17)]


async def test_m12_rebuild_reads_at_most_rebuild_limit_originals_across_pages(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rebuild, "REBUILD_LIMIT", 3)
    monkeypatch.setattr(rebuild, "_PAGE", 2)
    await _archive(store, [HumanMessage(f"message {n}") for n in range(1, 8)])
    plan = await plan_rebuild(store, "s1", "chat", _namespace(1, 7))
    assert plan is not None and plan.carried and plan.first == 5
    assert [m.text for m in plan.originals] == ["message 5", "message 6", "message 7"]
    whole = await plan_rebuild(store, "s1", "chat", _namespace(5, 7))
    assert whole is not None and not whole.carried and whole.first == 5
