"""The parts of a turn: call the model, answer its tool calls, apply the transition.

The loop that strings them together (and runs logic steps, structured replies and nested runs)
is `_loop.run_loop`: `call_model` -> `run_tool_call` -> `apply`. Everything they change lives on
the flow object, which the engine saves only if the turn succeeds (P3).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    SystemMessage,
    ToolCall,
    ToolMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from picoflow._internal.abort import fail_turn, fails_turn
from picoflow._internal.call_keys import call_key, key_scope
from picoflow._internal.redact import redact
from picoflow._ops import NULL_RECORD, BudgetUsage, CallRecord, Telemetry
from picoflow._ops._budgets import tokens_of
from picoflow._ops._telemetry import describe_reply
from picoflow._ops._tracing import run_metadata
from picoflow._runner.bank_tools import bank_block
from picoflow._runner.crossing import crossing_message
from picoflow._runner.invoke import invoke
from picoflow._runner.llm_hooks import blocked_reason, retry_note, retry_rule
from picoflow._runner.people.handoff import begin_handoff
from picoflow._runner.structured import final_tool
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.memory import count_call, request_messages
from picoflow.models import ModelSpec, ProviderRegistry
from picoflow.models._retries import call_with_retries, inherit, model_name, policy_of
from picoflow.step import Step
from picoflow.step._frame import RunFrame
from picoflow.step._logic import LogicStep
from picoflow.tools import ToolSpec, collect_tools
from picoflow.transitions import ToolResult

__all__ = [
    "TurnContext",
    "RunFrame",
    "Outcome",
    "tools_of",
    "call_model",
    "run_tool_call",
    "run_handler",
    "malformed_outcome",
    "interpret",
    "apply",
    "apply_transition",
    "message_text",
    "append_message",
    "extend",
]

_NO_REPORT: AbstractContextManager[CallRecord] = nullcontext(NULL_RECORD)

EMPTY_REPLY_NUDGE = (
    "Your last reply was empty. Follow the system prompt and answer the conversation above."
)

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnContext:
    """What a turn needs besides the flow: models, and what it has used so far."""

    registry: ProviderRegistry
    default_model: ModelSpec | BaseChatModel | None
    usage: dict[str, dict[str, int]]
    extra_tools: Callable[[Step], list[tuple[ToolSpec, Callable[..., Any]]]] | None = None
    store: Any = None  # the session store: long-term memory reads it for requests (L2)
    model_calls: int = 0
    # Set by `FlowEngine.stream`: receives ("token" | "retract" | "tool_call" | "step_changed" |
    # "compaction" | "logic_step" | "nested_start" | "nested_end", data); summary calls never
    # emit "token" (M10).
    emit: Callable[[str, dict[str, Any]], None] | None = None
    # How the model-call policy waits between retries (V9); tests pass one that never sleeps.
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    # The turn's deadline in event-loop time (H6), if any: a retry wait that would outlast it
    # is not begun, so the call fails with its cause and `on_llm_error` still gets its say.
    ends: float | None = None
    # Where model and tool calls report (O1, O2), and the turn's spending limits (O3).
    telemetry: Telemetry | None = None
    budget: BudgetUsage | None = None


@dataclass(slots=True)
class Outcome:
    """What one tool call produced: its result text, status and transition (if any)."""

    content: str
    status: str
    result: ToolResult | None


def message_text(message: BaseMessage) -> str:
    """The plain text of a message, whatever shape its content has."""
    return str(message.text)


_Tools = dict[str, tuple[ToolSpec, Callable[..., Any]]]


def tools_of(step: Step, ctx: TurnContext) -> _Tools:
    """The tools a step exposes right now: its `@tool` methods plus built-ins it opted into."""
    exposed = {spec.name: (spec, getattr(step, spec.method_name)) for spec in _specs(type(step))}
    if ctx.extra_tools is not None:
        for spec, handler in ctx.extra_tools(step):
            exposed.setdefault(spec.name, (spec, handler))
    schema = getattr(step, "output_schema", None)
    if schema is not None:  # V4: the structured reply is given through a final tool
        exposed.setdefault(*final_tool(step, schema))
    return exposed


_SPEC_CACHE: dict[type, list[ToolSpec]] = {}


def _specs(step_class: type) -> list[ToolSpec]:
    specs = _SPEC_CACHE.get(step_class)
    if specs is None:
        specs = _SPEC_CACHE[step_class] = collect_tools(step_class)
    return specs


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
    step: Step, tools: _Tools, ctx: TurnContext, run: RunFrame
) -> tuple[AIMessage, dict[str, InvalidToolCall]]:
    """One model call of `step` under the model-call policy (V9), attributed to the step.

    Returns the reply and its malformed tool calls by id (V8, see `_restamp`).
    """
    flow = step.flow
    record = flow.get_memory().space(step.namespace)
    system = _system_slot(step, record.messages[0] if record.messages else None)
    record.messages[0] = system  # M2: the system slot is rewritten before every call
    spec = inherit(step._model, ctx.default_model) if step._model is not None else ctx.default_model
    spec = _require(spec, flow, step)
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
    if step._long_term is not None and step._long_term.inject and ctx.store is not None:
        messages = await bank_block(step, messages, ctx.store)  # L2: after the summary
    if run.scratch:
        messages = [*messages, *run.scratch]
    if ctx.budget is not None:  # O3: refused before the call, nothing spent
        ctx.budget.before_call(ctx.model_calls - 1, tokens_of(ctx.usage), messages)
    config = model_config(flow, step, "reply", run.parent)
    emit = ctx.emit if not run.depth else None  # a nested child's text is not the turn's reply
    result = await _call_once(spec, runnable, messages, config, ctx, step, emit)
    if _is_empty(result) and blocked_reason(result) is None:  # V9: a nudge (a refusal: U4)
        messages = [*messages, HumanMessage(EMPTY_REPLY_NUDGE)]  # providers refuse empty AI turns
        result = await _call_once(spec, runnable, messages, config, ctx, step, emit)
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
) -> AIMessage:
    """Call the model, retrying transient failures (V9); count the tokens of every attempt."""

    async def attempt() -> Any:
        if emit is None:
            result = await invoke(runnable, messages, config)
        else:
            result = await _stream_reply(runnable, messages, config, emit, step.name)
        count_call(ctx.usage["model"], result)
        return result

    retries, timeout = policy_of(spec)
    with _span(ctx, lambda t: t.model_call(model_name(spec), step.name, "reply")) as record:
        result: AIMessage = await call_with_retries(
            attempt,
            retries=retries,
            timeout=timeout,
            sleep=ctx.sleep,
            describe=lambda: (model_name(spec), f"{step.flow.name}.{step.name}"),
            deadline=ctx.ends,
            should_retry=retry_rule(step),  # U4: the step's, else the flow's rule
            on_retry=retry_note(step, spec, retries),  # U5: each retry is noted in the log
        )
        describe_reply(record, result)
        return result


def _span(
    ctx: TurnContext, open_span: Callable[[Telemetry], AbstractContextManager[CallRecord]]
) -> AbstractContextManager[CallRecord]:
    """A report to the turn's telemetry (O1, O2), or the shared no-op when nothing listens."""
    telemetry = ctx.telemetry
    if telemetry is None or not telemetry.active:
        return _NO_REPORT
    return open_span(telemetry)


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


