"""One model call of a turn: the request, retries, streaming, and the reply made safe to keep.

`call_model` builds the step's request (system slot, memory, long-term memory block), calls the
model with its retries (V9) and the LLM hooks (U4), streams tokens when the turn is
streamed, and restamps the reply so every tool call has a unique id. The tool calls it returns
are answered by `turn.run_tool_call`.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    message_chunk_to_message,
)
from langchain_core.runnables import RunnableConfig

from picoflow._internal.effects import notice_text
from picoflow._ops import NULL_RECORD, CallRecord
from picoflow._ops._budgets import tokens_of
from picoflow._ops._telemetry import describe_reply
from picoflow._ops._tracing import run_metadata
from picoflow._runner.bank_tools import bank_block
from picoflow._runner.invoke import invoke
from picoflow._runner.llm_hooks import blocked_reason, retry_note, retry_rule
from picoflow._runner.turn import Tools, TurnContext, message_text, report_span
from picoflow.flow import Flow
from picoflow.memory import count_call, request_messages
from picoflow.models import ModelSpec
from picoflow.models._retries import call_with_retries, inherit, model_name, retries_of
from picoflow.step import Step
from picoflow.step._frame import RunFrame

_NO_REPORT: AbstractContextManager[CallRecord] = nullcontext(NULL_RECORD)

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Follow the system prompt and answer the conversation above."
)

__all__ = ["EMPTY_REPLY_NUDGE", "call_model", "model_config"]

logger = logging.getLogger(__name__)

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Follow the system prompt and answer the conversation above."
)


def model_config(flow: Flow, step: Step, purpose: str, parent: str | None = None) -> RunnableConfig:
    """LangChain run metadata and tags, so any callback handler can attribute the call (E3).

    A nested run (V2) also names the step that started it (`picoflow_parent_step`).
    """
    metadata = run_metadata(flow, step.name, step.namespace, purpose)
    tags = ["picoflow", f"picoflow:{purpose}", f"picoflow:step:{step.name}"]
    if parent is not None:
        metadata["picoflow_parent_step"] = parent
        tags.append(f"picoflow:parent:{parent}")
    return {"metadata": metadata, "tags": tags, "run_name": f"{flow.name}.{step.name}"}


async def call_model(
    step: Step, tools: Tools, ctx: TurnContext, run: RunFrame
) -> tuple[AIMessage, dict[str, InvalidToolCall]]:
    """One model call of `step` with its retries and timeout (V9), attributed to the step.

    Returns the reply and its malformed tool calls by id (V8, see `_restamp`).
    """
    flow = step.flow
    record = flow.get_memory().space(step.namespace)
    system = _system_slot(step, record.messages[0] if record.messages else None)
    record.messages[0] = system  # M2: the system slot is rewritten before every call
    spec = inherit(step._model, ctx.default_model) if step._model is not None else ctx.default_model
    spec = _require(spec if run.fallback is None else run.fallback, flow, step)  # D4: fallback
    model = ctx.registry.resolve(spec)
    runnable = ctx.registry.bound(model, [tool.schema for tool, _ in tools.values()])
    ctx.model_calls += 1
    if logger.isEnabledFor(logging.INFO):  # skip building the record's extras when unlogged
        logger.info(
            "model call %d in %s.%s",
            ctx.model_calls,
            flow.name,
            step.name,
            extra={
                "session_id": flow.get_session_id(),
                "step": step.name,
                "namespace": step.namespace,
                "parent_step": run.parent,  # the step that started this nested run (V2)
            },
        )
    messages = request_messages(record, system)
    if flow._session.effects_notice is not None:  # K9: what a forced rewind did not undo
        messages = _with_notice(flow, messages)
    if step._long_term is not None and step._long_term.inject and ctx.store is not None:
        messages = await bank_block(step, messages, ctx.store)  # L2: after the summary
    if run.scratch:
        messages = [*messages, *run.scratch]
    if ctx.budget is not None:  # O3: refused before the call, nothing spent
        ctx.budget.before_call(ctx.model_calls - 1, tokens_of(ctx.usage), messages)
    config = model_config(flow, step, "reply", run.parent)
    emit = ctx.emit if not run.depth else None  # a nested child's text is not the turn's reply
    once = run.fallback is not None
    result = await _call_once(spec, runnable, messages, config, ctx, step, emit, once=once)
    if _is_empty(result) and blocked_reason(result) is None:  # V9: a nudge (a refusal: U4)
        messages = [*messages, HumanMessage(EMPTY_REPLY_NUDGE)]  # providers refuse empty AI turns
        result = await _call_once(spec, runnable, messages, config, ctx, step, emit, once=once)
    if ctx.budget is not None:
        ctx.budget.after_call(tokens_of(ctx.usage))
    return _restamp(step, result)


async def _call_once(
    spec: ModelSpec | BaseChatModel,
    runnable: Any,
    messages: list[BaseMessage],
    config: RunnableConfig,
    ctx: TurnContext,
    step: Step,
    emit: Callable[[str, dict[str, Any]], None] | None,
    *,
    once: bool = False,
) -> AIMessage:
    """Call the model, retrying transient failures (V9); count the tokens of every attempt."""

    async def attempt() -> Any:
        if emit is None:
            result = await invoke(runnable, messages, config)
        else:
            result = await _stream_reply(runnable, messages, config, emit, step.name)
        count_call(ctx.usage["model"], result)
        return result

    retries, timeout = retries_of(spec)
    if once:  # D4: a retry_with_model fallback makes one attempt
        retries = 0
    with report_span(ctx, lambda t: t.model_call(model_name(spec), step.name, "reply")) as record:
        result: AIMessage = await call_with_retries(
            attempt,
            retries=retries,
            timeout=timeout,
            sleep=ctx.sleep,
            describe=lambda: (model_name(spec), f"{step.flow.name}.{step.name}"),
            deadline=ctx.ends,
            should_retry=retry_rule(step, spec, retries),  # U4: the step's, else the flow's rule
            on_retry=retry_note(step, spec, retries),  # U5: each retry is noted in the log
        )
        describe_reply(record, result)
        return result


def _with_notice(flow: Flow, messages: list[BaseMessage]) -> list[BaseMessage]:
    """The request with the effects notice after the system prompt; the history is unchanged."""
    notice = notice_text(flow._session)
    if notice is None or not messages or not isinstance(messages[0], SystemMessage):
        return messages
    first = messages[0]
    return [SystemMessage(f"{first.text}\n\n{notice}", id=first.id), *messages[1:]]


def _is_empty(result: BaseMessage) -> bool:
    content = result.content
    if isinstance(content, str) and content and not content.isspace():
        return False  # the common case, decided without building the message's text
    calls = getattr(result, "tool_calls", None) or getattr(result, "invalid_tool_calls", None)
    return not (calls or message_text(result).strip())


def _system_slot(step: Step, current: BaseMessage | None) -> SystemMessage:
    """The system message for this call, built from `get_prompt()` now (M2).

    When the prompt reads exactly as the step's slot already does, the slot is kept as it is:
    the same message, so the save reuses its stored form instead of serialising it again.
    """
    prompt = step.get_prompt()
    if (
        isinstance(current, SystemMessage)
        and current.content == prompt
        and isinstance(current.id, str)
        and current.id.startswith(f"{step.name}|")
    ):
        return current
    return SystemMessage(prompt, id=step.gen_message_id())


async def _stream_reply(
    runnable: Any,
    messages: list[BaseMessage],
    config: RunnableConfig,
    emit: Callable[[str, dict[str, Any]], None],
    step_name: str,
) -> BaseMessage:
    """Stream a reply, emitting its text as tokens; return the whole message.

    When the call fails after some of its text went out (a dropped connection, a timeout), or
    what went out is an empty reply that will be asked for again, a "retract" event carrying
    that text follows at once: the client takes it back, so whatever comes next (a retry, a
    reply from `on_llm_error`) is never shown after the start of a reply that was abandoned.
    """
    merged: Any = None
    sent: list[str] = []
    try:
        async for chunk in runnable.astream(messages, config=config):
            merged = chunk if merged is None else merged + chunk
            text = str(chunk.text)
            if text:
                emit("token", {"text": text, "step": step_name})
                sent.append(text)
    except BaseException:
        if sent:
            emit("retract", {"step": step_name, "text": "".join(sent)})
        raise
    if merged is None:
        return AIMessage("")
    reply = message_chunk_to_message(merged)
    if sent and _is_empty(reply):  # only whitespace went out; V9 asks again with a nudge
        emit("retract", {"step": step_name, "text": "".join(sent)})
    return reply


def _require(model: ModelSpec | BaseChatModel | None, flow: Flow, step: Step) -> Any:
    if model is None:  # the engine refuses such flows at start; this guards direct use
        raise ValueError(f"{flow.name}.{step.name} has no model: define config_model().")
    return model


def _restamp(step: Step, result: BaseMessage) -> tuple[AIMessage, dict[str, InvalidToolCall]]:
    """Attribute the reply to the step (T5) and make every tool call one the turn can answer.

    A call whose arguments were not valid JSON arrives in `invalid_tool_calls`, which providers
    still send back as a call. Left there it would be stored without a result and every later
    request would be refused (V8), so it joins `tool_calls` with empty arguments and is returned
    beside the reply, keyed by id, to be answered with an error. Every call gets an id of its
    own, since its result is matched to it by id (R6).
    """
    if not isinstance(result, AIMessage):
        return AIMessage(message_text(result), id=step.gen_message_id()), {}
    update: dict[str, Any] = {"id": step.gen_message_id()}
    if not (result.tool_calls or result.invalid_tool_calls or result.additional_kwargs):
        return result.model_copy(update=update), {}  # a plain text reply: only the id changes
    seen: set[str] = set()
    calls = [_with_unique_id(call, seen) for call in result.tool_calls]
    malformed: dict[str, InvalidToolCall] = {}
    for bad in result.invalid_tool_calls:
        call = _with_unique_id(
            ToolCall(name=bad.get("name") or "", args={}, id=bad.get("id"), type="tool_call"),
            seen,
        )
        malformed[str(call["id"])] = bad
        calls.append(call)
    if calls != result.tool_calls or result.invalid_tool_calls:
        update["tool_calls"] = calls
        update["invalid_tool_calls"] = []
    if "tool_calls" in result.additional_kwargs:  # the raw provider copy duplicates tool_calls
        update["additional_kwargs"] = {
            k: v for k, v in result.additional_kwargs.items() if k != "tool_calls"
        }
    return result.model_copy(update=update), malformed


def _with_unique_id(call: ToolCall, seen: set[str]) -> ToolCall:
    call_id = call.get("id")
    if not call_id or call_id in seen:
        call = {**call, "id": f"call_{secrets.token_hex(6)}"}
    seen.add(str(call["id"]))
    return call
