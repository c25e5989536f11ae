"""`POST /ai/stream`: a turn's events as Server-Sent Events.

Each `StreamEvent` becomes one SSE event whose name is the event kind (`token`, `tool_call`,
`step_changed`, `compaction`, `done`) and whose data is one line of JSON. The last event is
always `done`, carrying the same envelope `POST /ai/run` answers with plus the `status` it would
have used, so a client needs one code path for both routes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

from fastapi import Request

from ..engine import StreamEvent, TurnResult
from ._errors import turn_error
from ._schemas import StreamDone, envelope_of

__all__ = ["STREAM_HEADERS", "sse_events", "sse_frame"]

# No caching, and no buffering in nginx (X-Accel-Buffering), or tokens arrive all at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_frame(kind: str, data: dict[str, Any]) -> str:
    r"""One SSE event. JSON escapes newlines, so the data always fits on one `data:` line.

    >>> sse_frame("token", {"text": "Hi"})
    'event: token\ndata: {"text": "Hi"}\n\n'
    """
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


async def sse_events(
    events: AsyncIterator[StreamEvent], request: Request, flow_name: str
) -> AsyncIterator[str]:
    """Encode a turn's events. Closing this generator closes the engine's stream.

    If the client goes away, Starlette closes this generator; the engine still finishes and
    saves the turn (it runs in its own task), so the session is never half-written.
    """
    generator = cast(AsyncGenerator[StreamEvent, None], events)
    async with aclosing(generator):
        async for event in generator:
            if event.kind == "done" and event.result is not None:
                yield sse_frame("done", done_payload(event.result, request, flow_name))
            else:
                yield sse_frame(event.kind, event.data)


def done_payload(result: TurnResult, request: Request, flow_name: str) -> dict[str, Any]:
    """The `done` event's data: the envelope, the would-be status and, on a 500, the request id."""
    if result.success:
        envelope = envelope_of(result)
        return StreamDone(**envelope.model_dump(), status=200).to_wire()
    error = turn_error(result, request, flow_name)
    done = StreamDone(
        success=False,
        completed=False,
        message=error.message,
        session=error.session or "",
        request_id=error.request_id,
        status=error.status,
    )
    return done.to_wire()
