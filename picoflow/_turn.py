"""One turn: call the model, answer its tool calls, apply the transition, until there is a reply.

The loop reads as its named steps: `_call_model` -> `_run_tool_calls` -> `_apply`. Everything it
changes lives on the flow object, which the engine saves only if the turn succeeds (P3).
"""

from __future__ import annotations

import inspect
import logging
import secrets
from collections.abc import Callable
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

from ._invoke import invoke
from ._redact import redact
from ._tracing import run_metadata
from .errors import ToolLoopError
from .flow import Flow
from .memory import count_call, request_messages
from .models import ModelSpec, ProviderRegistry
from .step import Step
from .tools import ToolSpec, collect_tools
from .transitions import ToolResult

__all__ = [
    "TurnContext",
    "run_turn",
    "tools_of",
    "message_text",
    "append_message",
]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class TurnContext:
    """What a turn needs besides the flow: models, and what it has used so far."""

    registry: ProviderRegistry
    default_model: ModelSpec | BaseChatModel | None
    usage: dict[str, dict[str, int]]
    extra_tools: Callable[[Step], list[tuple[ToolSpec, Callable[..., Any]]]] | None = None
    model_calls: int = 0
    # Set by `FlowEngine.stream`: receives ("token" | "tool_call" | "step_changed" |
    # "compaction", data); summary calls never emit "token" (M10).
    emit: Callable[[str, dict[str, Any]], None] | None = None


@dataclass(slots=True)
class _Outcome:
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
    return exposed


_SPEC_CACHE: dict[type, list[ToolSpec]] = {}


def _specs(step_class: type) -> list[ToolSpec]:
    specs = _SPEC_CACHE.get(step_class)
    if specs is None:
        specs = _SPEC_CACHE[step_class] = collect_tools(step_class)
    return specs


async def run_turn(flow: Flow, message: str | None, ctx: TurnContext) -> str:
    """Run the current step until it replies; return the reply text (R3-R7)."""
    step = flow.current_step
    if message:
        append_message(step, HumanMessage(message, id=step.gen_message_id()))
    for _ in range(flow.max_tool_rounds):
        tools = tools_of(step, ctx)  # what the model is offered is what its calls may use
        reply, malformed = await _call_model(step, tools, ctx)
        if not reply.tool_calls:
            append_message(step, reply)
            return message_text(reply)
        outcomes = [
            _malformed_outcome(step, malformed[call["id"]])
            if call["id"] in malformed
            else await _run_tool_call(step, tools, call, ctx)
            for call in reply.tool_calls
        ]
        source = step
        step, text = await _apply(flow, step, reply, outcomes)
        if ctx.emit is not None and step is not source:
            ctx.emit("step_changed", {"from": source.name, "to": step.name})
        if text is not None:
            return text
    raise ToolLoopError(flow.name, step.name, flow.max_tool_rounds)


def model_config(flow: Flow, step: Step, purpose: str) -> RunnableConfig:
    """LangChain run metadata and tags, so any callback handler can attribute the call (E3)."""
    metadata = run_metadata(flow, step.name, step.namespace, purpose)
    tags = ["picoflow", f"picoflow:{purpose}", f"picoflow:step:{step.name}"]
    return {"metadata": metadata, "tags": tags, "run_name": f"{flow.name}.{step.name}"}


async def _call_model(
    step: Step, tools: _Tools, ctx: TurnContext
) -> tuple[AIMessage, dict[str, InvalidToolCall]]:
    flow = step.flow
    record = flow.get_memory().space(step.namespace)
    system = _system_slot(step, record.messages[0] if record.messages else None)
    record.messages[0] = system  # M2: the system slot is rewritten before every call
    model = ctx.registry.resolve(step._model or _require(ctx.default_model, flow, step))
    runnable = ctx.registry.bound(model, [spec.schema for spec, _ in tools.values()])
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
            },
        )
    messages = request_messages(record, system)
    config = model_config(flow, step, "reply")
    if ctx.emit is None:
        result = await invoke(runnable, messages, config)
    else:
        result = await _stream_reply(runnable, messages, config, ctx.emit, step.name)
    count_call(ctx.usage["model"], result)
    return _restamp(step, result)


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
    """Stream a reply, emitting its text as tokens; return the whole message."""
    merged: Any = None
    async for chunk in runnable.astream(messages, config=config):
        merged = chunk if merged is None else merged + chunk
        text = str(chunk.text)
        if text:
            emit("token", {"text": text, "step": step_name})
    if merged is None:
        return AIMessage("")
    return message_chunk_to_message(merged)


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


