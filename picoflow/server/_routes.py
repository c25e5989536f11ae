"""The routes of PicoFlow's HTTP contract, plus streaming and the chat page.

Routes read the engine and limits from `app.state.picoflow` (set by `create_app`), so one module
serves any number of apps. Failures are raised as `ApiError` and rendered by `_errors`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from ..engine import FlowEngine
from ..session import is_session_id
from ._errors import ApiError, turn_error
from ._headers import SESSION_HEADER, SESSION_HEADER_ALT, session_headers
from ._schemas import EndEnvelope, ErrorEnvelope, Health, RunEnvelope, RunRequest, envelope_of
from ._stream import STREAM_HEADERS, sse_events

__all__ = ["router", "ServerSettings", "STATIC_DIR"]

STATIC_DIR = Path(__file__).parent / "static"

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "Bad request: fix it before retrying."},
    409: {"model": ErrorEnvelope, "description": "Another request saved the session first."},
    413: {"model": ErrorEnvelope, "description": "The message is too long."},
    500: {"model": ErrorEnvelope, "description": "A bug; `requestId` names the log entry."},
    503: {"model": ErrorEnvelope, "description": "The session store is unavailable."},
    # Also stops FastAPI from documenting a 422 this API never sends (see _errors).
    "4XX": {"model": ErrorEnvelope, "description": "Any other client error, same envelope."},
}


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What the routes need from `create_app`."""

    engine: FlowEngine
    max_message_chars: int


def _settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.picoflow
    return settings


def _session_id(
    chat_session_id: Annotated[
        str | None,
        Header(
            alias=SESSION_HEADER,
            convert_underscores=False,
            description="The session to continue; omit it (or send '') to start a new one.",
        ),
    ] = None,
    chat_session_id_alt: Annotated[
        str | None,
        Header(
            alias=SESSION_HEADER_ALT,
            description=f"Same as {SESSION_HEADER}, for proxies that drop underscore headers.",
        ),
    ] = None,
) -> str | None:
    """The session id the client sent, or None to start a new session.

    An empty header means "no session yet": some clients always send it, empty on turn one.
    """
    first, second = chat_session_id or None, chat_session_id_alt or None
    if first and second and first != second:
        raise ApiError(
            400,
            f"The {SESSION_HEADER} and {SESSION_HEADER_ALT} headers name different sessions "
            f"('{first}' and '{second}'). Send the session id in one of them.",
        )
    session_id = first or second
    if session_id is not None and not is_session_id(session_id):
        raise ApiError(
            400,
            f"The {SESSION_HEADER} header is not a session id this server issued. Send the "
            "`session` value of an earlier reply, or omit the header to start a new session.",
        )
    return session_id


Settings = Annotated[ServerSettings, Depends(_settings)]
SessionId = Annotated[str | None, Depends(_session_id)]
router = APIRouter()


def _check_turn(settings: ServerSettings, body: RunRequest, session_id: str | None) -> None:
    """Refuse a turn that cannot run before anything streams, so it gets a real status."""
    names = settings.engine.flow_names()
    if body.flow_name not in names:
        raise ApiError(
            400,
            f"Unknown flow {body.flow_name!r}. Registered flows: {', '.join(names) or 'none'} "
            "(GET /ai/flows lists them).",
            session=session_id,
        )
    if len(body.message) > settings.max_message_chars:
        raise ApiError(
            413,
            f"The message has {len(body.message)} characters; this server accepts at most "
            f"{settings.max_message_chars}. Shorten it or send it over several turns.",
            session=session_id,
        )


@router.post(
    "/ai/run",
    response_model=RunEnvelope,
    responses={
        **_ERRORS,
        200: {
            "content": {"text/markdown": {}},
            "description": "The envelope; or the raw reply, with its own media type, when "
            "the turn set a content type other than text/plain.",
        },
    },
    summary="Run one turn",
)
async def run_turn(
    body: RunRequest, request: Request, settings: Settings, session_id: SessionId
) -> Response:
    """Run one turn of a flow. Keep the returned session id and send it with the next turn."""
    _check_turn(settings, body, session_id)
    result = await settings.engine.run(body.flow_name, body.message, session_id, body.config)
    if not result.success:
        raise turn_error(result, request, body.flow_name)
    headers = session_headers(result.session_id)
    if result.content_type.split(";")[0].strip().lower() != "text/plain":
        return Response(result.message, media_type=result.content_type, headers=headers)
    return JSONResponse(envelope_of(result).to_wire(), headers=headers)


@router.post(
    "/ai/stream",
    response_class=StreamingResponse,
    responses={**_ERRORS, 200: {"content": {"text/event-stream": {}}}},
    summary="Run one turn, streaming its events",
)
async def stream_turn(
    body: RunRequest, request: Request, settings: Settings, session_id: SessionId
) -> StreamingResponse:
    """Run one turn as Server-Sent Events: token, tool_call, step_changed, compaction, done.

    The `done` event carries the `/ai/run` envelope plus `status`. The session header is set
    when the request continues a running session; a new session's id is in `done`.
    """
    _check_turn(settings, body, session_id)
    headers = dict(STREAM_HEADERS)
    if session_id is not None:
        doc = await settings.engine.get_session(session_id)
        if doc is not None and doc.get("run_status") == "running":
            headers.update(session_headers(session_id))
    events = settings.engine.stream(body.flow_name, body.message, session_id, body.config)
    return StreamingResponse(
        sse_events(events, request, body.flow_name),
        media_type="text/event-stream",
        headers=headers,
    )


@router.post("/ai/end", response_model=EndEnvelope, responses=_ERRORS, summary="End a session")
async def end_session(settings: Settings, session_id: SessionId) -> JSONResponse:
    """Delete the session named by the header. Ending an unknown session also succeeds."""
    if session_id is None:
        raise ApiError(
            400, f"Send the session to end in the {SESSION_HEADER} header; none was sent."
        )
    existed = await settings.engine.end_session(session_id)
    message = "The session was ended." if existed else "There was no such session to end."
    body = EndEnvelope(success=True, session=session_id, message=message)
    return JSONResponse(body.to_wire())


@router.get("/ai/flows", response_model=list[str], summary="List the flows")
async def list_flows(settings: Settings) -> list[str]:
    """The names to use as `flowName`, in registration order."""
    return settings.engine.flow_names()


@router.get("/healthcheck", response_model=Health, summary="Liveness check")
async def healthcheck() -> dict[str, Any]:
    """Answer while the process serves requests; it does not touch the store."""
    return Health(timestamp=datetime.now(UTC).isoformat()).to_wire()


@router.get("/", include_in_schema=False)
async def chat_page() -> FileResponse:
    """The chat page; its CSS and JS are under /static."""
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")
