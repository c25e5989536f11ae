"""`Step.tool_call_key`: the stable key of the tool call a handler is answering (K5, K8).

The key is `<session id>:<turn>:<tool>#<n>`: the turn is the caller's idempotency key, else the
revision the turn will write, and `n` counts the calls of that tool in the turn. It is made
from what a retry of the same request repeats, not from the model's call id (a model gives
each response new ids), so a retried turn that calls the same tool again calls it with the
same key, and an external system that takes the key (a payment API's idempotency key, a
booking reference) sees one effect. It is recorded with an approval, so the approved call runs
with the key it was asked with, in whichever process resolves it.

Outside a turn scope (`turn_scope`) a key falls back to `<session id>:<turn>:<call id>`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["TURN", "IDEMPOTENCY", "call_key", "current_key", "key_scope", "turn_scope"]

# The turn being run in this task (set by the hold/resume entry points).
TURN: ContextVar[str | None] = ContextVar("picoflow_turn", default=None)
# The caller's Idempotency-Key for this turn (H5), set by `FlowEngine.run`/`stream`.
IDEMPOTENCY: ContextVar[str | None] = ContextVar("picoflow_idempotency_key", default=None)
_KEY: ContextVar[str | None] = ContextVar("picoflow_tool_call_key", default=None)


# How many calls of each tool this turn has made; one dict per turn, shared with the tasks the
# turn starts (nested runs), so two calls never get one key.
_COUNTS: ContextVar[dict[str, int] | None] = ContextVar("picoflow_call_counts", default=None)


@contextmanager
def turn_scope(label: str) -> Iterator[None]:
    """Run a turn (or a resume) whose calls are keyed by `label` and counted per tool."""
    turn, counts = TURN.set(label), _COUNTS.set({})
    try:
        yield
    finally:
        _COUNTS.reset(counts)
        TURN.reset(turn)


def call_key(session_id: str | None, call_id: str, tool: str | None = None) -> str:
    """The key of a call of this turn: the n-th call of `tool`, else the model's call id."""
    counts = _COUNTS.get()
    if tool is None or counts is None:
        return f"{session_id}:{TURN.get() or '0'}:{call_id}"
    counts[tool] = n = counts.get(tool, 0) + 1
    return f"{session_id}:{TURN.get() or '0'}:{tool}#{n}"


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
