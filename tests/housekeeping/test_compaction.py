"""M3-M8, M10 and the dropped-fact check: compaction through the real engine, plus the cut point.

Archive and recall (M9) are in test_recall.py, background mode in test_compaction_background.py,
the random-history properties in test_compaction_properties.py.
"""

from __future__ import annotations

import asyncio
import doctest
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import picoflow._housekeeping.facts
import picoflow._housekeeping.history
import picoflow.memory
from picoflow import Flow, FlowEngine, Step, tool
from picoflow._housekeeping.history import find_cut_point
from picoflow.memory import DEFAULT_SUMMARY_PROMPT, Memory
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

SKIP_TAIL = (
    " (namespace 'chat'). The history was kept in full; compaction is tried again at the end "
    "of the next turn."
)


class Chat(Step):
    def get_prompt(self) -> str:
        return "Help the user plan a trip."

    @tool
    def note(self, text: str) -> str:
        """Write down something the user said."""
        return f"noted {text}"

    @tool
    def remember(self, booking: str) -> str:
        """Keep the booking reference in state."""
        self.save_state({"booking": booking})
        return "kept"


class Other(Step):
    pass


def chat_flow(model: ScriptedChatModel, **config: Any) -> type[Flow]:
    """A one-step flow whose namespace 'chat' is compacted with `config` (default 8/4)."""
    config = {"min_messages": 8, "recent_messages": 4, **config}

    class ChatFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_summary_config(**config).enable_summary("chat")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat"), Other(self)]

    return ChatFlow


def engine_with(model: ScriptedChatModel, **config: Any) -> FlowEngine:
    return FlowEngine(flows=[chat_flow(model, **config)], store=MemoryStore())


