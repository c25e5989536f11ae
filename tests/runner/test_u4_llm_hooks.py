"""U4: `should_retry_llm_error`, `on_llm_blocked`, `on_llm_error` on a step, then the flow's.

Each hook is asked on the step first; None hands the question to the flow's hook of the same
name, and None there to the framework default (retry transient errors; a refused reply stands
with a warning; the turn fails).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from picoflow import Flow, FlowEngine, Step, finish
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, transient_error


class ChatStep(Step):
    def get_prompt(self) -> str:
        return "Chat."


async def _no_wait(seconds: float) -> None:
    return None


def engine_for(flow_class: type[Flow]) -> FlowEngine:
    return FlowEngine([flow_class], store=MemoryStore(), sleep=_no_wait)


def flow_with(model: ScriptedChatModel, step: type[Step], **hooks: Any) -> type[Flow]:
    body = {"config_model": lambda self: model, "define_steps": lambda self: [step(self)], **hooks}
    return type("HookFlow", (Flow,), body)


def refused(reason: str = "content_filter") -> AIMessage:
    return AIMessage("", response_metadata={"finish_reason": reason})


async def test_u4_should_retry_llm_error_on_the_step_decides_first() -> None:
    class NoRetryStep(ChatStep):
        def should_retry_llm_error(self, error: BaseException) -> bool | None:
            return False  # even a transient error fails at once

    model = ScriptedChatModel(script=[transient_error("rate_limit"), "never reached"])
    result = await engine_for(flow_with(model, NoRetryStep)).run("HookFlow", "hi")
    assert (result.success, len(model.requests)) == (False, 1)


async def test_u4_should_retry_llm_error_falls_back_to_the_flow() -> None:
    seen: list[str] = []

    def flow_rule(self: Flow, step: Step, error: BaseException) -> bool | None:
        seen.append(step.name)
        return isinstance(error, ValueError) or None  # ValueError: retry; others: default

    class Boom(ValueError):
        status_code = 400  # a provider's refusal: not transient by the policy

    model = ScriptedChatModel(script=[Boom("bad request"), "second try"])
    flow = flow_with(model, ChatStep, should_retry_llm_error=flow_rule)
    result = await engine_for(flow).run("HookFlow", "hi")
    assert (result.success, result.message, seen) == (True, "second try", ["ChatStep"])


async def test_u4_should_retry_llm_error_default_retries_transient_errors() -> None:
    model = ScriptedChatModel(script=[transient_error("server_error"), "recovered"])
    result = await engine_for(flow_with(model, ChatStep)).run("HookFlow", "hi")
    assert (result.success, result.message, len(model.requests)) == (True, "recovered", 2)


async def test_u4_should_retry_llm_error_rejects_a_non_boolean_answer() -> None:
    class OddStep(ChatStep):
        def should_retry_llm_error(self, error: BaseException) -> Any:
            return "yes"

    model = ScriptedChatModel(script=[transient_error("rate_limit")])
    result = await engine_for(flow_with(model, OddStep)).run("HookFlow", "hi")
    assert not result.success
    assert result.message == (
        "OddStep.should_retry_llm_error() (or the flow's) returned 'yes'. Return True (retry), "
        "False (fail now) or None (the default rule)."
    )


async def test_u4_on_llm_blocked_on_the_step_replaces_the_refusal() -> None:
    class PoliteStep(ChatStep):
        def on_llm_blocked(self, reason: str) -> Any:
            return f"I can't help with that ({reason})."

    model = ScriptedChatModel(script=[refused()])
    result = await engine_for(flow_with(model, PoliteStep)).run("HookFlow", "hi")
    assert (result.success, result.message) == (True, "I can't help with that (content_filter).")


async def test_u4_on_llm_blocked_falls_back_to_the_flow_and_may_finish() -> None:
    def flow_blocked(self: Flow, step: Step, reason: str) -> Any:
        return finish(f"Ending here: {step.name} was refused ({reason}).")

    model = ScriptedChatModel(
        script=[AIMessage("no", additional_kwargs={"refusal": "I won't do that."})]
    )
    flow = flow_with(model, ChatStep, on_llm_blocked=flow_blocked)
    result = await engine_for(flow).run("HookFlow", "hi")
    assert (result.completed, result.message) == (
        True,
        "Ending here: ChatStep was refused (I won't do that.).",
    )


async def test_u4_on_llm_blocked_default_lets_the_reply_stand_with_a_warning() -> None:
    model = ScriptedChatModel(
        script=[AIMessage("Sorry, no.", response_metadata={"stop_reason": "refusal"})]
    )
    result = await engine_for(flow_with(model, ChatStep)).run("HookFlow", "hi")
    assert (result.success, result.message) == (True, "Sorry, no.")
    assert result.warnings == ["The model refused to answer in HookFlow.ChatStep: refusal."]


async def test_u4_on_llm_blocked_rejects_stay() -> None:
    from picoflow import stay

    class BadStep(ChatStep):
        def on_llm_blocked(self, reason: str) -> Any:
            return stay("again")

    model = ScriptedChatModel(script=[refused("SAFETY")])
    result = await engine_for(flow_with(model, BadStep)).run("HookFlow", "hi")
    assert not result.success
    assert result.message.startswith("BadStep.on_llm_blocked() (or the flow's) returned ")
    assert result.message.endswith(
        ". Return None (the reply stands), a str (the reply to send instead), go(Step), "
        "direct(text) or finish(text)."
    )


async def test_u4_on_llm_error_falls_back_to_the_flow() -> None:
    def flow_error(self: Flow, step: Step, error: Exception) -> Any:
        return f"{step.name} could not reach the model; try again later."

    model = ScriptedChatModel(script=[transient_error("timeout")] * 4)
    flow = flow_with(model, ChatStep, on_llm_error=flow_error)
    result = await engine_for(flow).run("HookFlow", "hi")
    assert (result.success, result.message) == (
        True,
        "ChatStep could not reach the model; try again later.",
    )


async def test_u4_on_llm_error_on_the_step_wins_over_the_flow() -> None:
    class OwnStep(ChatStep):
        def on_llm_error(self, error: Exception) -> Any:
            return "the step's answer"

    def flow_error(self: Flow, step: Step, error: Exception) -> Any:
        raise AssertionError("the flow's hook is not asked when the step answers")

    model = ScriptedChatModel(script=[transient_error("timeout")] * 4)
    flow = flow_with(model, OwnStep, on_llm_error=flow_error)
    result = await engine_for(flow).run("HookFlow", "hi")
    assert result.message == "the step's answer"


@pytest.mark.parametrize("hooks", [{}, {"on_llm_error": lambda self, step, error: None}])
async def test_u4_on_llm_error_default_fails_the_turn(hooks: dict[str, Any]) -> None:
    model = ScriptedChatModel(script=[transient_error("timeout")] * 4)
    result = await engine_for(flow_with(model, ChatStep, **hooks)).run("HookFlow", "hi")
    assert (result.success, result.completed) == (False, False)
    assert "failed in HookFlow.ChatStep (tried 4 times)" in result.message