def _malformed_outcome(step: Step, bad: InvalidToolCall) -> _Outcome:
    """Answer a call whose arguments could not be parsed, and warn the session (V8)."""
    name = bad.get("name") or ""
    raw = bad.get("args") or ""
    shown = raw if len(raw) <= _RAW_ARGS_SHOWN else raw[:_RAW_ARGS_SHOWN] + "..."
    step.flow.add_warning(
        f"The model called tool '{name}' in {step.name} with arguments that are not valid "
        "JSON; it was sent an error result and asked to call the tool again."
    )
    return _Outcome(
        f"Error: the arguments of your call to tool '{name}' are not valid JSON: {shown!r}. "
        "Call it again with the arguments as one JSON object.",
        "error",
        None,
    )


async def _run_tool_call(step: Step, tools: _Tools, call: ToolCall, ctx: TurnContext) -> _Outcome:
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
        return _Outcome(f"Error: no such tool '{name}'. Available tools: {known}.", "error", None)
    spec, handler = tools[name]
    try:
        kwargs = spec.validate(call.get("args") or {})
    except ValidationError as exc:
        return _Outcome(
            f"Error: invalid arguments for tool '{name}': {exc}\nCall it again with corrected "
            "arguments.",
            "error",
            None,
        )
    try:
        result = handler(kwargs.pop("__model__")) if spec.pass_model else handler(**kwargs)
        if inspect.isawaitable(result):
            result = await result
    except Exception as exc:  # R6: a handler that raises becomes a tool result, not a crash
        logger.exception("tool %s raised in %s", name, step.name, extra=extra)
        text = redact(str(exc))  # H2: the model may repeat it; paths and hosts stay in the log
        return _Outcome(f"Error: tool '{name}' failed: {type(exc).__name__}: {text}", "error", None)
    return _interpret(name, result, extra)


def _interpret(name: str, result: Any, extra: dict[str, Any]) -> _Outcome:
    """Map a handler's return value to the tool-result text and a transition (R2)."""
    if result is None:
        return _Outcome("ok", "success", None)
    if isinstance(result, str):
        return _Outcome(result or "ok", "success", None)
    if isinstance(result, ToolResult):
        return _Outcome(result.feedback or "ok", "success", result)
    logger.error("tool %s returned %r", name, result, extra=extra)
    return _Outcome(
        f"Error: tool '{name}' returned a {type(result).__name__}, which is not a tool result. "
        "The handler must return None, a str, stay(), go() or direct().",
        "error",
        None,
    )


async def _apply(
    flow: Flow, source: Step, reply: AIMessage, outcomes: list[_Outcome]
) -> tuple[Step, str | None]:
    """Store the exchange and apply the response's last transition (R4: the last one wins).

    Returns the step whose model runs next and, when the turn is over (R5), the reply text.
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
        _extend(source, [reply, *results])
        return source, None
    if transition.kind == "direct":
        return source, _direct(flow, source, [reply, *results], transition)
    destination = flow.get_step(transition.target)  # type: ignore[arg-type]
    moved = await flow.goto(type(destination))
    if transition.prompt is not None:
        destination.save_state({"_prompt": transition.prompt})
    if transition.state:
        destination.save_state(transition.state)
    if transition.content_type:
        flow._session.content_type = transition.content_type
    _extend(source, [reply, *results])
    return destination, await _deliver(flow, source, destination, transition, moved)


def _direct(flow: Flow, step: Step, exchange: list[BaseMessage], transition: ToolResult) -> str:
    text = transition.text or ""
    _extend(step, [*exchange, AIMessage(text, additional_kwargs={"direct": True})])
    if transition.content_type:
        flow._session.content_type = transition.content_type
    return text


async def _deliver(
    flow: Flow, source: Step, destination: Step, transition: ToolResult, moved: bool
) -> str | None:
    """Hand the forwarded message to the destination (through on_crossing on a real move)."""
    forwarded = transition.message
    if isinstance(forwarded, str):
        forwarded = HumanMessage(forwarded)
    if moved:
        forwarded = await flow._call_hook(destination.on_crossing, forwarded, source.name)
    if forwarded is None:
        return None
    append_message(destination, forwarded)
    if isinstance(forwarded, AIMessage) and forwarded.additional_kwargs.get("direct"):
        return message_text(forwarded)
    return None


def append_message(step: Step, message: BaseMessage) -> None:
    """Append to the step's namespace, attributed to the step (T5)."""
    step.get_messages().append(_owned(step, message))


def _extend(step: Step, messages: list[BaseMessage]) -> None:
    step.get_messages().extend(_owned(step, m) for m in messages)


def _owned(step: Step, message: BaseMessage) -> BaseMessage:
    """A copy of the message attributed to `step` unless it already is (T5)."""
    if isinstance(message.id, str) and message.id.startswith(f"{step.name}|"):
        return message
    return message.model_copy(update={"id": step.gen_message_id()})
