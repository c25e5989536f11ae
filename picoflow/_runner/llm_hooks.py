"""The model-call hooks (U4): `should_retry_llm_error`, `on_llm_blocked`, `on_llm_error`.

Each is asked on the step first; a step that returns None (the default) hands the question to
the flow's hook of the same name, and a flow that returns None to the framework's default:

| hook | asked when | framework default |
| --- | --- | --- |
| `should_retry_llm_error(error)` | a model call raised; True retries it, False fails it now | retry transient errors (V9) |
| `on_llm_blocked(reason)` | the provider refused to answer (content filter, refusal) | the reply stands, with a warning |
| `on_llm_error(error)` | a call failed for good | the turn fails (V9) |

A refusal is read from what LangChain providers report: `additional_kwargs["refusal"]`
(OpenAI), a finish or stop reason of `content_filter`, `refusal`, `SAFETY`, `PROHIBITED_CONTENT`,
`BLOCKLIST` or `SPII` (OpenAI, Anthropic, Gemini).

D4: a hook that declares one more parameter than the first form above (`on_llm_error(self,
error, context)` on a step, `(self, step, error, context)` on a flow) also gets the context
record of `picoflow.models._hook_contexts`; the one-argument form is called as before. Told
apart by the signature, not by the parameter's name or annotation: both forms stay valid, and a
flow written before D4 needs no change.
"""  # noqa: E501 - the table reads better unwrapped

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage

from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models._hook_contexts import LlmAttemptErrorContext, LlmBlockedContext
from picoflow.models._retries import describe_error, is_transient, model_name
from picoflow.step import Step
from picoflow.transitions import ToolResult

__all__ = [
    "retry_rule",
    "retry_note",
    "blocked_reason",
    "blocked_context",
    "blocked_outcome",
    "llm_error_outcome",
    "with_context",
    "provider_and_model",
]

BLOCKED_REASONS = frozenset(
    {"content_filter", "refusal", "safety", "prohibited_content", "blocklist", "spii"}
)


def _overridden(step: Step, flow: Flow, name: str) -> bool:
    return getattr(type(step), name) is not getattr(Step, name) or getattr(
        type(flow), name
    ) is not getattr(Flow, name)


def with_context(hook: Callable[..., Any], args: tuple[Any, ...], context: Any) -> tuple[Any, ...]:
    """`args`, and `context` after them when the hook takes one more positional argument (D4)."""
    try:
        parameters = inspect.signature(hook).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable: the old form
        return args
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters) or len(positional) > len(args):
        return (*args, context)
    return args


def provider_and_model(spec: Any) -> tuple[str, str]:
    """(provider, name) of a model selection or its "provider:name", for the contexts (D4)."""
    provider, _, name = (spec if isinstance(spec, str) else model_name(spec)).partition(":")
    return (provider, name) if name else (provider, provider)


def retry_rule(step: Step, spec: Any, retries: int) -> Callable[[BaseException], bool] | None:
    """What decides whether a failed call of `step` is retried; None: the retry rules alone (V9).

    The hooks are asked after every failed attempt, the last one too, each with its number.
    """
    flow = step.flow
    if not _overridden(step, flow, "should_retry_llm_error"):
        return None
    provider, model = provider_and_model(spec)
    attempts = [0]

    def decide(error: BaseException) -> bool:
        attempts[0] += 1
        context = LlmAttemptErrorContext(
            step.name, provider, model, error, attempts[0], retries + 1
        )
        hook: Callable[..., Any] = step.should_retry_llm_error
        answer = hook(*with_context(hook, (error,), context))
        if answer is None:
            hook = flow.should_retry_llm_error
            answer = hook(*with_context(hook, (step, error), context))
        if answer is None:
            return is_transient(error)
        if not isinstance(answer, bool):
            raise FlowDefinitionError(
                f"{step.name}.should_retry_llm_error() (or the flow's) returned {answer!r}. "
                "Return True (retry), False (fail now) or None (the default rule)."
            )
        return answer

    return decide


def retry_note(step: Step, spec: Any, retries: int) -> Callable[[BaseException, int, float], None]:
    """What notes a retry of `step`'s model call in the session's log (U5)."""

    def note(error: BaseException, attempt: int, wait: float) -> None:
        step.flow.log(
            f"The model '{model_name(spec)}' failed in {step.flow.name}.{step.name} (attempt "
            f"{attempt} of {retries + 1}): {describe_error(error)}; trying again in {wait:.1f} s.",
            level="warning",
        )

    return note


def blocked_reason(reply: AIMessage) -> str | None:
    """Why the provider refused to answer, or None for an ordinary reply."""
    refusal = reply.additional_kwargs.get("refusal")
    if isinstance(refusal, str) and refusal:
        return refusal
    metadata = reply.response_metadata or {}
    for key in ("finish_reason", "stop_reason"):
        value = metadata.get(key)
        if isinstance(value, str) and value.lower() in BLOCKED_REASONS:
            return value
    return None


def blocked_context(step: Step, spec: Any, reply: AIMessage, reason: str) -> LlmBlockedContext:
    """What `on_llm_blocked` learns of a refused reply besides its reason (D4)."""
    metadata = dict(reply.response_metadata or {})
    refusal = reply.additional_kwargs.get("refusal")
    normal = "refusal" if isinstance(refusal, str) and refusal else reason.lower()
    ratings = metadata.get("safety_ratings") or ()
    return LlmBlockedContext(
        step.name,
        provider_and_model(spec)[0],
        normal,
        reason,
        safety_ratings=tuple(ratings) if isinstance(ratings, (list, tuple)) else (ratings,),
        details=metadata,
    )


async def blocked_outcome(
    flow: Flow, step: Step, reason: str, context: LlmBlockedContext | None = None
) -> Any:
    """The step's `on_llm_blocked` answer, else the flow's; None: the reply stands (U4).

    Raises:
        FlowDefinitionError: an answer that is not None, a str or a moving transition.
    """
    if context is None:
        context = LlmBlockedContext(step.name, "", reason.lower(), reason)
    hook: Callable[..., Any] = step.on_llm_blocked
    outcome = await flow._call_hook(hook, *with_context(hook, (reason,), context))
    if outcome is None:
        hook = flow.on_llm_blocked
        outcome = await flow._call_hook(hook, *with_context(hook, (step, reason), context))
    if outcome is None:
        flow.add_warning(f"The model refused to answer in {flow.name}.{step.name}: {reason}.")
        return None
    if isinstance(outcome, str) or (isinstance(outcome, ToolResult) and outcome.kind != "stay"):
        return outcome
    raise FlowDefinitionError(
        f"{step.name}.on_llm_blocked() (or the flow's) returned {outcome!r}. Return None (the "
        "reply stands), a str (the reply to send instead), go(Step), direct(text) or finish(text)."
    )


async def llm_error_outcome(flow: Flow, step: Step, error: Exception, context: Any) -> Any:
    """The step's `on_llm_error` answer, else the flow's; None: the turn fails (U4, D4)."""
    hook: Callable[..., Any] = step.on_llm_error
    outcome = await flow._call_hook(hook, *with_context(hook, (error,), context))
    if outcome is None:
        hook = flow.on_llm_error
        outcome = await flow._call_hook(hook, *with_context(hook, (step, error), context))
    return outcome
