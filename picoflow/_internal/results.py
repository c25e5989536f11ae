"""What a turn returns: `TurnResult`, and the events of a streamed turn (E4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from picoflow._internal.usage import empty_decision_usage, empty_usage

__all__ = ["TurnResult", "StreamEvent"]


@dataclass(frozen=True)
class TurnResult:
    """What one turn produced (E4). Branch on `success`, then read `completed`.

    `error` says why a turn failed, so a server can map it to a status code without parsing the
    message: "InvalidRequest" for a request that cannot run as sent (E2: unknown flow, invalid
    session id, empty message on a running session, a session of another flow), "StoreRefused"
    for a `StoreError` that retrying can never fix (`retryable=False`), otherwise the
    name of the error class (e.g. "SessionConflictError", "ToolLoopError", or "KeyError" for an
    exception that escaped flow code), or "TurnTimeout" for a turn stopped at the engine's
    `turn_timeout` (nothing was saved; the same message may be sent again).
    `pending_approvals` lists the tool calls that wait for a person after this turn (K1).
    A turn that failed after a tool with effects ran was saved up to that tool's result (K8):
    its `error` says why it stopped, `message` what was done, and `effects` lists what.
    """

    session_id: str | None
    message: str
    success: bool
    completed: bool
    step: str | None
    content_type: str = "text/plain"
    warnings: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=empty_usage)
    error: str | None = None
    pending_approvals: list[dict[str, Any]] = field(default_factory=list)  # K1
    replayed: bool = False  # O4: the first result of this idempotency key, not a new turn
    # K8: what tools with effects did in this turn (records as in the session's `effects`). A
    # failed turn with effects was saved up to them: its `session_id` and `step` are real.
    effects: list[dict[str, Any]] = field(default_factory=list)
    # D3: this turn's decision calls and tokens, apart from the chat `usage`.
    decision_usage: dict[str, int] = field(default_factory=empty_decision_usage)


@dataclass(frozen=True)
class StreamEvent:
    """One event of `FlowEngine.stream`.

    `kind` is "token" (`data["text"]`, reply text as it arrives), "retract" (`step`, `text`: a
    model call failed, or came back empty, after streaming `text`; take it back from the end
    of the token text), "tool_call" (`name`, `args`, `step`), "step_changed"
    (`from`, `to`), "logic_step" (`step`, `parent`: a logic step ran), "nested_start" /
    "nested_end" (`step`, `parent`, `depth`: a nested run began or returned), "compaction"
    (`namespace`, `outcome`), "decision" (`step`, `answers`, `route`, `recovered`: a decision
    step decided, D1) or "done" (`result` holds the TurnResult; always the last event).
    """

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    result: TurnResult | None = None
