"""The routes of people in the loop (K7): approvers resolve approvals, operators answer.

Only a principal with the role may use them: "approver" for `/ai/approvals`, "operator" for
`/ai/handoffs` and `/ai/operator/*` (`authorize` returns a `Principal` with roles). A session's
owner may not approve its own request unless `create_app(allow_self_approval=True)`. Without an
`authorize` hook every caller is trusted, as on the turn routes.

The user's side hears about it on `GET /ai/events` (Server-Sent Events of one session):
`approval_resolved` with the reply the model gave, `operator_message`, `operator_returned`,
and `idle` when nobody is expected there any more (the stream then ends). The turn stream
(`POST /ai/stream`) carries `approval_requested` when a turn stops at a call.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from picoflow.engine import TurnResult
from picoflow.server._auth import caller_of, principal_of
from picoflow.server._errors import ApiError, turn_error, validation_problem
from picoflow.server._headers import REQUEST_ID_HEADER, SESSION_HEADER, escaped, request_id_for
from picoflow.server._input_rules import hint_for, session_header
from picoflow.server._limits import check_text_sizes, read_json_request
from picoflow.server._schemas import ErrorEnvelope, wire_envelope
from picoflow.server._stream import STREAM_HEADERS, sse_frame

__all__ = ["people_router", "PeopleSettings", "EventHub"]

APPROVER, OPERATOR = "approver", "operator"
STATIC = Path(__file__).parent / "static"
KEEPALIVE_SECONDS = 15.0
STREAM_SECONDS = 300.0  # GET /ai/events ends after this; the chat page opens it again

# TurnResult.error of an approval or operator action -> (status, code)
_FAILURES = {
    "InvalidRequest": (400, "invalid_request"),
    "SessionNotFound": (404, "session_not_found"),
    "ApprovalNotFound": (404, "approval_not_found"),
    "ApprovalInProgress": (409, "approval_in_progress"),
    "ApprovalAlreadyResolved": (409, "approval_already_resolved"),
    "NotInHandoff": (409, "not_in_handoff"),
}


class EventHub:
    """Per-session subscribers of this process; the people routes publish to them."""

    def __init__(self) -> None:
        self._queues: dict[str, set[asyncio.Queue[tuple[str, dict[str, Any]]]]] = {}

    def publish(self, session_id: str, kind: str, data: dict[str, Any]) -> None:
        """Hand one event to every subscriber of the session."""
        for queue in self._queues.get(session_id, ()):
            queue.put_nowait((kind, data))

    @contextmanager
    def subscribe(self, session_id: str) -> Iterator[asyncio.Queue[tuple[str, dict[str, Any]]]]:
        """A queue of the session's events while the caller listens."""
        queue: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()
        self._queues.setdefault(session_id, set()).add(queue)
        try:
            yield queue
        finally:
            listeners = self._queues[session_id]
            listeners.discard(queue)
            if not listeners:
                del self._queues[session_id]


@dataclass(slots=True)
class PeopleSettings:
    """What the people routes need from `create_app`."""

    allow_self_approval: bool = False
    hub: EventHub = field(default_factory=EventHub)


class _Body(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class ResolveRequest(_Body):
    """Body of `POST /ai/approvals/{approval_id}`."""

    decision: str = Field(description="approve, reject or edit.")
    args: dict[str, Any] | None = Field(None, description="The new arguments, for edit.")
    note: str | None = Field(None, description="Why; the model reads it for a rejection.")


class OperatorReply(_Body):
    """Body of `POST /ai/operator/reply`."""

    message: str


class ReturnRequest(_Body):
    """Body of `POST /ai/operator/return`."""

    step: str | None = Field(None, description="Where the flow goes on; default: where it was.")
    note: str | None = Field(None, description="What the model should know, marked as yours.")


people_router = APIRouter()
# The error envelope for every client error; also keeps FastAPI from documenting its own 422.
_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorEnvelope, "description": text}
    for status, text in (
        (403, "The principal lacks the role, or asked for this approval itself."),
        (404, "No such session or approval."),
        (409, "Already decided, being carried out, or not handed off."),
        (422, "Can never succeed as sent; do not retry."),
        ("4XX", "Any other client error, same envelope."),
    )
}


async def _settings(request: Request) -> Any:
    return request.app.state.picoflow


async def _caller(request: Request, settings: Annotated[Any, Depends(_settings)]) -> str | None:
    return await principal_of(request, settings.authorize)