_RAW_ARGS_SHOWN = 200  # enough for the model to see its mistake, not a whole runaway reply


def malformed_outcome(step: Step, bad: InvalidToolCall) -> Outcome:
    """Answer a call whose arguments could not be parsed, and warn the session (V8)."""
    name = bad.get("name") or ""
    raw = bad.get("args") or ""
    shown = raw if len(raw) <= _RAW_ARGS_SHOWN else raw[:_RAW_ARGS_SHOWN] + "..."
    step.flow.add_warning(
        f"The model called tool '{name}' in {step.name} with arguments that are not valid "
        "JSON; it was sent an error result and asked to call the tool again."
    )
    return Outcome(
        f"Error: the arguments of your call to tool '{name}' are not valid JSON: {shown!r}. "
        "Call it again with the arguments as one JSON object.",
        "error",
        None,
    )


async def run_tool_call(step: Step, tools: _Tools, call: ToolCall, ctx: TurnContext) -> Outcome:
    """Answer one tool call; whatever happens, the model gets exactly one result (R6)."""
    name = call.get("name", "")
    extra = {"session_id": step.flow.get_session_id(), "step": step.name, "tool": name}
    logger.info("tool call %s in %s", name, step.name, extra=extra)
    if ctx.emit is not None:
        ctx.emit("tool_call", {"name": name, "args": call.get("args") or {}, "step": step.name})
    if name not in tools:
        known = ", ".join(tools) or "none"
        step.flow.add_warning(
            f"The model called tool '{name}', which {step.name} does not offer; it was sent an "
            "error result listing the tools it has."
        )
        return Outcome(f"Error: no such tool '{name}'. Available tools: {known}.", "error", None)
    spec, handler = tools[name]
    try:
        kwargs = spec.validate(call.get("args") or {})
    except ValidationError as exc:
        return Outcome(
            f"Error: invalid arguments for tool '{name}': {exc}\nCall it again with corrected "
            "arguments.",
            "error",
            None,
        )
    if spec.pass_model:
        bound = functools.partial(handler, kwargs.pop("__model__"))
    else:  # bound here: a tool argument may be called `name` or `step`
        bound = functools.partial(handler, **kwargs)
    report = _span(ctx, lambda t: t.operation("tool", tool=name, step=step.name))
    with key_scope(call_key(step.flow.get_session_id(), str(call.get("id")))), report as record:
        result, failed = await run_handler(step, name, bound)  # K5: under the call's key
        outcome = failed if failed is not None else interpret(name, result, extra)
        record.outcome = "ok" if outcome.status == "success" else outcome.status
        return outcome


