"""`Step.tool_call_key`: the stable key of the tool call a handler is answering (K5).

The key is `<session id>:<turn>:<call id>`, where the turn is the revision the turn will write.
It is recorded with an approval, so the approved call runs with the key it was asked with, in
whichever process resolves it; a tool passes it to an external system (a payment API's
idempotency key, a booking reference) so that system, too, sees one effect per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["TURN", "IDEMPOTENCY", "call_key", "current_key", "key_scope"]

# The turn being run in this task (set by the hold/resume entry points).
TURN: ContextVar[str | None] = ContextVar("picoflow_turn", default=None)
# The caller's Idempotency-Key for this turn (H5), set by `FlowEngine.run`/`stream`.
IDEMPOTENCY: ContextVar[str | None] = ContextVar("picoflow_idempotency_key", default=None)
_KEY: ContextVar[str | None] = ContextVar("picoflow_tool_call_key", default=None)


def call_key(session_id: str | None, call_id: str) -> str:
    """The key of a call of this turn."""
    return f"{session_id}:{TURN.get() or '0'}:{call_id}"


@contextmanager
def key_scope(key: str) -> Iterator[None]:
    """Make `key` what `Step.tool_call_key` returns while the handler runs."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def current_key(step_name: str) -> str:
    """The key of the call being answered.

    Raises:
        RuntimeError: read outside a tool call.
    """
    key = _KEY.get()
    if key is None:
        raise RuntimeError(
            f"{step_name}.tool_call_key was read outside a tool call. Read it inside a @tool "
            "method, where it names the call being answered."
        )
    return key
