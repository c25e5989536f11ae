"""K1: inside a turn, a tool call that needs a person's approval is recorded, not run.

When a model response calls a tool declared with `requires_approval`, the turn stops at that
call: the response is stored, the call gets an approval record (its validated arguments, the
step, who asked and when) instead of a result, and the reply says what waits. The other calls
of the same response are answered "not run", so the model calls them again once it knows the
outcome; a response's transitions are therefore never half-applied. The call's result is
added when the approval is resolved (`resume`), which continues the step from there.
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage, InvalidToolCall, ToolCall, ToolMessage
from pydantic import ValidationError

from picoflow._internal.abort import fail_turn
from picoflow._internal.call_keys import call_key
from picoflow._internal.people_records import new_approval
from picoflow._runner.turn import RunFrame, TurnContext, extend
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.step import Step
from picoflow.tools import ToolSpec

__all__ = ["gate_calls", "needs_approval", "json_args", "NOT_RUN"]

logger = logging.getLogger(__name__)

NOT_RUN = (
    "Not run: this reply also called {tool}, which waits for a person's approval. Call this "
    "tool again once that is decided, if it is still needed."
)

_Tools = dict[str, tuple[ToolSpec, Any]]


def json_args(spec: ToolSpec, args: dict[str, Any]) -> dict[str, Any]:
    """The call's arguments validated by the tool's schema, as JSON (what the record keeps).

    Raises:
        ValidationError: the arguments do not fit the schema.
    """
    if spec.args_schema is None:
        return {}
    dumped: dict[str, Any] = spec.args_schema.model_validate(args).model_dump(mode="json")
    return dumped


def needs_approval(spec: ToolSpec, args: dict[str, Any], step: Step) -> bool:
    """Whether this call waits for a person: the tool's flag, or its predicate of the args."""
    rule = spec.requires_approval
    if not callable(rule):
        return bool(rule)
    return bool(rule(args, step))


async def gate_calls(
    flow: Flow,
    step: Step,
    tools: _Tools,
    reply: AIMessage,
    ctx: TurnContext,
    run: RunFrame,
    malformed: dict[str, InvalidToolCall],
) -> str | None:
    """Record the first call that needs approval and return the turn's reply; None if none."""
    found = _first_gated(step, tools, reply, malformed)
    if found is None:
        return None
    call, args = found
    if run.depth:
        raise fail_turn(FlowDefinitionError(_nested(step, call["name"], run)))
    key = call_key(flow.get_session_id(), str(call["id"]), call["name"])
    approval = new_approval(flow._session, step.name, dict(call), args, key)
    others = [
        ToolMessage(
            NOT_RUN.format(tool=call["name"]),
            tool_call_id=other["id"],
            name=other["name"],
            status="error",
            id=step.gen_message_id(),
        )
        for other in reply.tool_calls
        if other["id"] != call["id"]
    ]
    extend(step, [reply, *others])  # the gated call's result arrives when it is resolved
    text = await flow._call_hook(step.on_approval_requested, dict(approval))
    approval["waiting_reply"] = text if isinstance(text, str) and text else _waiting(approval)
    logger.info(
        "tool %s in %s waits for approval %s",
        call["name"],
        step.name,
        approval["id"],
        extra={"session_id": flow.get_session_id(), "step": step.name, "tool": call["name"]},
    )
    if ctx.emit is not None:
        ctx.emit("approval_requested", {k: v for k, v in approval.items() if k != "held"})
    return str(approval["waiting_reply"])


def _first_gated(
    step: Step, tools: _Tools, reply: AIMessage, malformed: dict[str, InvalidToolCall]
) -> tuple[ToolCall, dict[str, Any]] | None:
    for call in reply.tool_calls:
        entry = tools.get(call["name"])
        if entry is None or call["id"] in malformed or not entry[0].requires_approval:
            continue
        spec = entry[0]
        try:
            args = json_args(spec, call.get("args") or {})
        except ValidationError:
            continue  # answered with the validation error by the tool round (R6)
        if needs_approval(spec, args, step):
            return call, args
    return None


def _waiting(approval: dict[str, Any]) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in approval["args"].items())
    return (
        f"This needs a person's approval before I can go on: {approval['tool']}({shown}). "
        "I'll continue as soon as it is decided."
    )


def _nested(step: Step, tool: str, run: RunFrame) -> str:
    return (
        f"{step.name} called tool '{tool}', which needs approval, while running nested inside "
        f"{run.parent} (run_step/run_steps); a nested run cannot pause for a person. Give the "
        f"tool to {run.parent} instead, so the turn can stop at the call."
    )