async def run_handler(step: Step, name: str, call: Callable[[], Any]) -> tuple[Any, Outcome | None]:
    """Run a tool or group handler at the tool-call boundary (R6).

    Returns its value, or the error outcome the model reads instead: one boundary for tools and
    groups, so both redact alike (H2).
    """
    try:
        result = call()
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # R6: a handler that raises becomes a tool result, not a crash
        if fails_turn(exc):  # a nested run failed: the turn fails (V2, V3)
            raise
        extra = {"session_id": step.flow.get_session_id(), "step": step.name, "tool": name}
        logger.exception("tool %s raised in %s", name, step.name, extra=extra)
        text = redact(str(exc))  # H2: the model may repeat it; paths and hosts stay in the log
        failed = Outcome(
            f"Error: tool '{name}' failed: {type(exc).__name__}: {text}", "error", None
        )
        return None, failed
    return result, None


def interpret(name: str, result: Any, extra: dict[str, Any]) -> Outcome:
    """Map a handler's return value to the tool-result text and a transition (R2)."""
    if result is None:
        return Outcome("ok", "success", None)
    if isinstance(result, str):
        return Outcome(result or "ok", "success", None)
    if isinstance(result, ToolResult):
        return Outcome(result.feedback or "ok", "success", result)
    logger.error("tool %s returned %r", name, result, extra=extra)
    return Outcome(
        f"Error: tool '{name}' returned a {type(result).__name__}, which is not a tool result. "
        "The handler must return None, a str, stay(), go(), direct() or finish().",
        "error",
        None,
    )


async def apply(
    flow: Flow, source: Step, reply: AIMessage, outcomes: list[Outcome], run: RunFrame
) -> tuple[Step, str | None]:
    """Store the exchange and apply the response's last transition (R4: the last one wins).

    Returns the step whose model runs next and, when the run is over (R5), the reply text.
    """
    results = [
        ToolMessage(
            o.content,
            tool_call_id=call["id"],
            name=call["name"],
            status=o.status,
            id=source.gen_message_id(),
        )
        for o, call in zip(outcomes, reply.tool_calls, strict=True)
    ]
    transition = next((o.result for o in reversed(outcomes) if o.result is not None), None)
    if transition is None or transition.kind == "stay":
        extend(source, [reply, *results])
        return source, None
    return await apply_transition(flow, source, transition, [reply, *results], run)


