"""A user's turn while a person has the floor: an approval waits (K2) or an operator answers (K6).

Neither calls the model, so nothing can call the waiting tool a second time. While an approval
waits, the message is kept on the approval record (the step's history ends at the waiting call,
whose result must come first) and goes into the history, after that result, when the approval
is resolved. In operator mode it is stored in the step's namespace at once.
"""

from __future__ import annotations

from typing import Any

from picoflow._internal.call_keys import IDEMPOTENCY, turn_scope
from picoflow._internal.people_records import approvals_of, operator_of, pending_of
from picoflow._internal.state import now_iso
from picoflow._runner.loop import run_turn
from picoflow._runner.people.handoff import hold_for_operator
from picoflow._runner.turn import TurnContext
from picoflow.flow import Flow

__all__ = ["run_or_hold", "turn_label", "pending_approvals"]


MAX_HELD = 20  # messages kept per waiting approval; the model reads them once it is resolved


def turn_label(doc: dict[str, Any]) -> str:
    """The turn part of `tool_call_key`: the caller's idempotency key, else the revision."""
    return IDEMPOTENCY.get() or str(int(doc.get("revision", 0)) + 1)


async def run_or_hold(flow: Flow, message: str, ctx: TurnContext, doc: dict[str, Any]) -> str:
    """Run the turn, unless a person has the floor; return the reply.

    A retried keyed turn never gets here: the engine replays the result it saved with the
    first run (`_idempotent`, O4), the one record of a keyed turn, so the tool it called is not
    called again (K5) in this engine or any other.
    """
    if message and operator_of(flow._session) is not None:
        return hold_for_operator(flow, message)
    pending = pending_of(flow._session)
    if message and pending:
        return await _hold_for_approval(flow, message, pending)
    with turn_scope(turn_label(doc)):
        return await run_turn(flow, message, ctx)


async def _hold_for_approval(flow: Flow, message: str, pending: list[dict[str, Any]]) -> str:
    step = flow.current_step
    answer = await flow._call_hook(step.on_message_while_pending, message, pending)
    reply = answer if isinstance(answer, str) and answer else _still_waiting(pending)
    live = next(a for a in approvals_of(flow._session) if a["id"] == pending[0]["id"])
    held = live.setdefault("held", [])
    held.append({"text": message, "reply": reply, "at": now_iso()})
    del held[:-MAX_HELD]  # a guest who keeps writing cannot grow the session without bound
    return reply


def _still_waiting(pending: list[dict[str, Any]]) -> str:
    tools = ", ".join(sorted({a["tool"] for a in pending}))
    return (
        f"I'm still waiting for a person to approve {tools}. I'll continue as soon as it is "
        "decided; what you wrote is noted."
    )


def pending_approvals(flow: Flow) -> list[dict[str, Any]]:
    """What `TurnResult.pending_approvals` lists after a turn (K1, K4)."""
    return pending_of(flow._session)
