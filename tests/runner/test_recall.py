"""M9: evicted messages go to the archive with their positions; `use_recall()` searches it."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage
from test_compaction import Chat, Other, replies, summary_requests, talk

from picoflow import Flow, FlowEngine, Step, tool
from picoflow._runner.recall import render_results
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


def recall_flow(model: ScriptedChatModel, recall: bool = True) -> type[Flow]:
    class ChatFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_summary_config(min_messages=8, recent_messages=4).enable_summary("chat")
            memory.enable_summary("Other")  # so Other's recall has an archive too

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            chat = Chat(self).use_memory("chat")
            return [chat.use_recall() if recall else chat, Other(self).use_recall()]

    return ChatFlow


async def test_m9_evicted_messages_are_archived_with_their_original_positions() -> None:
    model = ScriptedChatModel(script={"Chat": replies(6), "summary": ["S1", "S2"]})
    store = MemoryStore()
    engine = FlowEngine(flows=[recall_flow(model)], store=store)
    results = await talk(engine, 6)
    session_id = results[0].session_id
    archived = await store.search_archive(session_id, "chat", "", page_size=50)
    assert [(e["position"], e["message"]["data"]["content"]) for e in archived] == [
        (8, "r4"),
        (7, "m4"),
        (6, "r3"),
        (5, "m3"),
        (4, "r2"),
        (3, "m2"),
        (2, "r1"),
        (1, "m1"),
    ]
    assert archived[-1]["message"]["type"] == "human"
    doc = await engine.get_session(session_id)
    assert doc["memory"]["chat"]["archived"] == 8
    assert len(summary_requests(model)) == 2


class Forgetful(Chat):
    @tool
    def forget(self) -> str:
        """Forget the conversation so far."""
        self.erase_memory()
        return "forgotten"


async def test_m9_erased_messages_are_not_archived_but_keep_their_positions() -> None:
    chat = ["r1", "r2", tool_call("forget"), "Forgotten.", *replies(4)]
    model = ScriptedChatModel(script={"Forgetful": chat, "summary": ["S1"]})

    class ForgetFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_summary_config(min_messages=8, recent_messages=4).enable_summary("chat")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Forgetful(self).use_memory("chat")]

    store = MemoryStore()
    engine = FlowEngine(flows=[ForgetFlow], store=store)
    first = await engine.run("ForgetFlow", "m1")
    for message in ("m2", "forget all", "m4", "m5"):
        await engine.run("ForgetFlow", message, session_id=first.session_id)
    # The erase removed m1 r1 m2 r2 "forget all" (positions 1-5). At the end of the m5 turn
    # the history is [system, call, result, "Forgotten.", m4, r1, m5, r2]: the cut at 8 - 4
    # evicts the tool exchange and "Forgotten.", which get positions 6 to 8.
    archived = await store.search_archive(first.session_id, "chat", "", page_size=50)
    assert [(e["position"], e["message"]["type"]) for e in archived] == [
        (8, "ai"),
        (7, "tool"),
        (6, "ai"),
    ]
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["archived"] == 8


async def test_m9_conversation_search_is_bound_and_finds_archived_messages() -> None:
    chat = [*replies(5), tool_call("conversation_search", query="budget"), "It was 300."]
    model = ScriptedChatModel(script={"Chat": chat, "summary": ["S1"]})
    store = MemoryStore()
    engine = FlowEngine(flows=[recall_flow(model)], store=store)
    first = await engine.run("ChatFlow", "my budget is 300 EUR")
    results = await talk(engine, 4, first.session_id)  # the 4th turn evicts the first four
    answer = await engine.run("ChatFlow", "what was my budget?", session_id=first.session_id)
    assert answer.message == "It was 300." and results[-1].success
    asked, answered = [r for r in model.requests if r.metadata["picoflow_purpose"] == "reply"][-2:]
    assert "conversation_search" in asked.tool_names
    result = answered.messages[-1]
    assert isinstance(result, ToolMessage)
    (entry,) = await store.search_archive(first.session_id, "chat", "budget")
    stamp = entry["compacted_at"]  # M16: when the compaction that evicted it ran
    shown = f"{stamp[:10]} {stamp[11:16]} UTC"
    assert result.content == (
        "Earlier messages matching 'budget', page 1, newest first:\n"
        f"[compacted {shown}]\n#1 user: my budget is 300 EUR"
    )


async def test_m9_recall_is_only_for_steps_that_opted_in() -> None:
    model = ScriptedChatModel(script={"Chat": replies(1)})
    engine = FlowEngine(flows=[recall_flow(model, recall=False)], store=MemoryStore())
    await engine.run("ChatFlow", "hi")
    assert model.requests[0].tool_names == ["note", "remember"]


async def test_m9_search_is_scoped_to_the_step_namespace() -> None:
    store = MemoryStore()
    await store.archive("s" * 20, "chat", [{"position": 1, "message": _human("budget 300")}])
    flow = recall_flow(ScriptedChatModel(script=[]))()
    flow._session.session_id = "s" * 20
    from picoflow._runner.recall import recall_tools

    tools = recall_tools(store)
    ((_, search_chat),) = tools(flow.get_step(Chat))
    ((_, search_other),) = tools(flow.get_step(Other))
    assert "#1 user: budget 300" in await search_chat(query="budget")
    assert await search_other(query="budget") == "No earlier messages match 'budget'."


def test_m9_recall_over_a_namespace_nothing_archives_is_warned_about(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """M9: recall needs an archive: compaction or a distillation's erase fills it. The flow
    still runs (F5 does not list this), but the engine says so when it starts."""
    model = ScriptedChatModel(script=[])

    class Unarchived(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(model).enable_summary("chat")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat").use_recall(), Other(self).use_recall()]

    with caplog.at_level("WARNING", logger="picoflow.engine._checks"):
        FlowEngine(flows=[Unarchived], store=MemoryStore())
    assert [r.getMessage() for r in caplog.records if r.name == "picoflow.engine._checks"] == [
        "Unarchived.Other calls use_recall(), but nothing ever archives its namespace 'Other', "
        "so conversation_search would always find nothing. Call "
        "get_memory().enable_summary('Other') (compaction archives what it evicts) or "
        "distil_on_exit(..., erase=True) on a step using it, or remove use_recall()."
    ]


def test_m9_results_page_and_clip() -> None:
    entries = [{"position": p, "message": _human(f"room {p} " + "x" * 700)} for p in range(10)]
    text = render_results("room", 2, entries)
    lines = text.splitlines()
    assert lines[0] == "Earlier messages matching 'room', page 2, newest first:"
    assert len(lines[1]) == len("#0 user: ") + 600 and lines[1].endswith("...")
    assert lines[-1] == "More may be on page 3."
    assert render_results("room", 3, []) == "No earlier messages match 'room' on page 3."


def test_m16_results_say_when_each_run_of_them_was_compacted() -> None:
    late, early = "2026-12-02T06:40:12.345Z", "2026-11-30T22:05:59.999Z"
    entries = [
        {"position": 9, "message": _human("room 9"), "compacted_at": late},
        {"position": 8, "message": _human("room 8"), "compacted_at": late},
        {"position": 3, "message": _human("room 3"), "compacted_at": early},
        {"position": 1, "message": _human("room 1")},  # archived before M16: no stamp
    ]
    assert render_results("room", 1, entries).splitlines()[1:] == [
        "[compacted 2026-12-02 06:40 UTC]",
        "#9 user: room 9",
        "#8 user: room 8",
        "[compacted 2026-11-30 22:05 UTC]",
        "#3 user: room 3",
        "[compacted at a time not recorded]",
        "#1 user: room 1",
    ]


def test_m9_results_show_tool_calls() -> None:
    from langchain_core.messages import AIMessage, message_to_dict

    call = AIMessage("", tool_calls=[{"name": "book", "args": {"room": 7}, "id": "c1"}])
    entry = {"position": 4, "message": message_to_dict(call)}
    assert render_results("book", 1, [entry]).splitlines()[1] == (
        '#4 assistant: [called book({"room": 7})]'
    )


def _human(text: str) -> dict[str, Any]:
    from langchain_core.messages import HumanMessage, message_to_dict

    return message_to_dict(HumanMessage(text))