Caller = Annotated[str | None, Depends(_caller)]
Settings = Annotated[Any, Depends(_settings)]
SessionQuery = Annotated[str | None, Query(description="The session (or the session header).")]


def _require(request: Request, settings: Any, role: str) -> None:
    """K7: only a principal with `role` may act; with no authorize hook, everyone is trusted."""
    caller = caller_of(request)
    if settings.authorize is None or (caller is not None and role in caller.roles):
        return
    name = caller.name if caller is not None else "?"
    raise ApiError(
        403,
        f"This needs the '{role}' role, and principal '{name}' does not have it. Return "
        f"Principal(name, roles={{'{role}'}}) from authorize() for the people who may.",
        code="role_required",
    )


def _session(request: Request, session: str | None) -> str:
    """The session of `?session=` or of the header, read as `/ai/run` reads it (H9)."""
    from_header = session_header(request)
    if session and from_header and session != from_header:
        raise ApiError(
            400,
            f"?session= and the {SESSION_HEADER} header name different sessions "
            f"('{escaped(session[:60])}' and '{from_header}'). Name the session once.",
            code="invalid_session_header",
        )
    session_id = session or from_header or ""
    if not session_id:
        raise ApiError(
            400,
            f"Name the session in the {SESSION_HEADER} header (or ?session=).",
            code="invalid_session_header",
        )
    return session_id


async def _body(request: Request, settings: Any, model: type[_Body], route: str) -> Any:
    """The body, as every route reads one (H8), its texts within the limits (H11)."""
    hint = hint_for(route)
    data = await read_json_request(request, settings.limits, hint)
    try:
        body = model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(validation_problem(error) for error in exc.errors()[:3])
        raise ApiError(
            400, f"The request is not valid ({problems}). {hint}", code="invalid_body"
        ) from None
    check_text_sizes(body.model_dump(exclude_none=True), settings.limits)
    return body


def _answer(result: TurnResult, request: Request) -> JSONResponse:
    if not result.success:
        failure = _FAILURES.get(result.error or "")
        if failure is None:
            raise turn_error(result, request, "people")
        raise ApiError(failure[0], result.message, code=failure[1], session=result.session_id)
    body = wire_envelope(result)
    body["pendingApprovals"] = result.pending_approvals
    return JSONResponse(body, headers={REQUEST_ID_HEADER: request_id_for(request)})


@people_router.get("/ai/approvals", responses=_RESPONSES, summary="List the approvals that wait")
async def list_approvals(
    caller: Caller,
    request: Request,
    settings: Settings,
    session: Annotated[str | None, Query(description="Only this session's.")] = None,
) -> JSONResponse:
    """Pending approvals, each with its `session`; one session's with `?session=`."""
    _require(request, settings, APPROVER)
    engine = settings.engine
    if session is not None:
        listed = [{**a, "session": session} for a in await engine.pending_approvals(session)]
    else:
        listed = [
            {**a, "session": w["id"], "flow": w["flow"], "owner": w["owner"]}
            for w in await engine.waiting()
            for a in w["approvals"]
        ]
    return JSONResponse(listed, headers={REQUEST_ID_HEADER: request_id_for(request)})


@people_router.post(
    "/ai/approvals/{approval_id}", responses=_RESPONSES, summary="Resolve an approval"
)
async def resolve(
    approval_id: str,
    caller: Caller,
    request: Request,
    settings: Settings,
    session: SessionQuery = None,
) -> JSONResponse:
    """Approve, edit or reject; the reply is the model's answer after the decision."""
    _require(request, settings, APPROVER)
    session_id = _session(request, session)
    body = await _body(request, settings, ResolveRequest, "/ai/approvals/{approval_id}")
    engine = settings.engine
    waiting = {a["id"]: a for a in await engine.pending_approvals(session_id)}
    asked = waiting.get(approval_id)
    if asked is not None and caller is not None and asked.get("requested_by") == caller:
        if not settings.people.allow_self_approval:
            raise ApiError(
                403,
                "You asked for this approval, so you may not decide it; another approver must "
                "(or the app allows it with create_app(allow_self_approval=True)).",
                code="self_approval",
            )
    result = await engine.resolve_approval(
        session_id, approval_id, body.decision, args=body.args, by=caller, note=body.note
    )
    response = _answer(result, request)
    if asked is not None and result.success:  # a refused resolve (429, 409) decided nothing
        settings.people.hub.publish(
            session_id,
            "approval_resolved",
            {"approval": approval_id, "decision": body.decision, "message": result.message},
        )
    return response


