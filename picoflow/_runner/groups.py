"""Answering a model response's tool calls: one by one, or all at once by a group (V6).

A `@tool_group` takes over a response whose calls all name tools in its set: it gets every
call (validated arguments and ids) in one call, so a step can act on "the weather of NYC and
LA" together. Its result answers each call (R6: one tool result per call id) and its
transition, if any, is the response's transition.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

from langchain_core.messages import AIMessage, InvalidToolCall
from pydantic import ValidationError

from picoflow._internal.call_keys import call_key
from picoflow._runner.effect_claims import claim_effect, interrupted_result
from picoflow._runner.turn import (
    Outcome,
    TurnContext,
    interpret,
    malformed_outcome,
    note_effect,
    run_handler,
    run_tool_call,
)
from picoflow.step import Step
from picoflow.tools import GroupSpec, ToolCall, ToolSpec, collect_groups

__all__ = ["answer_calls"]

logger = logging.getLogger(__name__)

_Tools = dict[str, tuple[ToolSpec, Any]]
_GROUPS: dict[type, list[GroupSpec]] = {}


def _groups(step_class: type) -> list[GroupSpec]:
    groups = _GROUPS.get(step_class)
    if groups is None:
        groups = _GROUPS[step_class] = collect_groups(step_class, check=False)  # checked at start
    return groups


async def answer_calls(
    step: Step,
    tools: _Tools,
    reply: AIMessage,
    ctx: TurnContext,
    malformed: dict[str, InvalidToolCall],
) -> list[Outcome]:
    """One outcome per tool call of `reply`, in order; `malformed` calls get their error (V8)."""
    groups = _groups(type(step))
    if groups and not malformed:
        names = {call["name"] for call in reply.tool_calls}
        for group in groups:
            if names <= group.names and names <= tools.keys():
                return await _run_group(step, tools, reply, group, ctx)
    return [
        malformed_outcome(step, malformed[call["id"]])
        if call["id"] in malformed
        else await run_tool_call(step, tools, call, ctx)
        for call in reply.tool_calls
    ]


async def _run_group(
    step: Step, tools: _Tools, reply: AIMessage, group: GroupSpec, ctx: TurnContext
) -> list[Outcome]:
    name = group.method_name
    extra = {"session_id": step.flow.get_session_id(), "step": step.name, "tool": name}
    calls, errors = _validated(tools, reply, ctx, step)
    if errors:
        return [
            errors.get(call.id) or Outcome(_NOT_RUN.format(name=call.name), "error", None)
            for call in calls
        ]
    logger.info("tool group %s in %s", name, step.name, extra=extra)
    effects, stopped = await _claimed(step, tools, reply, calls, ctx)  # K8: claimed first
    if stopped is not None:
        return [stopped for _ in calls]
    handler = functools.partial(getattr(step, name), list(calls))  # the handler may change it
    result, failed = await run_handler(step, name, handler)
    outcome = failed if failed is not None else interpret(name, result, extra)
    for tool, args, key in effects:  # a group that ran a tool with effects ran each such call
        note_effect(step, tool, args, key, outcome)
    if failed is not None:
        return [failed for _ in calls]
    plain = Outcome(outcome.content, outcome.status, None)  # the transition is applied once
    return [plain for _ in calls[1:]] + [outcome]


async def _claimed(
    step: Step, tools: _Tools, reply: AIMessage, calls: list[ToolCall], ctx: TurnContext
) -> tuple[list[tuple[str, dict[str, Any], str]], Outcome | None]:
    """The group's calls of tools with effects, claimed (K8), and what stops it, if anything.

    A group runs all its calls at once or none, so one claim an earlier attempt holds stops
    the group: its calls are recorded as interrupted, and each call is answered so.
    """
    sent = {c["id"]: c.get("args") or {} for c in reply.tool_calls}  # JSON, as the model sent
    effects = [
        (call.name, sent.get(call.id, {}), call_key(step.flow.get_session_id(), call.id, call.name))
        for call in calls
        if tools[call.name][0].has_effects
    ]
    held = [e for e in effects if not await claim_effect(ctx.store, ctx.attempt, e[2])]
    if not held:
        return effects, None
    stopped = Outcome(interrupted_result(held[0][0], held[0][2]), "error", None)
    for tool, args, key in effects:
        note_effect(step, tool, args, key, stopped, "interrupted")
    return effects, stopped


_NOT_RUN = (
    "Not run: another call of this reply had invalid arguments. Call {name} again together "
    "with the corrected call."
)


def _validated(
    tools: _Tools, reply: AIMessage, ctx: TurnContext, step: Step
) -> tuple[list[ToolCall], dict[str, Outcome]]:
    """Every call with validated arguments, and an error outcome for each invalid one."""
    calls: list[ToolCall] = []
    errors: dict[str, Outcome] = {}
    for call in reply.tool_calls:
        call_id, name, args = call["id"] or "", call["name"], call.get("args") or {}
        if ctx.emit is not None:
            ctx.emit("tool_call", {"name": name, "args": args, "step": step.name})
        spec = tools[name][0]
        try:
            model = spec.args_schema.model_validate(args) if spec.args_schema else None
        except ValidationError as exc:
            errors[call_id] = Outcome(
                f"Error: invalid arguments for tool '{name}': {exc}\nCall it again with "
                "corrected arguments.",
                "error",
                None,
            )
            model = None
        if model is not None:
            values = {f: getattr(model, f) for f in type(model).model_fields}
        else:  # a tool from use_tools validates its own arguments when it runs
            values = dict(args) if spec.args_schema is None else {}
        calls.append(ToolCall(name, values, call_id))
    return calls, errors
