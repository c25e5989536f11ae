"""The parts of a turn: its context, answering the model's tool calls, applying the transition.

The loop that strings them together (and runs logic steps, structured replies and nested runs)
is `_loop.run_loop`: `model_call.call_model` -> `run_tool_call` -> `apply`. Everything they
change lives on the flow object, which the engine saves only if the turn succeeds (P3).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    ToolCall,
    ToolMessage,
)
from pydantic import ValidationError

from picoflow._internal.abort import fail_turn, fails_turn
from picoflow._internal.call_keys import call_key, key_scope
from picoflow._internal.effects import record_effect
from picoflow._internal.redact import redact
from picoflow._ops import NULL_RECORD, BudgetUsage, CallRecord, Telemetry
from picoflow._runner.crossing import crossing_message
from picoflow._runner.effect_claims import claim_effect, interrupted_result
from picoflow._runner.people.handoff import begin_handoff
from picoflow._runner.structured import final_tool
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models import ModelSpec, ProviderRegistry
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
    "report_span",
    "Tools",
    "run_tool_call",
    "note_effect",
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
    # How model-call retries wait (V9); tests pass one that never sleeps.
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    # The turn's deadline in event-loop time (H6), if any: a retry wait that would outlast it
    # is not begun, so the call fails with its cause and `on_llm_error` still gets its say.
    ends: float | None = None
    # Where model and tool calls report (O1, O2), and the turn's spending limits (O3).
    telemetry: Telemetry | None = None
    budget: BudgetUsage | None = None
    # Who claims this attempt's calls of tools with effects in the store (K8, effect_claims).
    attempt: str = field(default_factory=lambda: secrets.token_hex(12))
    decisions: Mapping[str, Any] = field(default_factory=dict)  # D2: decision providers by id


@dataclass(slots=True)
class Outcome:
    """What one tool call produced: its result text, status and transition (if any)."""

    content: str
    status: str
    result: ToolResult | None


def message_text(message: BaseMessage) -> str:
    """The plain text of a message, whatever shape its content has."""
    return str(message.text)


Tools = dict[str, tuple[ToolSpec, Callable[..., Any]]]


def tools_of(step: Step, ctx: TurnContext) -> Tools:
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


def report_span(
    ctx: TurnContext, open_span: Callable[[Telemetry], AbstractContextManager[CallRecord]]
) -> AbstractContextManager[CallRecord]:
    """A report to the turn's telemetry (O1, O2), or the shared no-op when nothing listens."""
    telemetry = ctx.telemetry
    if telemetry is None or not telemetry.active:
        return _NO_REPORT
    return open_span(telemetry)


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


async def run_tool_call(step: Step, tools: Tools, call: ToolCall, ctx: TurnContext) -> Outcome:
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
    report = report_span(ctx, lambda t: t.operation("tool", tool=name, step=step.name))
    key = call_key(step.flow.get_session_id(), str(call.get("id")), name)
    if spec.has_effects and not await claim_effect(ctx.store, ctx.attempt, key):  # K8
        outcome = Outcome(interrupted_result(name, key), "error", None)
        note_effect(step, name, call.get("args") or {}, key, outcome, "interrupted")
        return outcome
    with key_scope(key), report as record:
        result, failed = await run_handler(step, name, bound)  # K5: under the call's key
        outcome = failed if failed is not None else interpret(name, result, extra)
        record.outcome = "ok" if outcome.status == "success" else outcome.status
    if spec.has_effects:  # K8: what it did is a fact of the session from now on
        note_effect(step, name, call.get("args") or {}, key, outcome)
    return outcome


def note_effect(
    step: Step,
    tool: str,
    args: dict[str, Any],
    key: str,
    outcome: Outcome,
    status: str | None = None,
) -> None:
    """Record a run of a tool with effects in the session (K8); `status` overrides the outcome's.

    A call an earlier attempt claimed is recorded as "interrupted": it may have taken effect.
    """
    result = (outcome.content, status or outcome.status)
    record_effect(step.flow._session, step.name, tool, args, key, result)


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
