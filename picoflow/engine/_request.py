"""One turn's request, built once by `FlowEngine.run`/`stream`, and who runs it.

A turn's inputs used to travel as seven loose arguments through five functions; every new one
meant touching all five. They travel as one frozen `TurnRequest` now, and a part that needs to
run a turn (keyed runs, `edit_message`) is given a `RunsTurns`, never the engine itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from picoflow._internal.results import TurnResult
from picoflow.stores.base import JSONDict

__all__ = ["Emit", "ReadsSessions", "RunsTurns", "TurnRequest"]

# How a streamed turn reports an event: `emit(kind, data)` (a plain `run` has none).
Emit = Callable[[str, dict[str, Any]], None]


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What a caller asked one turn to do; frozen, because no step of a turn may change it.

    Attributes:
        flow_name: the registered flow the turn runs.
        message: the user's text ("" only starts a new session).
        session_id: the session to continue, or None for a new one (P5).
        config: the new session's config (U2), or None.
        emit: where a streamed turn reports its events (`stream`), or None.
        owner: who runs the turn (H4), or None for a trusted caller.
        edit: the revision whose turn this one replaces (W4, `edit_message`), or None.
    """

    flow_name: str
    message: str
    session_id: str | None = None
    config: dict[str, Any] | None = None
    emit: Emit | None = None
    owner: str | None = None
    edit: int | None = None

    def fingerprint_parts(self) -> tuple[str, str, str | None, dict[str, Any] | None]:
        """What an idempotency key's request is compared by (O4): flow, message, id, config."""
        return (self.flow_name, self.message, self.session_id, self.config)


class RunsTurns(Protocol):
    """Runs one turn of a request; never raises for run failures (`TurnResult.success`)."""

    async def __call__(self, request: TurnRequest) -> TurnResult: ...


class ReadsSessions(Protocol):
    """`FlowEngine.get_session`: the stored document, or None for an unknown or foreign id."""

    async def __call__(self, session_id: str, *, owner: str | None = None) -> JSONDict | None: ...
