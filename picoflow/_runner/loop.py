"""The step loop: run the current step until there is a reply, within `max_tool_rounds`.

Each round is one of three things. A logic step (V1) runs its `run_logic()` and the loop
follows its transition; a decision step (D1) asks its provider and follows `on_decision`. A
model step calls its model (with V9 retries), then either settles the answer
(V4/V5) or answers the tool calls (R6, V6) and applies the transition (R4, V7). The same loop
runs the turn (`run_turn`) and every nested run of a child step (V2), which differs only in that
it must not move the cursor (`RunFrame.depth > 0`).
"""

from __future__ import annotations

from functools import partial

from langchain_core.messages import HumanMessage

from picoflow._runner.decision import decision_round
from picoflow._runner.groups import answer_calls
from picoflow._runner.llm_hooks import blocked_reason
from picoflow._runner.model_call import call_model
from picoflow._runner.people.gate import gate_calls
from picoflow._runner.respond import Reply, is_plain, recover, respond, settle_blocked, take_final
from picoflow._runner.turn import (
    RunFrame,
    TurnContext,
    append_message,
    apply,
    apply_transition,
    message_text,
    tools_of,
)
from picoflow.errors import ToolLoopError
from picoflow.flow import Flow
from picoflow.models._retries import ModelCallError
from picoflow.step import Step
from picoflow.step._decision import DecisionStep
from picoflow.step._frame import FRAME
from picoflow.step._logic import LogicStep, check_logic_result
from picoflow.step._run import overrides_run, run_part

__all__ = ["FRAME", "run_turn", "run_loop"]

# FRAME (the run in progress in this task) lives in `_frame`, a leaf the flow can read.


async def run_turn(
    flow: Flow, message: str | None, ctx: TurnContext, *, wrapped: bool = False
) -> str:
    """Run the current step until it replies; return the reply text (R3-R7, V1-V9)."""
    step = flow.current_step
    if not wrapped and overrides_run(step):  # U3: the step's run() wraps its part of the turn
        return str(await run_part(step, message, partial(run_turn, flow, ctx=ctx, wrapped=True)))
    if message:
        human = HumanMessage(message, id=step.gen_message_id())
        if isinstance(step, LogicStep):
            step.incoming_message = human
        else:
            append_message(step, human)
    run = RunFrame(step)
    token = FRAME.set(run)
    try:
        return (await run_loop(flow, step, ctx, run)).text
    finally:
        FRAME.reset(token)


async def run_loop(flow: Flow, step: Step, ctx: TurnContext, run: RunFrame) -> Reply:
    """Rounds until a reply; more than `max_tool_rounds` of them is a ToolLoopError (R7, V1)."""
    logic_rounds = 0
    for _ in range(flow.max_tool_rounds):
        if step is not run.step:
            run.step = step
            run.scratch.clear()  # a rejected answer belongs to the step that gave it
            run.fallback = None  # and a retry_with_model fallback to the step that chose it (D4)
        if isinstance(step, LogicStep):
            logic_rounds += 1
            step, reply = await _logic_round(flow, step, ctx, run)
        elif isinstance(step, DecisionStep):  # D1: decided in this turn, no model call
            step, reply = await decision_round(flow, step, ctx, run)
        else:
            step, reply = await _model_round(flow, step, ctx, run)
        if reply is not None:
            return reply
    raise _loop_error(flow, step, logic_rounds)


async def _model_round(
    flow: Flow, step: Step, ctx: TurnContext, run: RunFrame
) -> tuple[Step, Reply | None]:
    tools = tools_of(step, ctx)  # what the model is offered is what its calls may use
    try:
        reply, malformed = await call_model(step, tools, ctx, run)
    except ModelCallError as error:
        return await recover(flow, step, error, run)
    reason = blocked_reason(reply)
    if reason is not None:  # U4: a refusal goes to on_llm_blocked first
        handled = await settle_blocked(flow, step, reply, reason, run)
        if handled is not None:
            return handled
    if not reply.tool_calls:
        if is_plain(step):
            append_message(step, reply)
            said = message_text(reply)
            return step, Reply(said, said)
        return await respond(flow, step, reply, run)
    if step.output_schema is not None:
        final = await take_final(flow, step, reply, run)
        if final is not None:
            return final
    run.scratch.clear()  # the model acted on the feedback; the exchange is stored from here on
    waiting = await gate_calls(flow, step, tools, reply, ctx, run, malformed)  # K1
    if waiting is not None:
        return step, Reply(waiting, waiting)
    outcomes = await answer_calls(step, tools, reply, ctx, malformed)
    destination, text = await apply(flow, step, reply, outcomes, run)
    if ctx.emit is not None and destination is not step:
        ctx.emit("step_changed", {"from": step.name, "to": destination.name})
    return destination, None if text is None else Reply(text, text)


async def _logic_round(
    flow: Flow, step: LogicStep, ctx: TurnContext, run: RunFrame
) -> tuple[Step, Reply | None]:
    """Run a logic step and follow its transition in the same turn (V1)."""
    if ctx.emit is not None:
        ctx.emit("logic_step", {"step": step.name, "parent": run.parent})
    incoming = step.incoming_message
    try:
        result = check_logic_result(step, await step.run_logic())
    finally:
        step.incoming_message = None
    destination, text = await apply_transition(flow, step, result, [], run, incoming)
    if ctx.emit is not None and destination is not step:
        ctx.emit("step_changed", {"from": step.name, "to": destination.name})
    return destination, None if text is None else Reply(text, text)


def _loop_error(flow: Flow, step: Step, logic_rounds: int) -> ToolLoopError:
    rounds = flow.max_tool_rounds
    if logic_rounds * 2 < rounds:
        return ToolLoopError(flow.name, step.name, rounds)
    return ToolLoopError(
        flow.name,
        step.name,
        rounds,
        message=(
            f"{flow.name} ran {rounds} rounds in one turn, {logic_rounds} of them logic steps, "
            f"without a reply (last at '{step.name}'); the limit is max_tool_rounds. The "
            "session was left as it was before the turn; check the logic steps for a cycle "
            "(A -> B -> A) or raise max_tool_rounds on the flow."
        ),
    )
