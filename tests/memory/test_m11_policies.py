"""M11: memory policies — summarise, sliding/turn/token windows and reset — on every store."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from support.vkit import STORES, make_store

from picoflow import (
    Flow,
    FlowDefinitionError,
    FlowEngine,
    Step,
    reset,
    sliding_window,
    stay,
    summarise,
    token_window,
    tool,
    turn_window,
)
from picoflow._housekeeping.windows import window_cut
from picoflow.policies import MemoryPolicy
from picoflow.testing import ScriptedChatModel, tool_call


class Chat(Step):
    @tool
    def lookup(self, what: str) -> Any:
        """Look something up."""
        return stay(f"found {what}")


def _flow(policy: MemoryPolicy, model: ScriptedChatModel) -> type[Flow]:
    class PolicyFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_policy("chat", policy)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    return PolicyFlow


async def _talk(engine: FlowEngine, lines: list[str]) -> str:
    session = None
    for line in lines:
        result = await engine.run("PolicyFlow", line, session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


def _body(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (m["type"], m["data"]["content"]) for m in doc["memory"]["chat"]["messages"][1:]
    ]


@pytest.mark.parametrize("kind", STORES)
async def test_m11_sliding_window_keeps_the_newest_and_archives_the_rest(
    kind: str, tmp_path: Any
) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: f"echo {messages[-1].text}")
    store = make_store(kind, tmp_path)
    engine = FlowEngine([_flow(sliding_window(6, keep=2), model)], store=store)
    session = await _talk(engine, [f"line {i}" for i in range(1, 6)])
    doc = await engine.get_session(session)
    assert doc is not None
    body = _body(doc)
    assert len(body) <= 6
    assert body[-1] == ("ai", "echo line 5")
    # what left the history is in the archive, searchable (M9)
    found = await store.search_archive(session, "chat", "line 1")
    assert [entry["message"]["data"]["content"] for entry in found] == ["echo line 1", "line 1"]
    assert doc["memory"]["chat"]["archived"] >= 4
    # the model saw a bounded request every turn, without any summary call
    assert max(len(r.messages) for r in model.requests) <= 1 + 6 + 1
    assert all(r.metadata.get("picoflow_purpose") == "reply" for r in model.requests)


@pytest.mark.parametrize("kind", STORES)
async def test_m11_turn_window_keeps_whole_user_turns(kind: str, tmp_path: Any) -> None:
    replies = iter(
        [tool_call("lookup", what="a"), "A.", "B.", tool_call("lookup", what="c"), "C.", "D."]
    )
    model = ScriptedChatModel(policy=lambda messages, tools: next(replies))
    flow = _flow(turn_window(3, keep_turns=2), model)
    engine = FlowEngine([flow], store=make_store(kind, tmp_path))
    session = await _talk(engine, ["first", "second", "third", "fourth"])
    doc = await engine.get_session(session)
    assert doc is not None
    body = _body(doc)
    assert body[0][0] == "human"  # the history that stays opens with the user's message
    humans = [text for kind_, text in body if kind_ == "human"]
    assert humans[-1] == "fourth" and len(humans) <= 3


def test_m11_window_cuts_never_split_a_tool_call_from_its_result() -> None:
    call = AIMessage("", tool_calls=[{"name": "lookup", "args": {}, "id": "c1"}])
    history = [
        SystemMessage(""),
        HumanMessage("hi"),
        AIMessage("hello"),
        HumanMessage("look"),
        call,
        ToolMessage("found", tool_call_id="c1"),
        AIMessage("done"),
    ]
    # keeping 2 would start at the tool result: the cut moves back to the call
    assert window_cut(sliding_window(4, keep=2), history, limit=len(history)) == 4
    # only stored messages may go
    assert window_cut(sliding_window(4, keep=2), history, limit=2) == 2
    # a reset keeps the latest user turn only
    assert window_cut(reset(4), history, limit=len(history)) == 3
    assert window_cut(reset(10), history, limit=len(history)) == 1


def test_m11_token_window_keeps_the_newest_turns_within_the_budget() -> None:
    history = [SystemMessage("")]
    for i in range(6):
        history += [HumanMessage(f"question {i} " + "word " * 20), AIMessage("answer " * 20)]
    policy = token_window(100, keep_tokens=60)
    cut = window_cut(policy, history, limit=len(history))
    assert isinstance(history[cut], HumanMessage)
    from langchain_core.messages.utils import count_tokens_approximately

    assert count_tokens_approximately(history[cut:]) <= 60 or cut == len(history) - 2
    assert window_cut(token_window(100_000), history, limit=len(history)) == 1


@pytest.mark.parametrize(
    ("build", "words"),
    [
        (lambda: sliding_window(5, keep=5), "keep (5) must be below max_messages (5)"),
        (lambda: sliding_window(1), "max_messages must be a whole number of at least 2"),
        (lambda: turn_window(3, keep_turns=4), "keep_turns (4) must be below max_turns (3)"),
        (lambda: token_window(100, keep_tokens=100), "keep_tokens (100) must be below"),
        (lambda: token_window(8), "max_tokens must be a whole number of at least 16"),
        (lambda: reset(True), "max_messages must be a whole number"),
        (lambda: summarise(16, 4, overlap=4), "overlap (4) must be below recent_messages (4)"),
        (lambda: summarise(16, 4, overlap=-1), "overlap must be a whole number of at least 0"),
        (lambda: summarise(rebuild_after=1), "rebuild_after must be a whole number of at least 2"),
        (lambda: summarise(4, 2), "min_messages must be an integer of at least 8"),
    ],
)
def test_m11_policies_are_validated_where_they_are_built(build: Any, words: str) -> None:
    with pytest.raises(ValueError) as caught:
        build()
    assert words in str(caught.value)


def test_m11_set_policy_refuses_what_is_not_a_policy_and_unused_namespaces() -> None:
    model = ScriptedChatModel(script=["hi"])

    class Bad(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_policy("chat", 5)  # type: ignore[arg-type]

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    with pytest.raises(FlowDefinitionError, match="set_policy\\(\\) takes a memory policy"):
        FlowEngine([Bad])

    class Unused(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_policy("elsewhere", sliding_window(10))

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    with pytest.raises(FlowDefinitionError, match="sets a memory policy for namespace 'elsewhere'"):
        FlowEngine([Unused])


def test_m11_a_window_needs_no_summary_model_and_enable_summary_is_summarise() -> None:
    model = ScriptedChatModel(script=["hi"])
    FlowEngine([_flow(sliding_window(10), model)])  # no set_summary_model: fine

    class Summarised(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().enable_summary("chat")

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    memory = Summarised().get_memory()
    assert memory.policy("chat") == summarise()
    assert memory.enabled_namespaces == ["chat"]
    memory.set_policy("chat", turn_window(4))
    assert memory.enabled_namespaces == []


@pytest.mark.parametrize("kind", STORES)
async def test_m11_summarise_with_its_own_thresholds_and_overlap(kind: str, tmp_path: Any) -> None:
    model = ScriptedChatModel(
        script={"summary": ["They counted to four."], "*": [f"ok {i}" for i in range(8)]}
    )

    class Summarised(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(model)
            memory.set_policy("chat", summarise(8, 4, overlap=2))

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    engine = FlowEngine([Summarised], store=make_store(kind, tmp_path))
    session = None
    for line in ["one", "two", "three", "four", "five"]:
        session = (await engine.run("Summarised", line, session_id=session)).session_id
    summaries = [r for r in model.requests if r.metadata.get("picoflow_purpose") == "summary"]
    assert summaries
    body = summaries[0].messages[-1].text
    assert "For context only" in body  # the overlap: shown, marked as staying
    doc = await engine.get_session(session)  # type: ignore[arg-type]
    assert doc is not None and doc["memory"]["chat"]["summary"] == "They counted to four."
