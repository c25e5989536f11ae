"""The routes of PicoFlow's HTTP contract, plus streaming and the chat page.

Routes read the engine, the limits and the auth hook from `app.state.picoflow` (set by
`create_app`), so one module serves any number of apps. Failures are raised as `ApiError` and
rendered by `_errors`. Every dependency is `async def`: a plain `def` dependency runs in the
thread pool, which costs more than the work it does.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse

from picoflow.engine import FlowEngine, TurnResult
from picoflow.server._auth import Authorize, principal_of
from picoflow.server._errors import ApiError, turn_error
from picoflow.server._headers import (
    REQUEST_ID_HEADER,
    SESSION_HEADER,
    SESSION_HEADER_ALT,
    request_id_for,
    session_headers,
    wants_raw,
)
from picoflow.server._idempotency import (
    IDEMPOTENCY_HEADER,
    IdempotencyCache,
    check_key,
    fingerprint,
    key_of,
)
from picoflow.server._input_rules import session_header
from picoflow.server._kept import StreamKeeper
from picoflow.server._lifecycle import RunningTurns, store_problem
from picoflow.server._limits import (
    Limits,
    read_optional_body,
    read_run_request,
    refuse_empty_message,
)
from picoflow.server._people_routes import PeopleSettings
from picoflow.server._resume import refuse_resume_by_post
from picoflow.server._schemas import (
    EndEnvelope,
    ErrorEnvelope,
    Health,
    RunEnvelope,
    RunRequest,
    wire_envelope,
)
from picoflow.server._stream import STREAM_HEADERS, idempotent_events, replayed_events

__all__ = ["router", "run_router", "ServerSettings", "STATIC_DIR"]

STATIC_DIR = Path(__file__).parent / "static"

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorEnvelope, "description": "Bad request: fix it before retrying."},
    401: {"model": ErrorEnvelope, "description": "No valid credentials were sent."},
    403: {"model": ErrorEnvelope, "description": "These credentials may not use the API."},
    409: {"model": ErrorEnvelope, "description": "Another request saved the session first."},
    413: {"model": ErrorEnvelope, "description": "The body, message or config is too large."},
    415: {"model": ErrorEnvelope, "description": "The body is not sent as application/json."},
    431: {"model": ErrorEnvelope, "description": "Too many headers, or too large ones."},
    422: {"model": ErrorEnvelope, "description": "Can never succeed as sent; do not retry."},
    500: {"model": ErrorEnvelope, "description": "A bug; `requestId` names the log entry."},
    503: {"model": ErrorEnvelope, "description": "Unavailable for now; see `Retry-After`."},
    # Also stops FastAPI from documenting a 422 of its own shape (see _errors).
    "4XX": {"model": ErrorEnvelope, "description": "Any other client error, same envelope."},
}
# The body is read by `read_run_request` (limits first), so FastAPI does not see a body
# parameter; this documents it for `/docs` all the same (create_app adds the schema).
_RUN_BODY = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunRequest"}}},
    }
}


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """What the routes need from `create_app`."""

    engine: FlowEngine
    limits: Limits
    authorize: Authorize | None = None
    idempotency: IdempotencyCache = field(default_factory=IdempotencyCache)
    people: PeopleSettings = field(default_factory=PeopleSettings)  # K7
    scenario_export: bool = False
    turns: RunningTurns = field(default_factory=RunningTurns)  # O6: what shutdown waits for
    streams: StreamKeeper = field(default_factory=StreamKeeper)  # O5: kept, resumable streams


async def _settings(request: Request) -> ServerSettings:
    settings: ServerSettings = request.app.state.picoflow
    return settings


Settings = Annotated[ServerSettings, Depends(_settings)]


async def _principal(request: Request, settings: Settings) -> str | None:
    """Checked before anything else, so no body is read for a caller without credentials."""
    return await principal_of(request, settings.authorize)


async def _session_id(
    request: Request,
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
    The parameters document the headers; `session_header` reads them, for every route alike.
    """
    return session_header(request)


async def _idempotency_key(
    request: Request,
    key: Annotated[
        str | None,
        Header(
            alias=IDEMPOTENCY_HEADER,
            description="A new random key per message; the same key when retrying it, so the "
            "retry gets the first result instead of running the turn twice.",
        ),
    ] = None,
) -> str | None:
    return check_key(key)  # sent twice, the input rules refused it (H9)


