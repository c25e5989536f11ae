"""`POST /ai/stream`: a turn's events as Server-Sent Events.

Each `StreamEvent` becomes one SSE event whose name is the event kind (`token`, `tool_call`,
`step_changed`, `compaction`, `done`) and whose data is one line of JSON. The last event is
always `done`, carrying the same envelope `POST /ai/run` answers with plus the `status` it would
have used, so a client needs one code path for both routes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

from fastapi import Request

from ..engine import StreamEvent, TurnResult
from ._errors import ApiError, turn_error
from ._headers import request_id_for
from ._idempotency import Claim
from ._lifecycle import RunningTurns
from ._schemas import StreamDone, envelope_of

__all__ = ["STREAM_HEADERS", "sse_frame", "idempotent_events", "replayed_events"]

# No caching, and no buffering in nginx (X-Accel-Buffering), or tokens arrive all at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse_frame(kind: str, data: dict[str, Any]) -> str:
    r"""One SSE event. JSON escapes newlines, so the data always fits on one `data:` line.

    >>> sse_frame("token", {"text": "Hi"})
    'event: token\ndata: {"text": "Hi"}\n\n'
    """
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n"


def idempotent_events(
    events: AsyncIterator[StreamEvent],
    request: Request,
    flow_name: str,
    claim: Claim | None,
    turns: RunningTurns | None = None,
) -> AsyncIterator[str]:
    """Encode a turn read by a task of its own, whose result its retries wait for (H5).

    The task starts now: the first request's result reaches its retries (`claim`) even if this
    client leaves, or goes before it reads a single event, and `turns` counts the turn until
    its end, so a shutdown waits for it (O6).
    """
    queue: asyncio.Queue[StreamEvent | None] = asyncio.Queue()
    if turns is not None:
        turns.enter()
    task = asyncio.ensure_future(_pump(events, queue, claim, turns))
    _PUMPS.add(task)  # a task only weakly referenced by the loop could be collected mid-turn
    task.add_done_callback(_PUMPS.discard)
    return _drain(queue, request, flow_name)


_PUMPS: set[asyncio.Future[None]] = set()


async def _pump(
    events: AsyncIterator[StreamEvent],
    queue: asyncio.Queue[StreamEvent | None],
    claim: Claim | None,
    turns: RunningTurns | None,
) -> None:
    generator = cast(AsyncGenerator[StreamEvent, None], events)
    try:
        async with aclosing(generator):
            async for event in generator:
                if claim is not None and event.kind == "done" and event.result is not None:
                    claim.finish(event.result)
                queue.put_nowait(event)
    finally:
        if claim is not None:
            claim.abandon()  # does nothing once finished
        if turns is not None:
            turns.leave()
        queue.put_nowait(None)


async def _drain(
    queue: asyncio.Queue[StreamEvent | None], request: Request, flow_name: str
) -> AsyncIterator[str]:
    while (event := await queue.get()) is not None:
        yield _frame(event, request, flow_name)


def _frame(event: StreamEvent, request: Request, flow_name: str) -> str:
    if event.kind == "done" and event.result is not None:
        return sse_frame("done", done_payload(event.result, request, flow_name))
    return sse_frame(event.kind, event.data)


async def replayed_events(
    first: asyncio.Future[TurnResult], request: Request, flow_name: str
) -> AsyncIterator[str]:
    """A retry of an idempotent request: the first request's `done`, once it has one."""
    try:
        result = await asyncio.shield(first)
    except ApiError as error:  # the first request ended without a result
        yield sse_frame("done", _error_done(error, request))
        return
    yield sse_frame("done", done_payload(result, request, flow_name))


def done_payload(result: TurnResult, request: Request, flow_name: str) -> dict[str, Any]:
    """The `done` event's data: the envelope and the status `/ai/run` would have answered.

    A failure carries its code and request id, never the internals (H2).
    """
    if result.success:
        envelope = envelope_of(result)
        return StreamDone(**envelope.model_dump(), status=200).to_wire()
    return _error_done(turn_error(result, request, flow_name), request)


def _error_done(error: ApiError, request: Request) -> dict[str, Any]:
    envelope = error.envelope(request_id_for(request))
    return StreamDone(**envelope.model_dump(), status=error.status).to_wire()
