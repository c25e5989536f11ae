"""K3, K5: resolving an approval continues the step from the recorded call, and only from there.

Nothing before the call runs again: the model's response that made the call is in the history,
so the step goes on exactly where the turn stopped. An approved (or edited) call is run in three
saves, each with the revision check (P4), so exactly one resolver ever runs the tool:

1. claim: the record becomes `running` (decision, who, when). A second resolver, in this
   process or another, finds it claimed and runs nothing.
2. the tool runs with the recorded `tool_call_key`; its result, the call's tool message and its
   transition are saved at once (`resolved`). If the model then fails, a second resolve
   replays this recorded result and only asks the model again.
3. the model answers the result; its reply is saved on the record (and in the history).

A process killed between 1 and 2 leaves a `running` record. Whether its tool took effect is not
known, so it is never run again: once `approval_lease` has passed, a resolve marks it
`interrupted` and the model reads a result that says so (with the call's key, to check).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage
from pydantic import ValidationError

from picoflow._internal.call_keys import key_scope
from picoflow._internal.state import now_iso
from picoflow._runner.loop import FRAME, run_loop
from picoflow._runner.people.gate import json_args
from picoflow._runner.turn import (
    Outcome,
    RunFrame,
    TurnContext,
    apply_transition,
    extend,
    interpret,
    note_effect,
    run_handler,
    tools_of,
)
from picoflow.flow import Flow
from picoflow.step import Step

__all__ = [
    "DECISIONS",
    "ResolveProblem",
    "claim",
    "decline_outcome",
    "run_approved",
    "record_result",
    "continue_step",
    "interrupted_outcome",
    "lease_over",
]

DECISIONS = ("approve", "reject", "edit")


class ResolveProblem(Exception):
    """A resolve that cannot go ahead; `error` is the TurnResult.error it becomes."""

    def __init__(self, message: str, error: str) -> None:
        super().__init__(message)
        self.error = error


def _spec_of(step: Step, ctx: TurnContext, tool: str) -> Any:
    entry = tools_of(step, ctx).get(tool)
    if entry is None:
        raise ResolveProblem(
            f"{step.name} no longer has a tool '{tool}', so the approved call cannot run. "
            "Reject the approval instead; the model is then told it was not run.",
            "InvalidRequest",
        )
    return entry


def claim(
    approval: dict[str, Any],
    step: Step,
    ctx: TurnContext,
    decision: str,
    args: dict[str, Any] | None,
    by: str | None,
    note: str | None,
) -> None:
    """Mark the record as taken by this resolver (step 1); edit validates the new args first."""
    if decision == "edit":
        spec, _ = _spec_of(step, ctx, approval["tool"])
        try:
            new_args = json_args(spec, args or {})
        except ValidationError as exc:
            raise ResolveProblem(
                f"The edited arguments for tool '{approval['tool']}' are not valid: {exc}\n"
                "Send arguments that fit the tool's schema.",
                "InvalidRequest",
            ) from exc
        approval["requested_args"] = approval["args"]
        approval["args"] = new_args
    approval.update(
        status="running" if decision != "reject" else "resolved",
        decision=decision,
        resolved_by=by,
        resolved_at=now_iso(),
        note=note,
    )


async def run_approved(step: Step, ctx: TurnContext, approval: dict[str, Any]) -> Outcome:
    """Run the approved call with its recorded arguments and key (step 2)."""
    spec, handler = _spec_of(step, ctx, approval["tool"])
    kwargs = spec.validate(approval["args"])
    if spec.pass_model:
        bound = functools.partial(handler, kwargs.pop("__model__"))
    else:
        bound = functools.partial(handler, **kwargs)
    with key_scope(approval["key"]):
        result, failed = await run_handler(step, approval["tool"], bound)
    extra = {"session_id": step.flow.get_session_id(), "step": step.name}
    outcome = failed if failed is not None else interpret(approval["tool"], result, extra)
    note_effect(step, approval["tool"], approval["args"], approval["key"], outcome)  # K8
    return outcome


def decline_outcome(approval: dict[str, Any], by: str | None, note: str | None) -> Outcome:
    """What the model reads for a rejected call."""
    who = f" by {by}" if by else ""
    why = f" Reason: {note}" if note else " No reason was given."
    return Outcome(
        f"Declined{who}: a person did not approve this call of {approval['tool']}, and it was "
        f"not run.{why} Tell the user, and do not call it again unless they ask for something "
        "different.",
        "error",
        None,
    )


def interrupted_outcome(approval: dict[str, Any]) -> Outcome:
    """What the model reads for an approved call whose process died before it reported back."""
    return Outcome(
        f"Interrupted: this call of {approval['tool']} was approved, but the process running it "
        "stopped before its result was recorded, so whether it took effect is unknown. It was "
        f"not run again. Its key is {approval['key']}: check it before calling the tool again.",
        "error",
        None,
    )


async def record_result(
    flow: Flow, step: Step, approval: dict[str, Any], outcome: Outcome
) -> tuple[Step, str | None]:
    """Store the call's result (and what the user wrote meanwhile); apply its transition.

    Returns the step that answers next and, for a transition that ends the run (direct,
    finish with a text, handoff), the reply.
    """
    approval["status"] = "resolved"
    approval["result"] = {"content": outcome.content, "status": outcome.status}
    result = ToolMessage(
        outcome.content,
        tool_call_id=approval["call_id"],
        name=approval["tool"],
        status=outcome.status,
        id=step.gen_message_id(),
    )
    exchange: list[BaseMessage] = [result, *_held_messages(step, approval)]
    transition = outcome.result
    if transition is None or transition.kind == "stay":
        extend(step, exchange)
        return step, None
    return await apply_transition(flow, step, transition, exchange, RunFrame(step))


def _held_messages(step: Step, approval: dict[str, Any]) -> list[BaseMessage]:
    """What the user wrote while the approval waited, in order, after the call's result.

    The waiting replies stay out: they said nothing, and a history that ended with one would
    read as the start of the model's own answer to some providers.
    """
    return [
        HumanMessage(entry["text"], id=step.gen_message_id())
        for entry in approval.get("held") or []
    ]


async def continue_step(flow: Flow, step: Step, ctx: TurnContext) -> str:
    """The model of `step` answers from where the history stands now (step 3)."""
    run = RunFrame(step)
    token = FRAME.set(run)
    try:
        return (await run_loop(flow, step, ctx, run)).text
    finally:
        FRAME.reset(token)


def lease_over(approval: dict[str, Any], lease: float) -> bool:
    """Whether a `running` record's resolver has had its time (it is presumed gone)."""
    stamp = approval.get("resolved_at")
    if not stamp:
        return True
    started = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return (datetime.now(UTC) - started).total_seconds() >= lease
