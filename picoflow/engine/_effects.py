"""A turn that fails after a tool with effects ran is saved up to that tool's result (K8).

Without this, the turn's failure (a budget refused the next model call, the deadline passed, the
model failed) left the session as it was (P3) while the world had changed: the client retried,
and the tool ran again, once per retry. So once an effect is recorded, the failure no longer
discards the turn: the history keeps the call and its result, the session's `effects` keep the
record, and a closing reply says what was done and why the turn stopped. The turn still fails
(`success=False`, `error` as before), but its `session_id`, `step` and `effects` are real, and an
idempotent retry replays it instead of running it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from langchain_core.messages import AIMessage

from picoflow._internal.effects import describe, turn_effects
from picoflow._runner.turn import append_message
from picoflow.errors import BudgetExceeded, StoreError
from picoflow.flow import Flow

__all__ = ["Stopped", "reply_keeping_effects"]

logger = logging.getLogger("picoflow.engine")


@dataclass(frozen=True, slots=True)
class Stopped:
    """Why a turn with effects stopped: its `TurnResult.error` and the reason in words."""

    error: str
    reason: str


async def reply_keeping_effects(
    flow: Flow,
    run: Callable[[], Awaitable[str]],
    deadline: asyncio.Timeout,
    timeout_error: str,
) -> tuple[str, Stopped | None]:
    """The turn's reply; or, when it failed after an effect, the closing reply and why (K8).

    A failure before any effect, or a cancellation that is not the turn's own deadline (the
    server shutting down, a client's task), propagates as before: nothing was done.
    """
    try:
        return await run(), None
    except asyncio.CancelledError:
        if not deadline.expired() or not turn_effects(flow._session):
            raise
        stopped = Stopped(timeout_error, "the turn reached its deadline")
    except Exception as exc:
        if not turn_effects(flow._session):
            raise
        stopped = Stopped(_error_name(exc), _reason(exc))
    logger.warning(
        "turn stopped after a tool with effects ran (%s); saving it up to that result",
        stopped.error,
        extra={"session_id": flow.get_session_id()},
    )
    return _closing(flow, stopped), stopped


def _reason(exc: Exception) -> str:
    """Why, in words for the person reading the reply (the error's own text says "not changed")."""
    if isinstance(exc, BudgetExceeded):
        return f"its next model call would pass the {exc.budget} budget of {exc.limit}"
    return f"of an error ({type(exc).__name__})"


def _error_name(exc: Exception) -> str:
    if isinstance(exc, StoreError) and not exc.retryable:
        return "StoreRefused"
    return type(exc).__name__


def _closing(flow: Flow, stopped: Stopped) -> str:
    """The reply of a stopped turn, kept in the step's history so the next model reads it."""
    done = "; ".join(describe(e) for e in turn_effects(flow._session))
    text = (
        f"Done before this turn stopped: {done.rstrip('.')}. The turn stopped there because "
        f"{stopped.reason.rstrip('.')}. What was done is saved; nothing more was done."
    )
    append_message(flow.current_step, AIMessage(text, additional_kwargs={"stopped": True}))
    return text
