"""`GET /ai-sdk/{flowName}/{chatId}/stream`: the AI SDK's reconnect to a running stream (O5).

`useChat({resume: true})` (the `ai` package's `DefaultChatTransport.reconnectToStream`) asks
this URL when a page loads, to pick up a reply that was still streaming when the page went
away. Every `POST /ai-sdk/...` response is kept like `/ai/stream`'s (`StreamKeeper`), and the
chat's newest kept stream is recorded under its owner (`_ids`): a stream still running is sent
from its first chunk, with the rest as it comes, from this worker's memory or from the store;
when nothing runs, the answer is 204, which the SDK reads as "nothing to resume".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from picoflow.server._headers import REQUEST_ID_HEADER, request_id_for
from picoflow.server._kept import StreamKeeper
from picoflow.server._stream import STREAM_HEADERS
from picoflow.server.protocols._ai_sdk import UI_STREAM_HEADER
from picoflow.server.protocols._common import RESPONSES, open_call
from picoflow.server.protocols._ids import ThreadBindings, check_client_id
from picoflow.stores._streams import KeptStream

__all__ = ["ai_sdk_resume_router"]

ai_sdk_resume_router = APIRouter()


@ai_sdk_resume_router.get(
    "/ai-sdk/{flow_name}/{chat_id}/stream",
    response_class=StreamingResponse,
    responses={**RESPONSES, 204: {"description": "No reply of this chat is streaming."}},
    summary="Reconnect to the chat's running reply (useChat's resume)",
)
async def reconnect(flow_name: str, chat_id: str, request: Request) -> Response:
    """The running reply's chunks from the first, then the rest as they come; or 204."""
    settings, principal = await open_call(request)
    chat = check_client_id(chat_id, "chatId")
    headers = {**STREAM_HEADERS, **UI_STREAM_HEADER, REQUEST_ID_HEADER: request_id_for(request)}
    keeper: StreamKeeper = settings.streams
    turn_id = await ThreadBindings(keeper.store).newest_stream(principal, flow_name, chat)
    if turn_id is None:
        return Response(status_code=204, headers=headers)
    live = keeper.live.get(turn_id)
    if live is not None and live.owner == principal:
        if live.ended:
            return Response(status_code=204, headers=headers)
        events = live.follow(0)
    else:
        kept = await keeper.read(turn_id, 0)
        if kept is None or kept.ended or kept.owner != principal:
            return Response(status_code=204, headers=headers)
        events = _polled(keeper, turn_id, kept)
    return StreamingResponse(events, media_type="text/event-stream", headers=headers)


async def _polled(keeper: StreamKeeper, turn_id: str, kept: KeptStream) -> AsyncIterator[str]:
    """A stream running on another worker: what the store has, then its new chunks, polled.

    A writer silent for longer than the keeper allows (its worker stopped) ends the stream
    without `[DONE]`, which the SDK reports as an error: the message is then sent again.
    """
    after, stamp, moved = 0, kept.expires_at, time.monotonic()
    current: KeptStream | None = kept
    while current is not None:
        for after, frame in current.events:  # noqa: B007 - `after` is where the next read starts
            yield frame
        if current.ended:
            return
        if current.expires_at != stamp:
            stamp, moved = current.expires_at, time.monotonic()
        elif time.monotonic() - moved > keeper.silent_after:
            return
        await asyncio.sleep(keeper.poll_every)  # polling the store, as GET /ai/stream/{turn}
        current = await keeper.read(turn_id, after)
