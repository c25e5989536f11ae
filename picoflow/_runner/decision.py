"""A decision round of the step loop: decide, then route on `on_decision`'s answer (D1, D2).

The round is the sibling of a logic round: the step makes no model call, and its answer is
followed in the same turn, so a `go(...)` runs the destination (another decision step
included) before the turn replies. A failed decision goes to `on_decision_error`, the step's
and then the flow's; when both return None the `DecisionError` fails the turn, and since a
failed turn saves nothing, nothing of the decision is half-saved.
"""

from __future__ import annotations

from typing import Any

from picoflow._runner.decision_call import Decided, decide
from picoflow._runner.respond import Reply
from picoflow._runner.turn import RunFrame, TurnContext, apply_transition
from picoflow.decisions._provider import DecisionErrorContext
from picoflow.errors import DecisionError, FlowDefinitionError
from picoflow.flow import Flow
from picoflow.step import Step
from picoflow.step._decision import DecisionStep
from picoflow.transitions import ToolResult, direct, go

__all__ = ["decision_round"]


async def decision_round(
    flow: Flow, step: DecisionStep, ctx: TurnContext, run: RunFrame
) -> tuple[Step, Reply | None]:
    """Decide, follow the answer, and report the decision to the stream (D1)."""
    decided: Decided | None = None
    try:
        decided = await decide(flow, step, ctx)
    except DecisionError as error:
        outcome = await _recovered(flow, step, error)
        hook = "on_decision_error"
    else:
        outcome = await flow._call_hook(step.on_decision, decided.answers, decided.context)
        hook = "on_decision"
    destination, text = await apply_transition(
        flow, step, _transition(step, hook, outcome), [], run
    )
    if ctx.emit is not None:
        answers = None if decided is None else {k: a.to_json() for k, a in decided.answers.items()}
        ctx.emit(
            "decision",
            {
                "step": step.name,
                "answers": answers,
                "route": destination.name,
                "recovered": decided is None,
            },
        )
        if destination is not step:
            ctx.emit("step_changed", {"from": step.name, "to": destination.name})
    return destination, None if text is None else Reply(text, text)


async def _recovered(flow: Flow, step: DecisionStep, error: DecisionError) -> Any:
    """The step's `on_decision_error`, else the flow's; both None: the error fails the turn."""
    context = DecisionErrorContext(step.name, error.provider, error.model, error.cause or error)
    outcome = await flow._call_hook(step.on_decision_error, context)
    if outcome is None:
        outcome = await flow._call_hook(flow.on_decision_error, step, context)
    if outcome is None:
        raise error
    return outcome


def _transition(step: DecisionStep, hook: str, outcome: Any) -> ToolResult:
    """What a decision hook returned, as the transition the round applies."""
    if isinstance(outcome, str):
        return direct(outcome)
    if isinstance(outcome, type) and issubclass(outcome, Step):
        return go(outcome)
    if isinstance(outcome, ToolResult) and outcome.kind not in ("stay", "handoff"):
        if outcome.kind == "finish" and outcome.text is None:
            raise FlowDefinitionError(
                f"{step.name}.{hook}() returned finish() without a text; a decision step has "
                "no model to say a closing line. Pass the reply: finish('Thank you, goodbye.')."
            )
        return outcome
    raise FlowDefinitionError(
        f"{step.name}.{hook}() returned {outcome!r}. Return a reply text, a Step class, "
        "go(Step), direct(text) or finish(text)."
    )
