"""`GET /ai/stream/{turn}`: the rest of a streamed turn, for a client whose connection dropped.

The client sends the id of the last event it got in `Last-Event-ID` (EventSource does so by
itself when it reconnects) and gets every event after it, then the live rest while the turn
still runs, then `done`. A turn running on this worker is followed in memory; one running on
another worker (or already over) is read from the store, which is polled until `done`.
A client that already has `done` gets 204, which also tells EventSource to stop reconnecting.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request
from fastapi.responses import Response, StreamingResponse

from picoflow.server._auth import principal_of
from picoflow.server._errors import RETRY_AFTER_SECONDS, ApiError
from picoflow.server._headers import REQUEST_ID_HEADER, request_id_for
from picoflow.server._kept import KEEPALIVE, StreamKeeper
from picoflow.server._schemas import ErrorEnvelope
from picoflow.server._stream import STREAM_HEADERS, error_done, sse_frame
from picoflow.stores._streams import KeptStream, is_turn_id

__all__ = ["resume_router", "refuse_resume_by_post"]

LAST_EVENT_ID = "Last-Event-ID"

resume_router = APIRouter()


def refuse_resume_by_post(request: Request) -> None:
    """400 for `POST /ai/stream` with `Last-Event-ID`: a POST runs the turn again."""
    if LAST_EVENT_ID.lower() in request.headers:
        raise ApiError(
            400,
            f"POST /ai/stream runs a new turn, so it takes no {LAST_EVENT_ID} header. To get "
            "the rest of a turn whose stream dropped, send GET /ai/stream/<turn> with that "
            f"header (<turn> is the part of the event id before ':'); to send the message "
            f"again, leave {LAST_EVENT_ID} out.",
            code="invalid_last_event_id",
        )


@resume_router.get(
    "/ai/stream/{turn_id}",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}},
        204: {"description": "The client has every event, `done` included."},
        400: {"model": ErrorEnvelope, "description": "A malformed Last-Event-ID."},
        401: {"model": ErrorEnvelope, "description": "No valid credentials were sent."},
        404: {"model": ErrorEnvelope, "description": "No such stream is kept (or expired)."},
        # Also stops FastAPI from documenting a 422 of its own shape (see _errors).
        422: {"model": ErrorEnvelope, "description": "Can never succeed as sent."},
        "4XX": {"model": ErrorEnvelope, "description": "Any other client error, same envelope."},
    },
    summary="Resume a streamed turn after a dropped connection",
)
async def resume_stream(
    turn_id: str,
    request: Request,
    last_event_id: Annotated[
        str | None,
        Header(
            alias=LAST_EVENT_ID,
            description="The id of the last event received, `<turn>:<n>`; without it, the "
            "stream is sent from its first event.",
        ),
    ] = None,
) -> Response:
    """The events of turn `turn_id` after `Last-Event-ID`, the live rest, then `done`.

    Every event of `POST /ai/stream` has an id `<turn>:<n>`. Streams are kept for
    `create_app(stream_ttl=...)` seconds (600 by default) after their last event.
    """
    settings: Any = request.app.state.picoflow
    principal = await principal_of(request, settings.authorize)
    after = _after(turn_id, last_event_id)
    keeper: StreamKeeper = settings.streams
    headers = {**STREAM_HEADERS, REQUEST_ID_HEADER: request_id_for(request)}
    live = keeper.live.get(turn_id)
    if live is not None and live.owner == principal:
        if live.ended and after >= len(live.frames):
            return Response(status_code=204, headers=headers)
        events = live.follow(after)
    else:
        kept = await keeper.read(turn_id, after) if is_turn_id(turn_id) else None
        if kept is None or kept.owner != principal:  # another's turn is as good as none (H4)
            raise _not_kept(turn_id, keeper.ttl)
        if kept.ended and not kept.events:
            return Response(status_code=204, headers=headers)
        events = _polled(keeper, turn_id, kept, after, request)
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


def _after(turn_id: str, last_event_id: str | None) -> int:
    """The n of `Last-Event-ID` (0 without one), or 400 saying what the header must hold."""
    if last_event_id is None or last_event_id == "":
        return 0
    turn, _, number = last_event_id.strip().rpartition(":")
    if turn == turn_id and number.isdigit() and number.isascii():
        return int(number)
    raise ApiError(
        400,
        f"The {LAST_EVENT_ID} header must be the id of an event of this turn, "
        f"'{turn_id}:<n>', got {last_event_id[:80]!r}. Send the id of the last event you "
        "received, or leave the header out to get the stream from its start.",
        code="invalid_last_event_id",
    )


def _not_kept(turn_id: str, ttl: float) -> ApiError:
    return ApiError(
        404,
        f"No stream of turn '{turn_id}' is kept for you: the id is unknown, or the turn "
        f"ended more than {ttl:g} seconds ago. Its reply, if the turn succeeded, is in the "
        "session: continue the session, or send the message again with the same "
        "Idempotency-Key to get the reply.",
        code="not_found",
    )


async def _polled(
    keeper: StreamKeeper, turn_id: str, kept: KeptStream, after: int, request: Request
) -> AsyncIterator[str]:
    """A turn's kept events, then the store's new ones every `poll_every` s, until `done`.

    A silent stretch of `keepalive_every` seconds sends a keep-alive comment. A turn whose
    writer stopped writing (its worker died, or lost the store) ends with a
    `done` of status 503 `stream_lost`: its reply may never come, so the client sends the
    message again (with the same Idempotency-Key, it gets the reply if the turn was saved).
    """
    stamp, moved = kept.expires_at, time.monotonic()
    quiet = moved  # when this client was last sent anything: a keep-alive is due after a while
    current: KeptStream | None = kept
    while current is not None:
        for after, frame in current.events:  # noqa: B007 - `after` is where the next read starts
            yield frame
            quiet = time.monotonic()
        if current.ended:
            return
        if current.expires_at != stamp:
            stamp, moved = current.expires_at, time.monotonic()
        elif time.monotonic() - moved > keeper.silent_after:
            break
        every = keeper.keepalive_every
        if every is not None and time.monotonic() - quiet >= every:
            yield KEEPALIVE
            quiet = time.monotonic()
        await asyncio.sleep(keeper.poll_every)
        current = await keeper.read(turn_id, after)
    yield sse_frame("done", error_done(_lost(), request))


def _lost() -> ApiError:
    return ApiError(
        503,
        "The turn stopped sending events before it ended: the server running it may have "
        "stopped. Send the same message again with the same Idempotency-Key: if the turn "
        "was saved you get its reply, else it runs again.",
        code="stream_lost",
        retry_after=RETRY_AFTER_SECONDS,
    )
