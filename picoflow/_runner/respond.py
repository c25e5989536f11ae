"""What happens to a model's answer: validation (V4), `on_response` (V5), `on_llm_error` (V9).

An answer is a reply without tool calls, or, for a step with `output_schema`, a response whose
only tool calls are `final_result`. A step's answer is accepted (stored, and the run's reply),
replaced, sent back to the model with feedback, or turned into a transition. A rejected answer
and its feedback are never stored: they ride along in the step's next request only
(`RunFrame.scratch`), as PicoFlow's `checkResponse` retry did.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from picoflow._runner.llm_hooks import (
    blocked_context,
    blocked_outcome,
    llm_error_outcome,
    provider_and_model,
)
from picoflow._runner.structured import (
    FINAL_TOOL,
    check_output_schema,
    invalid_reply_feedback,
    parse_reply,
    reply_text,
    validate_args,
)
from picoflow._runner.turn import RunFrame, append_message, apply_transition, message_text
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models._hook_contexts import LlmErrorContext
from picoflow.models._retries import ModelCallError, describe_error, model_name, retries_of
from picoflow.step import Step
from picoflow.transitions import RetryWithModel, ToolResult, finish

__all__ = ["Reply", "respond", "take_final", "recover", "settle_blocked", "is_plain"]

DEFAULT_RETRY = "That answer was not accepted. Answer again, following the system prompt."


@dataclass(frozen=True, slots=True)
class Reply:
    """How a run ended: the text for the user and the value (text or the V4 object)."""

    text: str
    value: Any


def is_plain(step: Step) -> bool:
    """True for a step whose answers need no checking: no schema, no on_response (fast path)."""
    return type(step).on_response is Step.on_response and step.output_schema is None


def _schema(step: Step) -> type[BaseModel] | None:
    schema = step.output_schema
    return None if schema is None else check_output_schema(step.name, schema)


async def respond(
    flow: Flow, step: Step, reply: AIMessage, run: RunFrame
) -> tuple[Step, Reply | None]:
    """The model answered in text: validate it against the schema (V4), then on_response."""
    schema = _schema(step)
    value: Any = message_text(reply)
    if schema is not None:
        parsed, error = parse_reply(value, schema)
        if parsed is None:
            feedback = invalid_reply_feedback(schema, error or "")
            run.scratch += [reply, HumanMessage(feedback)]
            return step, None
        value = parsed
    return await _settle(flow, step, reply, value, run)


async def take_final(
    flow: Flow, step: Step, reply: AIMessage, run: RunFrame
) -> tuple[Step, Reply | None] | None:
    """A response of only `final_result` calls is the step's structured answer (V4).

    None when the response is something else (ordinary tool calls, possibly mixed with a
    `final_result` that the tool round then answers with an error).
    """
    schema = _schema(step)
    calls = reply.tool_calls
    if schema is None or any(call["name"] != FINAL_TOOL for call in calls):
        return None
    value, error = validate_args(calls[0]["args"], schema)
    if value is None:
        results: list[BaseMessage] = [
            ToolMessage(
                invalid_reply_feedback(schema, error or "")
                if index == 0
                else "Ignored: only the first final_result of a reply counts.",
                tool_call_id=call["id"],
                name=FINAL_TOOL,
                status="error",
            )
            for index, call in enumerate(calls)
        ]
        run.scratch += [reply, *results]
        return step, None
    answer = AIMessage(reply_text(value), id=reply.id, usage_metadata=reply.usage_metadata)
    return await _settle(flow, step, answer, value, run)


async def _settle(
    flow: Flow, step: Step, reply: AIMessage, value: Any, run: RunFrame
) -> tuple[Step, Reply | None]:
    """Ask `on_response` (V5) what to do with a valid answer, and do it."""
    if type(step).on_response is Step.on_response:
        return step, _accept(step, reply, value, run)
    outcome = await flow._call_hook(step.on_response, value)
    if outcome is None:
        return step, _accept(step, reply, value, run)
    if isinstance(outcome, str):
        return step, _accept(step, AIMessage(outcome, id=reply.id), outcome, run)
    if isinstance(outcome, ToolResult):
        return await _follow(flow, step, reply, outcome, run)
    raise FlowDefinitionError(
        f"{step.name}.on_response() returned {outcome!r}. Return None (the reply stands), a "
        "str (the reply to send instead), go(Step), stay(feedback), direct(text) or finish()."
    )


def _accept(step: Step, reply: AIMessage, value: Any, run: RunFrame) -> Reply:
    run.scratch.clear()
    append_message(step, reply)
    return Reply(message_text(reply), value)


async def _follow(
    flow: Flow, step: Step, reply: AIMessage, outcome: ToolResult, run: RunFrame
) -> tuple[Step, Reply | None]:
    """Apply a transition returned for an answer; the answer itself is not kept (V5)."""
    if outcome.kind == "stay":  # PicoFlow's checkResponse retry, with feedback
        run.scratch += [reply, HumanMessage(outcome.feedback or DEFAULT_RETRY)]
        return step, None
    if outcome.kind == "finish" and outcome.text is None:  # the answer is the closing reply
        outcome = finish(message_text(reply))
    run.scratch.clear()
    destination, text = await apply_transition(flow, step, outcome, [], run)
    return destination, None if text is None else Reply(text, text)


async def recover(
    flow: Flow, step: Step, error: ModelCallError, run: RunFrame
) -> tuple[Step, Reply | None]:
    """The model call failed for good: `on_llm_error` may answer instead (V9, U4)."""
    flow_default = type(flow).on_llm_error is Flow.on_llm_error
    if type(step).on_llm_error is Step.on_llm_error and flow_default:
        raise error
    context = error_context(step, error, run)
    outcome = await llm_error_outcome(flow, step, error, context)  # the step's, else the flow's
    if outcome is None:
        raise error
    if isinstance(outcome, RetryWithModel):  # D4: the same step, once more, on another model
        if run.fallback is not None:
            raise _second_fallback(step, run, outcome) from error
        run.fallback = outcome.model
        return step, None
    if isinstance(outcome, str):
        message = AIMessage(outcome, id=step.gen_message_id())
        return step, _accept(step, message, outcome, run)
    if isinstance(outcome, ToolResult) and outcome.kind != "stay":
        if outcome.kind == "finish" and outcome.text is None:
            raise _no_closing_text(step) from error
        run.scratch.clear()
        destination, text = await apply_transition(flow, step, outcome, [], run)
        return destination, None if text is None else Reply(text, text)
    raise FlowDefinitionError(
        f"{step.name}.on_llm_error() returned {outcome!r}. Return None (the turn fails), a str "
        "(the reply to send instead), go(Step), direct(text), direct_to(Step, text), "
        "finish(text) or retry_with_model(model)."
    ) from error


def error_context(step: Step, error: ModelCallError, run: RunFrame) -> LlmErrorContext:
    """What `on_llm_error` learns of the failure besides the error itself (D4)."""
    fallback = run.fallback
    selection = fallback if fallback is not None else step.get_model_selection()
    retries = 0 if fallback is not None or selection is None else retries_of(selection)[0]
    provider, model = provider_and_model(error.model)
    return LlmErrorContext(
        kind="invocation_error",
        step_id=step.name,
        provider=provider,
        model=model,
        error=error,
        stopped_because="attempts_exhausted" if error.attempts > retries else "retry_declined",
        attempts=error.attempts,
        raw_reason=describe_error(error.__cause__ or error),
        fallback=fallback is not None,
    )


def _second_fallback(step: Step, run: RunFrame, outcome: RetryWithModel) -> FlowDefinitionError:
    tried = model_name(run.fallback) if run.fallback is not None else "?"
    return FlowDefinitionError(
        f"{step.name}.on_llm_error() returned retry_with_model({model_name(outcome.model)}) "
        f"after the fallback to {tried} failed too; a step falls back once per turn. Return "
        "a str, a transition or None when context.fallback is True."
    )


async def settle_blocked(
    flow: Flow, step: Step, reply: AIMessage, reason: str, run: RunFrame
) -> tuple[Step, Reply | None] | None:
    """The provider refused to answer: `on_llm_blocked` decides; None: the reply stands (U4)."""
    spec = run.fallback if run.fallback is not None else step.get_model_selection()
    context = blocked_context(step, spec, reply, reason) if spec is not None else None
    outcome = await blocked_outcome(flow, step, reason, context)
    if outcome is None:
        return None
    if isinstance(outcome, str):
        message = AIMessage(outcome, id=step.gen_message_id())
        return step, _accept(step, message, outcome, run)
    run.scratch.clear()
    destination, text = await apply_transition(flow, step, outcome, [], run)
    return destination, None if text is None else Reply(text, text)


def _no_closing_text(step: Step) -> FlowDefinitionError:
    return FlowDefinitionError(
        f"{step.name}.on_llm_error() returned finish() without a text, but the model that would "
        "say the closing line just failed. Pass the reply: finish('Sorry, we have to stop here.')."
    )
