"""D4: `retry_with_model` from `on_llm_error`, and the contexts the model-failure hooks get.

A hook of the one-argument form (U4) is called as before; one that declares a second
parameter also receives the context record.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage

from picoflow import (
    Flow,
    FlowEngine,
    LlmAttemptErrorContext,
    LlmBlockedContext,
    LlmErrorContext,
    ModelSpec,
    Step,
    retry_with_model,
)
from picoflow.errors import FlowDefinitionError
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, transient_error


class Boom(ValueError):
    status_code = 400  # a provider's refusal: not transient


class ChatStep(Step):
    def get_prompt(self) -> str:
        return "Chat."


async def _no_wait(seconds: float) -> None:
    return None


def run_engine(model: Any, step: type[Step], **hooks: Any) -> FlowEngine:
    body = {"config_model": lambda self: model, "define_steps": lambda self: [step(self)], **hooks}
    return FlowEngine([type("HookFlow", (Flow,), body)], store=MemoryStore(), sleep=_no_wait)


async def test_d4_retry_with_model_carries_on_the_step_once_on_the_fallback() -> None:
    seen: list[LlmErrorContext] = []
    fallback = ScriptedChatModel(script=["From the fallback.", transient_error("server_error")])

    class FallbackStep(ChatStep):
        def on_llm_error(self, error: Exception, context: Any = None) -> Any:
            seen.append(context)
            return "Both failed." if context.fallback else retry_with_model(fallback)

    main = ScriptedChatModel(script=[transient_error("rate_limit")] * 4 + ["Main again."])
    engine = run_engine(main, FallbackStep)
    first = await engine.run("HookFlow", "hi")
    assert (first.success, first.message) == (True, "From the fallback.")
    assert (len(main.requests), len(fallback.requests)) == (4, 1)  # 1 + 3 retries, then 1
    context = seen[0]
    assert (context.kind, context.step_id, context.stopped_because, context.attempts) == (
        "invocation_error",
        "FallbackStep",
        "attempts_exhausted",
        4,
    )
    assert context.fallback is False and "RateLimitError" in context.raw_reason
    second = await engine.run("HookFlow", "again", session_id=first.session_id)
    assert second.message == "Main again."  # a later turn uses the configured model


async def test_d4_a_failed_fallback_is_tried_once_and_cannot_fall_back_again() -> None:
    fallback = ScriptedChatModel(script=[transient_error("server_error"), "never"])

    class Twice(ChatStep):
        def on_llm_error(self, error: Exception, context: Any = None) -> Any:
            return retry_with_model(fallback)

    engine = run_engine(ScriptedChatModel(script=[Boom("boom")]), Twice)
    result = await engine.run("HookFlow", "hi")
    assert not result.success and len(fallback.requests) == 1  # one attempt, no retries
    assert result.message == (
        "Twice.on_llm_error() returned retry_with_model(ScriptedChatModel) after the fallback to "
        "ScriptedChatModel failed too; a step falls back once per turn. Return a str, a "
        "transition or None when context.fallback is True."
    )


def test_d4_retry_with_model_needs_a_model() -> None:
    with pytest.raises(FlowDefinitionError) as bad:
        retry_with_model(42)  # type: ignore[arg-type]
    assert str(bad.value).startswith("retry_with_model: 42 is not a model.")
    assert retry_with_model("openai:gpt-4o").model == ModelSpec("openai", "gpt-4o")


async def test_d4_should_retry_gets_the_attempt_and_the_flow_hook_its_context() -> None:
    asked: list[tuple[int, int]] = []

    def flow_rule(self: Flow, step: Step, error: BaseException, context: Any) -> bool | None:
        assert isinstance(context, LlmAttemptErrorContext) and context.step_id == "ChatStep"
        asked.append((context.attempt, context.max_attempts))
        return context.attempt < 2  # a second failure is enough

    model = ScriptedChatModel(script=[transient_error("rate_limit")] * 3)
    result = await run_engine(model, ChatStep, should_retry_llm_error=flow_rule).run(
        "HookFlow", "hi"
    )
    assert not result.success and asked == [(1, 4), (2, 4)]


async def test_d4_a_declined_retry_says_so_in_the_error_context() -> None:
    seen: list[Any] = []

    def flow_error(self: Flow, step: Step, error: Exception, context: Any) -> Any:
        seen.append((context.stopped_because, context.attempts))
        return "Sorry."

    engine = run_engine(ScriptedChatModel(script=[Boom("bad")]), ChatStep, on_llm_error=flow_error)
    assert (await engine.run("HookFlow", "hi")).message == "Sorry."
    assert seen == [("retry_declined", 1)]


async def test_d4_on_llm_blocked_gets_the_raw_and_normalised_reason() -> None:
    seen: list[LlmBlockedContext] = []

    class Polite(ChatStep):
        def on_llm_blocked(self, reason: str, context: Any = None) -> Any:
            seen.append(context)
            return "I can't help with that."

    reply = AIMessage("", additional_kwargs={"refusal": "I won't do that."})
    engine = run_engine(ScriptedChatModel(script=[reply]), Polite)
    assert (await engine.run("HookFlow", "hi")).message == "I can't help with that."
    assert (seen[0].reason, seen[0].raw_reason, seen[0].phase) == (
        "refusal",
        "I won't do that.",
        "candidate",
    )


async def test_d4_on_llm_error_refuses_an_unknown_answer_and_names_retry_with_model() -> None:
    class Odd(ChatStep):
        def on_llm_error(self, error: Exception) -> Any:
            return 42

    engine = run_engine(ScriptedChatModel(script=[Boom("x")]), Odd)
    result = await engine.run("HookFlow", "hi")
    assert result.message == (
        "Odd.on_llm_error() returned 42. Return None (the turn fails), a str (the reply to send "
        "instead), go(Step), direct(text), direct_to(Step, text), finish(text) or "
        "retry_with_model(model)."
    )