@people_router.get(
    "/ai/handoffs", responses=_RESPONSES, summary="List the sessions handed to an operator"
)
async def list_handoffs(caller: Caller, request: Request, settings: Settings) -> JSONResponse:
    """Sessions in operator mode, newest first, with the note and the messages since."""
    _require(request, settings, OPERATOR)
    listed = [
        {"session": w["id"], "flow": w["flow"], "owner": w["owner"], **w["operator"]}
        for w in await settings.engine.waiting()
        if w["operator"] is not None
    ]
    return JSONResponse(listed, headers={REQUEST_ID_HEADER: request_id_for(request)})


@people_router.post(
    "/ai/operator/reply", responses=_RESPONSES, summary="Answer the user as the operator"
)
async def operator_reply(
    caller: Caller,
    request: Request,
    settings: Settings,
    session: SessionQuery = None,
) -> JSONResponse:
    """The text goes to the user (`operator_message` on GET /ai/events) and into the history."""
    _require(request, settings, OPERATOR)
    session_id = _session(request, session)
    body = await _body(request, settings, OperatorReply, "/ai/operator/reply")
    result = await settings.engine.operator_reply(session_id, body.message, by=caller)
    response = _answer(result, request)
    settings.people.hub.publish(
        session_id, "operator_message", {"message": body.message, "by": caller}
    )
    return response


@people_router.post(
    "/ai/operator/return", responses=_RESPONSES, summary="Give the conversation back to the flow"
)
async def return_to_flow(
    caller: Caller,
    request: Request,
    settings: Settings,
    session: SessionQuery = None,
) -> JSONResponse:
    """The flow's model answers the next user message, having read the operator's."""
    _require(request, settings, OPERATOR)
    session_id = _session(request, session)
    body = await _body(request, settings, ReturnRequest, "/ai/operator/return")
    result = await settings.engine.return_to_flow(session_id, body.step, body.note, by=caller)
    response = _answer(result, request)
    settings.people.hub.publish(session_id, "operator_returned", {"step": result.step})
    return response


@people_router.get("/operator", include_in_schema=False)
async def operator_page() -> FileResponse:
    """The operator page: what waits for a person, with buttons to act on it."""
    return FileResponse(STATIC / "operator.html", media_type="text/html")


@people_router.get(
    "/ai/events", responses=_RESPONSES, summary="Listen to a session's approvals and operator"
)
async def session_events(
    caller: Caller,
    request: Request,
    settings: Settings,
    session: SessionQuery = None,
) -> StreamingResponse:
    """Server-Sent Events for the session's owner: approval_resolved, operator_message.

    While nobody is expected in the session (no pending approval, no operator), or once that
    is over, the stream sends `idle` and ends: open it again after the next turn.
    """
    session_id = _session(request, session)
    engine = settings.engine

    async def waits() -> bool | None:
        doc = await engine.get_session(session_id, owner=caller)
        if doc is None:
            return None
        pending = any(a.get("status") == "pending" for a in doc.get("approvals") or [])
        return pending or doc.get("operator") is not None

    if await waits() is None:
        raise ApiError(
            404, f"There is no session '{session_id}' of yours.", code="session_not_found"
        )
    headers = {**STREAM_HEADERS, REQUEST_ID_HEADER: request_id_for(request)}
    return StreamingResponse(
        _events(settings.people.hub, session_id, waits),
        media_type="text/event-stream",
        headers=headers,
    )


async def _events(
    hub: EventHub, session_id: str, waits: Callable[[], Awaitable[bool | None]]
) -> AsyncIterator[str]:
    """The session's events until nobody is expected there; also ends after a while.

    Subscribed before the first check, so nothing published in between is missed. Ending
    after `STREAM_SECONDS` bounds what a forgotten tab holds; the page opens it again.
    """
    loop = asyncio.get_running_loop()
    ends = loop.time() + STREAM_SECONDS
    with hub.subscribe(session_id) as queue:
        yield ": listening\n\n"
        while await waits() and (left := ends - loop.time()) > 0:
            try:
                kind, data = await asyncio.wait_for(queue.get(), min(KEEPALIVE_SECONDS, left))
            except TimeoutError:
                yield ": keepalive\n\n"  # proxies close connections that stay silent
                continue
            yield sse_frame(kind, data)
            while not queue.empty():
                yield sse_frame(*queue.get_nowait())
        else:
            yield sse_frame("idle", {})
