"""`POST /ai/stream`: a turn's events as Server-Sent Events.

Each `StreamEvent` becomes one SSE event whose name is the event kind (`token`, `tool_call`,
`step_changed`, `compaction`, `done`) and whose data is one line of JSON. The last event is
always `done`, carrying the same envelope `POST /ai/run` answers with plus the `status` it would
have used, so a client needs one code path for both routes.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from contextlib import aclosing
from typing import Any, cast

from fastapi import Request

from picoflow.engine import StreamEvent, TurnResult
from picoflow.server._errors import ApiError, turn_error
from picoflow.server._headers import request_id_for
from picoflow.server._idempotency import Claim
from picoflow.server._kept import LiveTurn, StreamKeeper, beat_while_silent, event_id
from picoflow.server._lifecycle import RunningTurns
from picoflow.server._schemas import StreamDone, envelope_of

__all__ = [
    "STREAM_HEADERS",
    "sse_frame",
    "idempotent_events",
    "replayed_events",
    "done_payload",
    "error_done",
]

# No caching, and no buffering in nginx (X-Accel-Buffering), or tokens arrive all at once.
STREAM_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}

Payload = tuple[str, dict[str, Any]]  # (event name, data)


def sse_frame(kind: str, data: dict[str, Any], event_id: str | None = None) -> str:
    r"""One SSE event. JSON escapes newlines, so the data always fits on one `data:` line.

    The `id:` line comes last (any order is valid SSE), so clients that read the event name
    from the first line and the data from the second keep working.

    >>> sse_frame("token", {"text": "Hi"})
    'event: token\ndata: {"text": "Hi"}\n\n'
    >>> sse_frame("token", {"text": "Hi"}, "T0k3nTurnId:1")
    'event: token\ndata: {"text": "Hi"}\nid: T0k3nTurnId:1\n\n'
    """
    text = f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n"
    return f"{text}id: {event_id}\n\n" if event_id is not None else f"{text}\n"


def idempotent_events(
    events: AsyncIterator[StreamEvent],
    request: Request,
    flow_name: str,
    claim: Claim | None,
    turns: RunningTurns | None,
    keeper: StreamKeeper,
    owner: str | None,
) -> AsyncIterator[str]:
    """Encode a turn read by a task of its own, whose result its retries wait for (H5).

    The task starts now: the first request's result reaches its retries (`claim`) even if this
    client leaves, or goes before it reads a single event, and `turns` counts the turn until
    its end, so a shutdown waits for it (O6). Its events are kept for a client that
    reconnects (O5, `_kept`).
    """
    return _kept_events(_turn_payloads(events, request, flow_name, claim), keeper, owner, turns)


def replayed_events(
    first: asyncio.Future[TurnResult],
    request: Request,
    flow_name: str,
    keeper: StreamKeeper,
    owner: str | None,
) -> AsyncIterator[str]:
    """A retry of an idempotent request: the first request's `done`, once it has one."""
    return _kept_events(_replayed_payloads(first, request, flow_name), keeper, owner, None)


def _kept_events(
    payloads: AsyncGenerator[Payload, None],
    keeper: StreamKeeper,
    owner: str | None,
    turns: RunningTurns | None,
) -> AsyncIterator[str]:
    """Run `payloads` in a task of its own, numbered and kept; this client follows it."""
    if turns is not None:
        turns.enter()
    live, opened = keeper.new_turn(owner)
    keeping = keeper.keep(live, opened)
    task = asyncio.ensure_future(_publish(payloads, live, keeping, turns, keeper.keepalive_every))
    _PUMPS.add(task)  # a task only weakly referenced by the loop could be collected mid-turn
    task.add_done_callback(_PUMPS.discard)
    return _drain(live, opened)


_PUMPS: set[asyncio.Future[None]] = set()


async def _publish(
    payloads: AsyncGenerator[Payload, None],
    live: LiveTurn,
    keeping: Coroutine[Any, Any, None],
    turns: RunningTurns | None,
    keepalive_every: float | None,
) -> None:
    """Number each event, hand it to the clients following the turn and to the keeper.

    While the turn is silent its followers send keep-alive comments (`beat_while_silent`).
    """
    kept = asyncio.ensure_future(keeping)
    beating = None if keepalive_every is None else beat_while_silent(live, keepalive_every)
    beats = None if beating is None else asyncio.ensure_future(beating)
    try:
        async with aclosing(payloads):
            async for kind, data in payloads:
                frame = sse_frame(kind, data, event_id(live.turn_id, len(live.frames) + 1))
                live.add(frame, last=kind == "done")
    finally:
        live.end()
        if beats is not None:
            beats.cancel()
        try:
            await kept  # the last batch is written before a shutdown may close the store
        finally:
            if turns is not None:
                turns.leave()


async def _turn_payloads(
    events: AsyncIterator[StreamEvent], request: Request, flow_name: str, claim: Claim | None
) -> AsyncGenerator[Payload, None]:
    generator = cast(AsyncGenerator[StreamEvent, None], events)
    try:
        async with aclosing(generator):
            async for event in generator:
                if claim is not None and event.kind == "done" and event.result is not None:
                    claim.finish(event.result)
                if event.kind == "done" and event.result is not None:
                    yield "done", done_payload(event.result, request, flow_name)
                else:
                    yield event.kind, event.data
    finally:
        if claim is not None:
            claim.abandon()  # does nothing once finished


async def _replayed_payloads(
    first: asyncio.Future[TurnResult], request: Request, flow_name: str
) -> AsyncGenerator[Payload, None]:
    try:
        result = await asyncio.shield(first)
    except ApiError as error:  # the first request ended without a result
        yield "done", error_done(error, request)
        return
    yield "done", done_payload(result, request, flow_name)


async def _drain(live: LiveTurn, opened: asyncio.Future[bool]) -> AsyncIterator[str]:
    """The first client's events; the first waits until its id is in the store."""
    await asyncio.wait([opened])  # never cancels the write when this client leaves
    async for frame in live.follow(0):
        yield frame


def done_payload(result: TurnResult, request: Request, flow_name: str) -> dict[str, Any]:
    """The `done` event's data: the envelope and the status `/ai/run` would have answered.

    A failure carries its code and request id, never the internals (H2).
    """
    if result.success:
        envelope = envelope_of(result)
        return StreamDone(**envelope.model_dump(), status=200).to_wire()
    return error_done(turn_error(result, request, flow_name), request)


def error_done(error: ApiError, request: Request) -> dict[str, Any]:
    envelope = error.envelope(request_id_for(request))
    return StreamDone(**envelope.model_dump(), status=error.status).to_wire()