async def apply_transition(
    flow: Flow,
    source: Step,
    transition: ToolResult,
    exchange: list[BaseMessage],
    run: RunFrame,
    incoming: BaseMessage | None = None,
) -> tuple[Step, str | None]:
    """Store `exchange` in the source namespace and apply a transition (R4, R5, V7).

    `incoming` is what a logic step received: a `go` without a message of its own forwards it.
    """
    if run.depth and transition.kind in ("go", "finish", "handoff"):  # nested: no moves (V2)
        raise fail_turn(FlowDefinitionError(_nested_move(source, transition, run)))
    if transition.kind == "stay":
        extend(source, exchange)
        return source, None
    if transition.kind == "finish":
        flow._session.completed = True  # V7: the session is completed wherever the cursor is
        if transition.text is None:  # the step's model says the closing line
            extend(source, exchange)
            return source, None
    if transition.kind in ("direct", "finish"):
        return source, _direct(flow, source, exchange, transition)
    if transition.kind == "handoff":  # K6: the exchange is kept; a person answers from here
        extend(source, exchange)
        return source, begin_handoff(flow, source, transition)
    destination = flow.get_step(transition.target)  # type: ignore[arg-type]
    moved = await flow.goto(type(destination))
    if transition.prompt is not None:
        destination.save_state({"_prompt": transition.prompt})
    if transition.state:
        destination.save_state(transition.state)
    if transition.content_type:
        flow._session.content_type = transition.content_type
    extend(source, exchange)
    forwarded = transition.message if transition.message is not None else incoming
    return destination, await _deliver(flow, source, destination, forwarded, moved)


def _nested_move(source: Step, transition: ToolResult, run: RunFrame) -> str:
    what = f"go({_target_name(transition)})" if transition.target else f"{transition.kind}()"
    return (
        f"{source.name} returned {what} while running nested inside {run.parent} "
        "(run_step/run_steps), but a nested step cannot move the cursor or end the session. "
        f"Return direct(text) to end {source.name}'s run with a result, and let {run.parent} "
        "decide where to go once run_step() returns."
    )


def _target_name(transition: ToolResult) -> str:
    target = transition.target
    return target if isinstance(target, str) else getattr(target, "__name__", repr(target))


def _direct(flow: Flow, step: Step, exchange: list[BaseMessage], transition: ToolResult) -> str:
    text = transition.text or ""
    extend(step, [*exchange, AIMessage(text, additional_kwargs={"direct": True})])
    if transition.content_type:
        flow._session.content_type = transition.content_type
    return text


async def _deliver(
    flow: Flow,
    source: Step,
    destination: Step,
    forwarded: BaseMessage | str | None,
    moved: bool,
) -> str | None:
    """Hand the forwarded message to the destination (through on_crossing on a real move)."""
    message = HumanMessage(forwarded) if isinstance(forwarded, str) else forwarded
    if moved:
        message = await crossing_message(flow, destination, message, source.name)
    if isinstance(destination, LogicStep):  # V1: no model to read it; run_logic passes it on
        destination.incoming_message = message
        return None
    if message is None:
        return None
    append_message(destination, message)
    if isinstance(message, AIMessage) and message.additional_kwargs.get("direct"):
        return message_text(message)
    return None


def append_message(step: Step, message: BaseMessage) -> None:
    """Append to the step's namespace, attributed to the step (T5)."""
    step.get_messages().append(_owned(step, message))


def extend(step: Step, messages: list[BaseMessage]) -> None:
    """Append several messages to the step's namespace, attributed to the step (T5)."""
    if not messages:  # a logic step's transition carries none: create no namespace for it
        return
    step.get_messages().extend(_owned(step, m) for m in messages)


def _owned(step: Step, message: BaseMessage) -> BaseMessage:
    """A copy of the message attributed to `step` unless it already is (T5)."""
    if isinstance(message.id, str) and message.id.startswith(f"{step.name}|"):
        return message
    return message.model_copy(update={"id": step.gen_message_id()})
