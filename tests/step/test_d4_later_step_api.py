"""D4: PicoFlow's later step API: `get_conversation`, `direct_to`, the step model helpers,
`get_flow_engine()`, and the navigation origin of the framework's openers.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from support.decision_flows import support_engine

from picoflow import (
    Conversation,
    Flow,
    FlowDefinitionError,
    FlowEngine,
    LlmCallPolicy,
    ModelSpec,
    Step,
    direct_to,
    go,
    tool,
)
from picoflow._internal.conversation import conversation_in
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider, tool_call

OPENER = HumanMessage("Continue.", additional_kwargs={"origin": "navigation"})


def test_d4_get_conversation_is_the_newest_request_and_earlier_ones_without_openers() -> None:
    history = [SystemMessage("")] + [
        m for n in range(1, 7) for m in (HumanMessage(f"ask {n}"), AIMessage(f"answer {n}"), OPENER)
    ]
    assert conversation_in(history) == Conversation("ask 6", ["ask 2", "ask 3", "ask 4", "ask 5"])
    assert conversation_in(history, 1) == Conversation("ask 6", ["ask 5"])
    assert conversation_in(history, 0) == Conversation("ask 6", [])
    assert conversation_in([SystemMessage(""), OPENER]) == Conversation("", [])


def test_d4_get_conversation_rejects_a_bad_count_and_a_bad_namespace() -> None:
    with pytest.raises(ValueError) as negative:
        conversation_in([], -1)
    assert str(negative.value) == "max_prior_requests must be 0 or more, got -1."
    with pytest.raises(ValueError) as odd:
        conversation_in([], 2.5)  # type: ignore[arg-type]
    assert str(odd.value) == "max_prior_requests must be a whole number of 0 or more, got 2.5."
    with pytest.raises(TypeError) as bad:
        Flow().get_conversation(3)  # type: ignore[arg-type]
    assert str(bad.value) == "get_conversation() needs a namespace name, got 3."
    assert Flow().get_conversation("unused") == Conversation("", [])


class Greet(Step):
    """Moves on with `direct_to` when the guest gives a name; otherwise its model answers."""

    def get_prompt(self) -> str:
        return "Greet."

    @tool
    def named(self, name: str) -> Any:
        """The guest said their name."""
        return direct_to(Desk, f"Thank you, {name}. What can the desk do for you?")


class Desk(Step):
    def get_prompt(self) -> str:
        return "Help at the desk."

    def on_enter(self) -> None:
        self.save_state({"entered": self.flow.get_conversation("Greet").request})


def _engine(flow: type[Flow]) -> FlowEngine:
    return FlowEngine([flow], store=MemoryStore())


async def test_d4_direct_to_moves_and_answers_verbatim_without_a_model_call() -> None:
    model = ScriptedChatModel(script=[tool_call("named", {"name": "Ada"}), "The desk speaks."])
    body = {
        "config_model": lambda self: model,
        "define_steps": lambda self: [Greet(self), Desk(self)],
    }
    flow = type("DeskFlow", (Flow,), body)
    engine = _engine(flow)
    first = await engine.run("DeskFlow", "I am Ada")
    assert (first.step, first.message) == ("Desk", "Thank you, Ada. What can the desk do for you?")
    assert len(model.requests) == 1  # the reply is the text, not a model call of Desk
    doc = await engine.get_session(first.session_id)
    assert doc["steps"]["Desk"]["state"]["entered"] == "I am Ada"
    desk = [m["data"]["content"] for m in doc["memory"]["Desk"]["messages"][1:]]
    assert desk == ["Thank you, Ada. What can the desk do for you?"]
    second = await engine.run("DeskFlow", "a towel", session_id=first.session_id)
    assert (second.step, second.message) == ("Desk", "The desk speaks.")  # Desk takes it


def test_d4_direct_to_needs_the_reply_as_text() -> None:
    with pytest.raises(TypeError) as bad:
        direct_to(Desk, None)  # type: ignore[arg-type]
    assert str(bad.value) == "direct_to() needs the reply text as a str, got NoneType."
    assert direct_to("Desk", "hi").kind == go("Desk").kind == "go"


class ModelFlow(Flow):
    def config_model(self) -> Any:
        return ModelSpec("openai", "gpt-4o", {"temperature": 0.1, "top_p": 0.9}, timeout=60)

    def define_steps(self) -> list[Step]:
        return [
            Greet(self),
            Desk(self).use_model(ModelSpec("openai", "gpt-4o", {"temperature": 0.5})),
            EndLike(self).use_model(ModelSpec("anthropic", "claude-sonnet-4-5", retry_attempts=1)),
        ]


class EndLike(Step):
    pass


def test_d4_step_model_helpers_read_the_selection_in_force() -> None:
    flow = ModelFlow()
    greet, desk, other = (flow.get_step(s) for s in (Greet, Desk, EndLike))
    assert greet.get_model_selection() == flow.config_model()
    assert desk.get_model_selection() == ModelSpec(
        "openai", "gpt-4o", {"temperature": 0.5, "top_p": 0.9}, timeout=60
    )  # the same model as the flow's: params merge, the timeout is inherited
    assert other.get_model_selection() == ModelSpec(
        "anthropic", "claude-sonnet-4-5", retry_attempts=1
    )
    assert [s.get_model() for s in (greet, desk, other)] == [
        "gpt-4o",
        "gpt-4o",
        "claude-sonnet-4-5",
    ]
    assert desk.get_llm_call_policy() == LlmCallPolicy(timeout=60, retry_attempts=3)
    assert other.get_llm_call_policy().max_attempts == 2
    bare = type("Bare", (Flow,), {"define_steps": lambda self: [Greet(self)]})()
    step = bare.get_step(Greet)
    assert (step.get_model(), step.get_llm_call_policy()) == (None, LlmCallPolicy(None, 3))
    scripted = ScriptedChatModel(script=["x"])
    chat = type(
        "Chat",
        (Flow,),
        {"config_model": lambda self: scripted, "define_steps": lambda self: [Greet(self)]},
    )()
    assert chat.get_step(Greet).get_model() == "ScriptedChatModel"


async def test_d4_get_flow_engine_is_the_running_engine_and_raises_outside_a_turn() -> None:
    seen: list[Any] = []

    async def init(self: Flow) -> None:
        seen.append(self.get_flow_engine())

    model = ScriptedChatModel(script=["Hello."])
    body = {
        "config_model": lambda self: model,
        "define_steps": lambda self: [Desk(self)],
        "init": init,
    }
    engine = _engine(type("EngineFlow", (Flow,), body))
    assert (await engine.run("EngineFlow", "hi")).success
    assert seen == [engine]
    with pytest.raises(FlowDefinitionError) as outside:
        Flow().get_flow_engine()
    assert str(outside.value) == (
        "Flow.get_flow_engine() was called outside a turn. Call it from init(), a hook or a "
        "tool while the engine runs the flow."
    )


async def test_d4_the_framework_opener_is_marked_navigation_and_is_no_request() -> None:
    model = ScriptedChatModel(script=[tool_call("go_desk"), "At the desk."])

    class Hall(Step):
        @tool
        def go_desk(self) -> Any:
            """Walk to the desk."""
            return go(Desk)

    body = {
        "config_model": lambda self: model,
        "define_steps": lambda self: [Hall(self), Desk(self)],
    }
    engine = _engine(type("HallFlow", (Flow,), body))
    result = await engine.run("HallFlow", "desk please")
    doc = await engine.get_session(result.session_id)
    opener = doc["memory"]["Desk"]["messages"][1]["data"]
    assert (opener["content"], opener["additional_kwargs"]) == (
        "Continue.",
        {"origin": "navigation"},
    )
    typed = conversation_in([SystemMessage(""), HumanMessage("Continue.")])
    assert typed.request == "Continue."  # the same words typed by the user are a request


async def test_d4_a_decision_step_hears_a_typed_continue_but_not_the_framework_opener() -> None:
    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.0}] * 2)
    engine = support_engine(provider)
    opened = await engine.run("SupportFlow", "")  # a new session: the step gets the opener
    await engine.run("SupportFlow", "Continue.", session_id=opened.session_id)
    states = [request.state for request in provider.requests]
    assert [(s["request"], s["prior_requests"]) for s in states] == [("", []), ("Continue.", [])]