async def talk(
    engine: FlowEngine, turns: int, session_id: str | None = None, start: int = 1
) -> list[Any]:
    """Run turns "m<start>", "m<start + 1>", ...; every one must succeed."""
    results = []
    for number in range(start, start + turns):
        result = await engine.run("ChatFlow", f"m{number}", session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
        results.append(result)
    return results


def texts(doc: dict[str, Any], namespace: str = "chat") -> list[str]:
    return [m["data"]["content"] for m in doc["memory"][namespace]["messages"][1:]]


def replies(count: int) -> list[str]:
    return [f"r{n}" for n in range(1, count + 1)]


def summary_requests(model: ScriptedChatModel) -> list[Any]:
    return [r for r in model.requests if r.metadata.get("picoflow_purpose") == "summary"]


# -- M5: the cut point ---------------------------------------------------------------------------


def call(*ids: str) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": "t", "args": {}, "id": i} for i in ids])


def result(call_id: str) -> ToolMessage:
    return ToolMessage("ok", tool_call_id=call_id)


def test_m5_docstring_examples_hold() -> None:
    for module in (
        picoflow._housekeeping.history,
        picoflow._housekeeping.facts,
        picoflow.memory,
    ):
        outcome = doctest.testmod(module)
        assert outcome.failed == 0 and outcome.attempted > 0, module.__name__


def test_m5_cut_starts_at_len_minus_recent_without_tool_calls() -> None:
    history = [SystemMessage("")] + [HumanMessage(str(n)) for n in range(9)]
    assert find_cut_point(history, 4) == 6


def test_m5_cut_moves_before_a_call_whose_result_would_stay() -> None:
    history = [SystemMessage(""), HumanMessage("a"), call("c1"), result("c1"), AIMessage("b")]
    assert find_cut_point(history, 2) == 2  # 3 would keep the result without its call


def test_m5_parallel_results_keep_their_call_even_when_only_the_last_crosses() -> None:
    history = [
        SystemMessage(""),
        HumanMessage("a"),
        call("c1", "c2", "c3"),
        result("c1"),
        result("c2"),
        result("c3"),
        AIMessage("done"),
    ]
    assert find_cut_point(history, 2) == 2
    assert find_cut_point(history, 1) == 6


def test_m5_walk_continues_across_adjacent_tool_exchanges() -> None:
    history = [
        SystemMessage(""),
        HumanMessage("a"),
        call("c1"),
        result("c1"),
        call("c2"),
        result("c2"),
        AIMessage("b"),
    ]
    assert find_cut_point(history, 2) == 4  # 5 splits c2; 4 splits nothing
    assert find_cut_point(history, 3, limit=3) == 2  # the limit cuts deeper, into c1


def test_m5_whole_turns_keeps_a_history_that_opens_with_a_user_message() -> None:
    """M5 + whole_turns: Anthropic and Gemini refuse a conversation whose first message is the
    assistant's, so the cut moves back to the start of a user turn."""
    history = [SystemMessage(""), HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    history += [AIMessage("d"), AIMessage("e")]  # e.g. a forwarded reply after the answer
    assert find_cut_point(history, 1) == 5  # M5 alone
    assert find_cut_point(history, 1, turns=True) == 3
    assert find_cut_point(history, 3, turns=True) == 3
    assert find_cut_point(history, 4, turns=True) == 1  # 2 opens with "b"; the turn at 3 waits


def test_m5_whole_turns_move_before_a_call_too() -> None:
    history = [SystemMessage(""), HumanMessage("a"), AIMessage("b"), HumanMessage("c")]
    history += [call("c1", "c2"), result("c1"), result("c2"), AIMessage("d")]
    assert find_cut_point(history, 2) == 4  # M5: 6 splits c2 from its call
    assert find_cut_point(history, 2, turns=True) == 3  # 4 would open with the call


def test_m5_whole_turns_wait_for_the_next_user_turn_inside_a_long_one() -> None:
    history = [SystemMessage(""), HumanMessage("a"), call("c1"), result("c1")]
    history += [call("c2"), result("c2"), AIMessage("b"), HumanMessage("next"), AIMessage("c")]
    assert find_cut_point(history, 3, turns=True) == 1  # 6 is inside turn "a"; "next" is at 7
    assert find_cut_point(history, 2, turns=True) == 7


def test_m5_whole_turns_still_compact_a_history_without_later_user_turns() -> None:
    """A step that only works through tools (entered by go() with no message) never gets
    another user message; waiting for one would let its history grow without bound."""
    history = [SystemMessage(""), HumanMessage("Continue.")]
    for n in range(4):
        history += [call(f"c{n}"), result(f"c{n}"), AIMessage(f"done {n}")]
    assert find_cut_point(history, 4, turns=True) == 10  # the tool-safe cut stands
    assert find_cut_point(history, 4) == 10


def test_m5_cut_of_one_or_less_means_nothing_to_evict() -> None:
    assert find_cut_point([SystemMessage(""), call("c1"), result("c1")], 1) == 1
    assert find_cut_point([SystemMessage(""), HumanMessage("a")], 4) <= 1


# -- M3: configuration -----------------------------------------------------------------------------


def test_m3_summary_prompt_default_and_override() -> None:
    memory = Memory()
    assert memory.summary_config.prompt == DEFAULT_SUMMARY_PROMPT
    assert memory.summary_config.timeout == 60.0
    for phrase in ("decision", "constraint", "identifier", "number, date", "open question"):
        assert phrase in DEFAULT_SUMMARY_PROMPT
    assert "Invent nothing" in DEFAULT_SUMMARY_PROMPT
    memory.set_summary_config(min_messages=8, recent_messages=4, prompt="Keep the budget.")
    assert memory.summary_config.prompt == "Keep the budget."


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds > 0, got 0."),
        ({"timeout": "5"}, "timeout must be a number of seconds > 0, got '5'."),
        (
            {"prompt": "  "},
            "prompt must be a non-empty string (the summariser's instruction), got '  '. Omit "
            "it to use DEFAULT_SUMMARY_PROMPT.",
        ),
    ],
)
def test_m3_invalid_timeout_and_prompt_raise_at_the_call(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Memory().set_summary_config(**kwargs)
    assert str(info.value) == message


# -- M4, M6, M7: compaction through the engine -----------------------------------------------------


async def test_m4_compacts_at_the_end_of_the_turn_that_reaches_min_messages() -> None:
    model = ScriptedChatModel(script={"Chat": replies(6), "summary": ["S1", "S2"]})
    engine = engine_with(model)
    results = await talk(engine, 3)
    doc = await engine.get_session(results[0].session_id)
    assert len(doc["memory"]["chat"]["messages"]) == 7 and summary_requests(model) == []
    await talk(engine, 1, results[0].session_id, start=4)  # 9 messages >= 8: cut 9 - 4 = 5
    doc = await engine.get_session(results[0].session_id)
    chat = doc["memory"]["chat"]
    assert texts(doc) == ["m3", "r3", "m4", "r4"]
    assert (chat["summary"], chat["summary_generation"], chat["archived"]) == ("S1", 1, 4)
    assert doc["revision"] == 3


async def test_m4_below_min_messages_nothing_happens() -> None:
    model = ScriptedChatModel(script={"Chat": replies(3)})
    engine = engine_with(model)
    results = await talk(engine, 3)
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["chat"]["summary"] is None and summary_requests(model) == []


async def test_m4_token_trigger_compacts_a_short_but_long_winded_history() -> None:
    words = "word " * 400
    model = ScriptedChatModel(script={"Chat": [words, words, "r3"], "summary": ["S1", "S2"]})
    engine = engine_with(model, min_messages=40, recent_messages=2, max_tokens=500)
    results = await talk(engine, 3)
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["chat"]["summary"] == "S2"  # turns 2 and 3 were over 500 tokens
    assert texts(doc) == ["m3", "r3"]


async def test_m4_only_enabled_namespaces_are_compacted() -> None:
    model = ScriptedChatModel(script={"Other": replies(6)})

    class OnlyOther(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_summary_config(min_messages=8, recent_messages=4).enable_summary("chat")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Other(self), Chat(self).use_memory("chat")]

    engine = FlowEngine(flows=[OnlyOther], store=MemoryStore())
    first = await engine.run("OnlyOther", "m1")
    for number in range(2, 7):
        await engine.run("OnlyOther", f"m{number}", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert len(doc["memory"]["Other"]["messages"]) == 13 and summary_requests(model) == []


async def test_m4_messages_written_in_this_turn_wait_for_the_next_turn() -> None:
    rounds = [tool_call("note", text=f"n{n}") for n in range(5)] + ["done"]
    model = ScriptedChatModel(script={"Chat": [*rounds, "r2"], "summary": ["S1"]})
    engine = engine_with(model)
    first = await engine.run("ChatFlow", "m1")  # 1 + 5 * 2 + 1 = 12 new messages
    doc = await engine.get_session(first.session_id)
    assert len(doc["memory"]["chat"]["messages"]) == 13 and summary_requests(model) == []
    await engine.run("ChatFlow", "m2", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["summary"] == "S1"
    # 15 - 4 = 11 would split the 5th call (10) from its result (11): the cut moves to 10.
    kinds = [m["type"] for m in doc["memory"]["chat"]["messages"]]
    assert kinds == ["system", "ai", "tool", "ai", "human", "ai"]


async def test_m4_m5_whole_turns_evicts_a_long_turn_whole_at_a_later_turn_end() -> None:
    """M4, M5 + whole_turns: turn 1 is one long tool loop (12 messages). At the end of turn 2,
    15 - 4 = 11 is inside it and a later user turn (m2) exists, so nothing is evicted yet. At
    the end of turn 3 the cut lands on m2: the whole of turn 1 goes, and the history still
    opens with the user."""
    rounds = [tool_call("note", text=f"n{n}") for n in range(5)] + ["done"]
    model = ScriptedChatModel(script={"Chat": [*rounds, "r2", "r3"], "summary": ["S1"]})
    engine = engine_with(model, whole_turns=True)
    first = await engine.run("ChatFlow", "m1")
    await engine.run("ChatFlow", "m2", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["summary"] is None and summary_requests(model) == []
    await engine.run("ChatFlow", "m3", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["summary"] == "S1"
    assert texts(doc) == ["m2", "r2", "m3", "r3"]
    assert doc["memory"]["chat"]["archived"] == 12


async def test_m6_summariser_gets_the_prompt_previous_summary_and_evicted_messages() -> None:
    model = ScriptedChatModel(script={"Chat": replies(6), "summary": ["S1", "S2"]})
    engine = engine_with(model)
    await talk(engine, 6)
    first, second = summary_requests(model)
    assert [m.type for m in first.messages] == ["system", "human"]
    assert first.messages[0].content == DEFAULT_SUMMARY_PROMPT
    assert first.messages[1].content == (
        "Previous summary:\n(none yet)\n\nMessages to merge into it, oldest first:\n"
        "User: m1\nAssistant: r1\nUser: m2\nAssistant: r2"
    )
    assert second.messages[1].content == (
        "Previous summary:\nS1\n\nMessages to merge into it, oldest first:\n"
        "User: m3\nAssistant: r3\nUser: m4\nAssistant: r4"
    )
    assert first.tool_names == []


async def test_m6_transcript_shows_tool_calls_and_results_and_the_custom_prompt() -> None:
    script = [tool_call("note", text="late check-in"), "Noted.", "r2", "r3", "r4"]
    model = ScriptedChatModel(script={"Chat": script, "summary": ["S1"]})
    engine = engine_with(model, prompt="Keep only what matters for the booking.")
    await talk(engine, 4)
    (request,) = summary_requests(model)
    assert request.messages[0].content == "Keep only what matters for the booking."
    assert request.messages[1].content.endswith(
        "User: m1\n"
        'Assistant: [called note({"text": "late check-in"})]\n'
        "Tool result (note): noted late check-in\n"
        "Assistant: Noted."
    )


async def test_m6_one_cumulative_summary_per_namespace_with_a_generation_counter() -> None:
    model = ScriptedChatModel(script={"Chat": replies(8), "summary": ["S1", "S2", "S3"]})
    engine = engine_with(model)
    results = await talk(engine, 8)
    doc = await engine.get_session(results[0].session_id)
    chat = doc["memory"]["chat"]
    assert (chat["summary"], chat["summary_generation"], chat["archived"]) == ("S3", 3, 12)
    assert texts(doc) == ["m7", "r7", "m8", "r8"]


async def test_m7_next_request_carries_the_memory_block_and_the_short_history() -> None:
    model = ScriptedChatModel(script={"Chat": replies(5), "summary": ["User likes rain."]})
    engine = engine_with(model)
    await talk(engine, 5)
    last = model.requests[-1]
    assert [(m.type, m.content) for m in last.messages] == [
        ("system", "Help the user plan a trip."),
        ("system", "Conversation memory for this step:\nUser likes rain."),
        ("human", "m3"),
        ("ai", "r3"),
        ("human", "m4"),
        ("ai", "r4"),
        ("human", "m5"),
    ]


async def test_m7_preview_is_exactly_the_next_request() -> None:
    model = ScriptedChatModel(script={"Chat": replies(5), "summary": ["User likes rain."]})
    engine = engine_with(model)
    results = await talk(engine, 4)
    preview = await engine.preview(results[0].session_id, message="m5")
    await talk(engine, 1, results[0].session_id, start=5)
    sent = model.requests[-1].messages
    assert [(m.type, m.content) for m in preview] == [(m.type, m.content) for m in sent]
    assert await engine.preview("A" * 24) is None
    assert await engine.preview("not an id") is None
    flow = chat_flow(model)()
    assert [m.content for m in flow.preview(Chat)] == ["Help the user plan a trip."]


# -- M8: a failing summariser never fails the turn -------------------------------------------------


async def never_answers(messages: list, tools: list[str]) -> str:
    await asyncio.Event().wait()
    return "unreachable"  # pragma: no cover


@pytest.mark.parametrize(
    ("summary", "reason"),
    [
        (RuntimeError("summariser down"), "the summary model raised RuntimeError: summariser down"),
        ("   ", "the summary model returned an empty summary"),
        (
            "I'm sorry, I can't help with that.",
            "the summary model answered instead of summarising "
            "(\"I'm sorry, I can't help with that.\")",
        ),
        ("I cannot summarise this conversation.", "the summary model answered instead of "),
    ],
)
async def test_m8_failures_keep_the_history_and_warn(summary: Any, reason: str) -> None:
    model = ScriptedChatModel(script={"Chat": replies(4), "summary": [summary]})
    engine = engine_with(model)
    results = await talk(engine, 4)
    warning = results[-1].warnings[-1]
    if reason.endswith("of "):
        assert warning.startswith("Memory compaction skipped: " + reason)
    else:
        assert warning == "Memory compaction skipped: " + reason + SKIP_TAIL
    doc = await engine.get_session(results[0].session_id)
    assert len(doc["memory"]["chat"]["messages"]) == 9 and doc["memory"]["chat"]["summary"] is None
    assert doc["warnings"][-1]["message"] == warning
    assert await engine.store.search_archive(results[0].session_id, "chat", "") == []


async def test_m8_timeout_keeps_the_history_and_warns() -> None:
    calls: list[str] = []

    async def policy(messages: list, tools: list[str]) -> str:
        if model.requests[-1].metadata["picoflow_purpose"] == "summary":
            await never_answers(messages, tools)
        calls.append(messages[-1].content)
        return f"re {messages[-1].content}"

    model = ScriptedChatModel(policy=policy)
    engine = engine_with(model, timeout=0.05)
    results = await talk(engine, 4)
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model did not answer within 0.05 s" + SKIP_TAIL
    ]
    doc = await engine.get_session(results[0].session_id)
    assert len(doc["memory"]["chat"]["messages"]) == 9


async def test_m8_the_next_turn_retries_and_succeeds() -> None:
    model = ScriptedChatModel(script={"Chat": replies(5), "summary": [RuntimeError("flaky"), "S1"]})
    engine = engine_with(model)
    results = await talk(engine, 5)
    assert results[-1].warnings == []
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["chat"]["summary"] == "S1" and texts(doc) == ["m4", "r4", "m5", "r5"]
    assert [w["message"][:27] for w in doc["warnings"]] == ["Memory compaction skipped: "]


class BrokenArchive(MemoryStore):
    async def archive(self, session_id: str, namespace: str, entries: list) -> None:
        from picoflow import StoreError

        raise StoreError("archive collection is read-only")


async def test_m8_an_archive_that_cannot_be_written_skips_compaction() -> None:
    model = ScriptedChatModel(script={"Chat": replies(4), "summary": ["S1"]})
    engine = FlowEngine(flows=[chat_flow(model)], store=BrokenArchive())
    results = await talk(engine, 4)
    assert results[-1].warnings == [
        "Memory compaction skipped: the archive could not be written (archive collection is "
        "read-only)" + SKIP_TAIL
    ]
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["chat"]["summary"] is None and len(doc["memory"]["chat"]["messages"]) == 9


# -- dropped facts -------------------------------------------------------------------------------


async def test_m6_dropped_facts_are_warned_about_and_counted() -> None:
    chat = [
        "Noted: 2 rooms.",
        tool_call("remember", booking="BK-4821"),
        "Saved.",
        "r3",
        "r4",
    ]
    summary = "The user wants 2 rooms; the booking is kept in state."
    model = ScriptedChatModel(script={"Chat": chat, "summary": [summary, "Booking saved."]})
    engine = engine_with(model)
    first = await engine.run("ChatFlow", "2 rooms, budget 1,200 EUR, mail ana@example.com")
    for message in ("book it", "m3"):  # the turn of m3 evicts the first three messages
        result = await engine.run("ChatFlow", message, session_id=first.session_id)
    assert result.warnings == [
        "Memory compaction of namespace 'chat': summary dropped: '1,200', 'ana@example.com'. These "
        "values of the evicted messages are neither in the new summary nor in any step's "
        "state; they stay in the archive. Save values the flow relies on with save_state(), "
        "or extend the summary prompt."
    ]
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["dropped_facts"] == 2
    assert doc["memory"]["chat"]["summary"] == summary  # the check warns, it never blocks
    # The next compaction evicts the booking exchange: BK-4821 is in state, nothing is lost,
    # and the session's count carries over.
    result = await engine.run("ChatFlow", "m4", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    assert result.warnings == [] and doc["memory"]["chat"]["summary_generation"] == 2
    assert doc["memory"]["chat"]["dropped_facts"] == 2


async def test_m6_a_faithful_summary_raises_no_warning() -> None:
    summary = "2 rooms, budget 1200 EUR, contact ana@example.com, booking BK-4821."
    answers = ["Two rooms, noted.", "Sure.", "Fine.", "Okay."]
    model = ScriptedChatModel(script={"Chat": answers, "summary": [summary]})
    engine = engine_with(model)
    first = await engine.run("ChatFlow", "2 rooms, 1,200 EUR, ana@example.com, ref BK-4821")
    results = await talk(engine, 3, first.session_id)
    assert results[-1].warnings == []
    doc = await engine.get_session(first.session_id)
    assert doc["memory"]["chat"]["dropped_facts"] == 0


# -- M10: tagged, counted apart, never streamed ----------------------------------------------------


async def test_m10_summary_calls_are_tagged_and_counted_separately() -> None:
    model = ScriptedChatModel(script={"Chat": replies(4), "summary": ["S1"]})
    engine = engine_with(model)
    results = await talk(engine, 4)
    (request,) = summary_requests(model)
    assert request.metadata == {
        "picoflow_session_id": results[0].session_id,
        "picoflow_flow": "ChatFlow",
        "picoflow_step": "Chat",
        "picoflow_namespace": "chat",
        "picoflow_purpose": "summary",
    }
    assert request.tags == [
        "picoflow",
        "picoflow:summary",
        "picoflow:step:Chat",
        "picoflow:namespace:chat",
        "nostream",
    ]
    usage = results[-1].usage
    assert usage["summary"]["calls"] == 1 and usage["summary"]["input_tokens"] > 0
    assert usage["model"]["calls"] == 1
    doc = await engine.get_session(results[0].session_id)
    assert doc["usage"]["summary"] == usage["summary"]
    assert doc["usage"]["model"]["calls"] == 4
    # The namespace keeps its share, so a session's summary cost can be split by namespace.
    assert doc["memory"]["chat"]["summary_usage"] == usage["summary"]


async def test_m10_failed_summary_calls_still_count_for_their_namespace() -> None:
    """M8, M10: a summary that came back unusable cost tokens too; they are attributed."""
    model = ScriptedChatModel(script={"Chat": replies(4), "summary": ["I cannot do that."]})
    engine = engine_with(model)
    results = await talk(engine, 4)
    assert results[-1].warnings[0].startswith("Memory compaction skipped:")
    doc = await engine.get_session(results[0].session_id)
    assert doc["memory"]["chat"]["summary_usage"]["calls"] == 1
    assert doc["memory"]["chat"]["summary_usage"] == doc["usage"]["summary"]


async def test_m10_streaming_shows_compaction_events_but_never_summary_tokens() -> None:
    model = ScriptedChatModel(script={"Chat": replies(4), "summary": ["SECRET SUMMARY"]})
    engine = engine_with(model)
    results = await talk(engine, 3)
    events = [e async for e in engine.stream("ChatFlow", "m4", session_id=results[0].session_id)]
    assert [e.kind for e in events] == ["token", "compaction", "compaction", "done"]
    assert events[1].data == {"namespace": "chat", "outcome": "started"}
    assert events[2].data == {
        "namespace": "chat",
        "outcome": "compacted",
        "evicted": 4,
        "summary_generation": 1,
    }
    assert "SECRET" not in "".join(e.data.get("text", "") for e in events)


async def test_m4_parallel_tool_calls_stay_with_their_results_through_compaction() -> None:
    pair = tool_calls(("note", {"text": "a"}), ("note", {"text": "b"}))
    script = ["r1", pair, "r2", "r3", pair, "r4", "r5"]
    model = ScriptedChatModel(script={"Chat": script, "summary": ["S1", "S2", "S3", "S4"]})
    engine = engine_with(model)
    results = await talk(engine, 5)
    assert all(r.warnings == [] for r in results)
    doc = await engine.get_session(results[0].session_id)
    kinds = [m["type"] for m in doc["memory"]["chat"]["messages"]]
    assert kinds[:2] != ["system", "tool"]
    for request in model.requests:
        ids = {c["id"] for m in request.messages if isinstance(m, AIMessage) for c in m.tool_calls}
        answered = {m.tool_call_id for m in request.messages if isinstance(m, ToolMessage)}
        assert ids == answered