async def _turn_inputs(
    request: Request,
) -> tuple[ServerSettings, str | None, str | None, str | None]:
    """Settings, principal, session id and idempotency key of a turn, without FastAPI's solving.

    The same checks as the `Principal`, `SessionId` and `IdempotencyKey` dependencies, in the
    same order (credentials first), called directly: FastAPI's resolution of five dependencies
    and three header parameters cost more per turn than everything else the server does
    (issue 24). The headers stay documented through `_TURN_HEADERS`.
    """
    settings: ServerSettings = request.app.state.picoflow
    principal = await principal_of(request, settings.authorize)  # headers: see _input_rules
    return settings, principal, session_header(request), key_of(request)


Principal = Annotated[str | None, Depends(_principal)]
SessionId = Annotated[str | None, Depends(_session_id)]
IdempotencyKey = Annotated[str | None, Depends(_idempotency_key)]
# Header limits and the other input rules of every route are the app's middleware
# (`_input_rules.InputRules`), not a router dependency: solving even one dependency per
# request cost FastAPI more than the check it runs (issue 24), and a route cannot forget it.
router = APIRouter()
# `/ai/run` reads its headers itself (`_turn_inputs`), sparing FastAPI's solving (issue 24).
run_router = APIRouter()


def _header_docs(*params: tuple[str, str]) -> list[dict[str, Any]]:
    """OpenAPI header parameters as FastAPI writes them, for headers read in `_turn_inputs`."""
    nullable = [{"type": "string"}, {"type": "null"}]
    return [
        {
            "name": name,
            "in": "header",
            "required": False,
            "schema": {
                "anyOf": nullable,
                "description": text,
                "title": name.replace("_", " ").title(),
            },
            "description": text,
        }
        for name, text in params
    ]


_TURN_HEADERS = _header_docs(
    (SESSION_HEADER, "The session to continue; omit it (or send '') to start a new one."),
    (SESSION_HEADER_ALT, f"Same as {SESSION_HEADER}, for proxies that drop underscore headers."),
    (
        IDEMPOTENCY_HEADER,
        "A new random key per message; the same key when retrying it, so the retry gets the "
        "first result instead of running the turn twice.",
    ),
)


async def _turn_request(
    request: Request, settings: ServerSettings, session_id: str | None
) -> RunRequest:
    """The body, read within the limits, naming a flow this server runs."""
    body = await read_run_request(request, settings.limits)
    names = settings.engine.flow_names()
    if body.flow_name not in names:
        raise ApiError(
            400,
            f"Unknown flow {body.flow_name!r}. Registered flows: {', '.join(names) or 'none'} "
            "(GET /ai/flows lists them).",
            code="unknown_flow",
            session=session_id,
        )
    return body


@run_router.post(
    "/ai/run",
    response_model=RunEnvelope,
    responses={**_ERRORS, 200: {"content": {"text/markdown": {}}}},
    openapi_extra={**_RUN_BODY, "parameters": _TURN_HEADERS},
    summary="Run one turn",
)
async def run_turn(request: Request) -> Response:
    """Run one turn of a flow. Keep the returned session id and send it with the next turn.

    The reply is the JSON envelope; its `contentType` says what `message` holds (e.g.
    `text/markdown`). A client that wants the bare reply instead names its media type in
    `Accept` (e.g. `Accept: text/markdown`); the session id is then in the header only.
    """
    settings, principal, session_id, key = await _turn_inputs(request)
    settings.turns.check_open()
    body = await _turn_request(request, settings, session_id)
    start = partial(
        settings.engine.run,
        body.flow_name,
        body.message,
        session_id,
        body.config,
        owner=principal,
        idempotency_key=key,  # O4: the record is saved with the turn, for any worker's retry
    )
    replayed = False
    settings.turns.enter()
    try:
        if key is None:
            result = await start()
        else:
            slot = (principal, key)
            request_print = fingerprint(body.flow_name, body.message, session_id, body.config)
            result, replayed = await settings.idempotency.run(slot, request_print, start)
    finally:
        settings.turns.leave()
    if not result.success:
        raise turn_error(result, request, body.flow_name)
    return _reply(result, request, replayed or result.replayed)


def _reply(result: TurnResult, request: Request, replayed: bool) -> Response:
    headers = session_headers(result.session_id)
    headers[REQUEST_ID_HEADER] = request_id_for(request)
    if replayed:
        headers["Idempotent-Replayed"] = "true"
    if wants_raw(request.headers.get("accept"), result.content_type):
        return Response(result.message, media_type=result.content_type, headers=headers)
    return JSONResponse(wire_envelope(result), headers=headers)


