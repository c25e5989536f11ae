"""M5 properties: no history and no request ever splits a tool call from its results.

Two levels. `find_cut_point` on random histories: the cut is the latest safe one at or before
`len - recent`. Then the real engine on random conversations (plain turns, single and parallel
tool calls, `direct` replies, erased namespaces, failing summaries) with random thresholds:
every stored history and every model request pairs each AI tool-call message with exactly its
results, right after it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from support.flows import Agent

from picoflow import Flow, FlowEngine, Step
from picoflow._housekeeping.history import find_cut_point
from picoflow.memory import DEFAULT_SUMMARY_PROMPT
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

TURN_KINDS = ["plain", "single", "parallel", "direct", "parallel_direct", "erase"]


def pairing_problems(messages: list[BaseMessage]) -> list[str]:
    """Every AI tool-call message is followed at once by one result per call, and nothing else
    is a tool result."""
    problems: list[str] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        if isinstance(message, ToolMessage):
            problems.append(f"result {message.tool_call_id} at {index} without its call")
        calls = getattr(message, "tool_calls", None) or []
        if isinstance(message, AIMessage) and calls:
            wanted = {call["id"] for call in calls}
            results = messages[index + 1 : index + 1 + len(calls)]
            got = {m.tool_call_id for m in results if isinstance(m, ToolMessage)}
            if got != wanted:
                problems.append(f"call at {index} answered by {got}, wants {wanted}")
            index += len(results)
        index += 1
    return problems


# -- the cut point on random histories -----------------------------------------------------------


@st.composite
def histories(draw: Any) -> list[BaseMessage]:
    messages: list[BaseMessage] = [SystemMessage("")]
    for number, kind in enumerate(draw(st.lists(st.sampled_from(TURN_KINDS[:3]), max_size=14))):
        messages.append(HumanMessage(f"h{number}"))
        width = {"plain": 0, "single": 1, "parallel": draw(st.integers(2, 4))}[kind]
        if width:
            ids = [f"c{number}_{k}" for k in range(width)]
            calls = [{"name": "t", "args": {}, "id": i} for i in ids]
            messages.append(AIMessage("", tool_calls=calls))
            messages += [ToolMessage("ok", tool_call_id=i) for i in draw(st.permutations(ids))]
        messages.append(AIMessage(f"a{number}"))
    return messages


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 20))
def test_m5_cut_is_the_latest_cut_that_splits_no_tool_exchange(
    history: list[BaseMessage], recent: int
) -> None:
    cut = find_cut_point(history, recent)
    start = len(history) - recent
    assert cut <= max(start, 1)
    if cut > 1:
        assert pairing_problems(history[1:cut]) == []
        assert pairing_problems([history[0], *history[cut:]]) == []
    for later in range(max(cut + 1, 2), start + 1):  # every later cut would split something
        kept = [history[0], *history[later:]]
        assert pairing_problems(history[1:later]) or pairing_problems(kept)


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 20))
def test_m5_whole_turns_cut_is_the_latest_user_turn_start_and_splits_no_tool_exchange(
    history: list[BaseMessage], recent: int
) -> None:
    """M5 + whole_turns: the cut splits no tool exchange, and what stays opens with the user's
    message unless the history has no user message after index 1 at all; it is the latest
    such cut at or before `len - recent`, or 1 (evict nothing) if there is none."""
    cut = find_cut_point(history, recent, turns=True)
    start = len(history) - recent
    no_later_users = not any(isinstance(m, HumanMessage) for m in history[2:])
    assert cut <= max(start, 1)
    if cut > 1:
        assert pairing_problems(history[1:cut]) == []
        assert pairing_problems([history[0], *history[cut:]]) == []
        assert isinstance(history[cut], HumanMessage) or no_later_users
    for later in range(max(cut + 1, 2), start + 1):  # every later cut breaks one of the rules
        kept = [history[0], *history[later:]]
        opens_well = isinstance(history[later], HumanMessage) or no_later_users
        assert pairing_problems(history[1:later]) or pairing_problems(kept) or not opens_well


# -- the engine on random conversations ----------------------------------------------------------


def replies_for(kind: str, number: int) -> list[Any]:
    """What the model says in one turn of this kind."""
    say = f"a{number}"
    if kind == "plain":
        return [say]
    if kind == "single":
        return [tool_call("lookup", query=f"q{number}"), say]
    if kind == "parallel":
        return [tool_calls(("lookup", {"query": "x"}), ("lookup", {"query": "y"})), say]
    if kind == "direct":
        return [tool_call("finish", text=say)]
    if kind == "parallel_direct":
        return [tool_calls(("lookup", {"query": "z"}), ("finish", {"text": say}))]
    return [tool_call("forget"), say]


async def converse(
    kinds: list[str], min_messages: int, recent: int, fail: list[bool], whole_turns: bool
) -> None:
    queue: list[Any] = []
    summaries = iter(fail * 50)

    def policy(messages: list[BaseMessage], tools: list[str]) -> Any:
        if messages[0].content == DEFAULT_SUMMARY_PROMPT:
            if next(summaries, False):
                raise RuntimeError("summariser down")
            return "summary"
        return queue.pop(0)

    model = ScriptedChatModel(policy=policy)

    class AgentFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_summary_config(min_messages, recent, whole_turns=whole_turns)
            memory.enable_summary("agent")

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Agent(self).use_memory("agent")]

    engine = FlowEngine(flows=[AgentFlow], store=MemoryStore())
    session_id = None
    for number, kind in enumerate(kinds):
        queue.extend(replies_for(kind, number))
        result = await engine.run("AgentFlow", f"h{number}", session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
        doc = await engine.get_session(session_id)
        stored = messages_from_dict(doc["memory"]["agent"]["messages"])
        assert pairing_problems(stored) == [], (kind, [m.type for m in stored])
        assert isinstance(stored[0], SystemMessage)
    for request in model.requests:
        assert pairing_problems(request.messages) == []
        chat = [m for m in request.messages if not isinstance(m, SystemMessage)]
        if whole_turns and "erase" not in kinds:  # an erase inside a tool is T4's business
            assert isinstance(chat[0], HumanMessage), [m.type for m in request.messages]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(TURN_KINDS), min_size=1, max_size=25),
    st.integers(8, 20).flatmap(lambda m: st.tuples(st.just(m), st.integers(1, m - 2))),
    st.lists(st.booleans(), min_size=1, max_size=4),
    st.booleans(),
)
def test_m5_no_stored_history_or_request_splits_a_tool_exchange(
    kinds: list[str], thresholds: tuple[int, int], fail: list[bool], whole_turns: bool
) -> None:
    """M5 (and, with whole_turns, every request opens with the user's message)."""
    asyncio.run(converse(kinds, *thresholds, fail, whole_turns))