@router.post(
    "/ai/stream",
    response_class=StreamingResponse,
    responses={**_ERRORS, 200: {"content": {"text/event-stream": {}}}},
    openapi_extra=_RUN_BODY,
    summary="Run one turn, streaming its events",
)
async def stream_turn(
    principal: Principal,
    request: Request,
    settings: Settings,
    session_id: SessionId,
    key: IdempotencyKey,
) -> StreamingResponse:
    """Run one turn as Server-Sent Events: token, tool_call, step_changed, compaction, done.

    The `done` event carries the `/ai/run` envelope plus `status`. The session header is set
    when the request continues a running session; a new session's id is in `done`. Each event
    has an id `<turn>:<n>`: after a dropped connection, `GET /ai/stream/<turn>` with
    `Last-Event-ID` gets the rest.
    """
    settings.turns.check_open()
    refuse_resume_by_post(request)
    body = await _turn_request(request, settings, session_id)
    headers = {**STREAM_HEADERS, REQUEST_ID_HEADER: request_id_for(request)}
    if session_id is not None:
        doc = await settings.engine.get_session(session_id, owner=principal)
        if doc is not None and doc.get("run_status") == "running":
            headers.update(session_headers(session_id))
            refuse_empty_message(doc, body.message)
    return StreamingResponse(
        _stream_events(request, settings, body, session_id, principal, key),
        media_type="text/event-stream",
        headers=headers,
    )


def _stream_events(
    request: Request,
    settings: ServerSettings,
    body: RunRequest,
    session_id: str | None,
    principal: str | None,
    key: str | None,
) -> AsyncIterator[str]:
    """The turn's events; a retried idempotent request gets only the first one's `done`."""
    flow = body.flow_name
    if key is None:
        events = settings.engine.stream(
            flow, body.message, session_id, body.config, owner=principal
        )
        return idempotent_events(
            events, request, flow, None, settings.turns, settings.streams, principal
        )
    slot = (principal, key)
    request_print = fingerprint(flow, body.message, session_id, body.config)
    first = settings.idempotency.waiting(slot, request_print)
    if first is not None:
        return replayed_events(first, request, flow, settings.streams, principal)
    claim = settings.idempotency.begin(slot, request_print)
    events = settings.engine.stream(
        flow, body.message, session_id, body.config, owner=principal, idempotency_key=key
    )
    return idempotent_events(
        events, request, flow, claim, settings.turns, settings.streams, principal
    )


@router.post("/ai/end", response_model=EndEnvelope, responses=_ERRORS, summary="End a session")
async def end_session(
    principal: Principal, request: Request, settings: Settings, session_id: SessionId
) -> JSONResponse:
    """Delete the session named by the header. Ending an unknown session also succeeds.

    It takes no body; one that is sent must be JSON like any other route's (H8).
    """
    await read_optional_body(request, settings.limits)
    if session_id is None:
        raise ApiError(
            400,
            f"Send the session to end in the {SESSION_HEADER} header; none was sent.",
            code="invalid_session_header",
        )
    existed = await settings.engine.end_session(session_id, owner=principal)
    message = "The session was ended." if existed else "There was no such session to end."
    body = EndEnvelope(success=True, session=session_id, message=message)
    return JSONResponse(body.to_wire(), headers={REQUEST_ID_HEADER: request_id_for(request)})


@router.get("/ai/flows", response_model=list[str], responses=_ERRORS, summary="List the flows")
async def list_flows(principal: Principal, settings: Settings) -> list[str]:
    """The names to use as `flowName`, in registration order."""
    return settings.engine.flow_names()


@router.get("/healthcheck", response_model=Health, summary="Liveness check")
async def healthcheck() -> dict[str, Any]:
    """Answer while the process serves requests; it does not touch the store."""
    return Health(timestamp=datetime.now(UTC).isoformat()).to_wire()


@router.get(
    "/ready", response_model=Health, responses={503: _ERRORS[503]}, summary="Readiness check"
)
async def ready(settings: Settings) -> dict[str, Any]:
    """200 when this server can run turns: its store answers and it is not shutting down (O6).

    503 with `Retry-After` otherwise (`store_unavailable`, `shutting_down`).
    """
    settings.turns.check_open()
    problem = await store_problem(settings.engine.store)
    if problem is not None:
        raise problem
    return Health(status="ready", timestamp=datetime.now(UTC).isoformat()).to_wire()


@router.get("/", include_in_schema=False)
async def chat_page(settings: Settings) -> Response:
    """The chat page; its CSS and JS are under /static."""
    if settings.scenario_export:  # the page shows "Save as test" (X5)
        page = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
        page = page.replace('<body data-busy="false">', '<body data-busy="false" data-save-test>')
        return Response(page, media_type="text/html")
    return FileResponse(STATIC_DIR / "index.html", media_type="text/html")
