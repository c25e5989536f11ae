"""What the AG-UI and AI SDK routes share: the caller, the turn, its tools, state and approvals.

Both protocols run the very turn `POST /ai/stream` runs (`FlowEngine.stream`, with the run or
message id as the idempotency key, O4/H5), under the same checks in the same order: header
limits and credentials first (H1, H4), then the shutdown gate (O6), then the body within the
limits (H1, H8). Each protocol only translates: a `Translator` turns the engine's events and
the turn's result into that protocol's frames.

The turn runs in a task of its own (`pumped`), as `/ai/stream`'s does: a client that leaves
mid-stream does not cut the turn, and the thread's binding to its session (`_ids`) is written
after the turn whether the client stays or not.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Protocol

from fastapi import Request

from picoflow.engine import StreamEvent, TurnResult
from picoflow.errors import StoreError
from picoflow.server._auth import caller_of, principal_of
from picoflow.server._errors import RETRY_AFTER_SECONDS, ApiError, turn_error
from picoflow.server._headers import request_id_for
from picoflow.server._kept import LiveTurn
from picoflow.server._limits import check_header_sizes, check_turn_sizes, read_json_request
from picoflow.server._people_routes import APPROVER
from picoflow.server._routes import ServerSettings
from picoflow.server._schemas import ErrorEnvelope
from picoflow.server.protocols._ids import ThreadBindings, check_client_id

__all__ = [
    "RESPONSES",
    "Call",
    "Translator",
    "decide",
    "open_call",
    "pumped",
    "read_body",
    "run_turn_frames",
    "snapshot_of",
    "tool_results",
]

logger = logging.getLogger(__name__)

# The error envelope for every refusal before a stream opens; also keeps FastAPI from
# documenting a 422 of its own shape for the path parameters (see `_errors`).
RESPONSES: dict[int | str, dict[str, Any]] = {
    422: {"model": ErrorEnvelope, "description": "Can never succeed as sent; do not retry."},
    "4XX": {"model": ErrorEnvelope, "description": "A refusal before the stream, /ai/run's."},
}

# TurnResult.error of an approval decision -> (status, code), as `/ai/approvals` answers.
_DECISION_FAILURES = {
    "InvalidRequest": (400, "invalid_request"),
    "SessionNotFound": (404, "session_not_found"),
    "ApprovalNotFound": (404, "approval_not_found"),
    "ApprovalInProgress": (409, "approval_in_progress"),
    "ApprovalAlreadyResolved": (409, "approval_already_resolved"),
}


@dataclass(slots=True)
class Call:
    """One protocol request: who asked, for which flow, in which conversation."""

    settings: ServerSettings
    request: Request
    principal: str | None
    flow: str
    client_id: str
    session_id: str | None  # the session the client id is bound to, None for a new one
    started_by: str | None = None  # the idempotency key of the run that started it

    def turn_session(self, key: str) -> str | None:
        """The session id to run `key`'s turn on: none for a retry of the run that started it.

        That run reached the engine without one, and its retry must look the same to be
        recognised as a retry (O4); the engine then finds the session it derived from the key.
        """
        return None if key == self.started_by else self.session_id

    @property
    def bindings(self) -> ThreadBindings:
        return ThreadBindings(self.settings.streams.store)


async def open_call(request: Request) -> tuple[ServerSettings, str | None]:
    """Settings and principal, checked in `/ai/run`'s order: headers, credentials, shutdown."""
    settings: ServerSettings = request.app.state.picoflow
    check_header_sizes(request, settings.limits)
    principal = await principal_of(request, settings.authorize)
    settings.turns.check_open()
    return settings, principal


async def read_body(request: Request, settings: ServerSettings, hint: str) -> dict[str, Any]:
    """The JSON object body within the limits: 415, 413 and 400 as on every POST route."""
    data = await read_json_request(request, settings.limits, hint)
    if not isinstance(data, dict):
        raise ApiError(400, f"The body must be a JSON object. {hint}", code="invalid_body")
    return data


async def bound_call(
    request: Request,
    settings: ServerSettings,
    principal: str | None,
    flow: str,
    client_id: tuple[str, Any],
) -> Call:
    """The call, with the session the client's id is bound to (H4: only the owner's).

    `client_id` is the id's field in the body and its value, for the error that names it.
    """
    checked = check_client_id(client_id[1], client_id[0])
    names = settings.engine.flow_names()
    if flow not in names:
        raise ApiError(
            404,
            f"Unknown flow {flow!r}. Registered flows: {', '.join(names) or 'none'} "
            "(GET /ai/flows lists them); the flow is the last part of the URL.",
            code="unknown_flow",
        )
    bindings = ThreadBindings(settings.streams.store)
    session, started_by = await bindings.session_of(principal, flow, checked)
    return Call(settings, request, principal, flow, checked, session, started_by)


def check_message(call: Call, message: str, config: dict[str, Any] | None) -> None:
    """The message length and config size limits of `/ai/run` (413)."""
    check_turn_sizes(message, config, call.settings.limits)


class Translator(Protocol):
    """One protocol's frames for a turn's events, its end and its failures."""

    def started(self) -> list[str]: ...

    def event(self, event: StreamEvent) -> list[str]: ...

    def finished(self, result: TurnResult, doc: dict[str, Any] | None) -> list[str]: ...

    def failed(self, error: ApiError, request_id: str) -> list[str]: ...


async def run_turn_frames(
    call: Call, message: str, config: dict[str, Any] | None, key: str, out: Translator
) -> AsyncGenerator[str, None]:
    """The turn of `/ai/stream`, translated; the thread is bound once the turn is saved."""
    engine = call.settings.engine
    for frame in out.started():
        yield frame
    session_id = call.turn_session(key)
    events = engine.stream(
        call.flow, message, session_id, config, owner=call.principal, idempotency_key=key
    )
    result: TurnResult | None = None
    async with aclosing(events):  # type: ignore[type-var]
        async for event in events:
            if event.kind == "done":
                result = event.result
            else:
                for frame in out.event(event):
                    yield frame
    assert result is not None  # `stream` always ends with "done"
    for frame in await _end_frames(call, result, out, key):
        yield frame


async def _end_frames(call: Call, result: TurnResult, out: Translator, key: str) -> list[str]:
    if not result.success:
        error = turn_error(result, call.request, call.flow)
        return out.failed(error, request_id_for(call.request))
    if result.session_id is not None and result.session_id != call.session_id:
        bindings, session = call.bindings, result.session_id
        await bindings.bind(call.principal, call.flow, call.client_id, session, key)
    doc = None
    if result.session_id is not None:
        doc = await call.settings.engine.get_session(result.session_id, owner=call.principal)
    return out.finished(result, doc)


async def decide(
    call: Call, approval_id: str, decision: str, args: dict[str, Any] | None, note: str | None
) -> tuple[TurnResult, dict[str, Any]]:
    """Resolve one approval of the call's session under `/ai/approvals`' rules (K3, K7).

    Sending the same decision again replays the first outcome and runs nothing (K3), so a
    retried resume is idempotent like a retried run.

    With an `authorize` hook only an "approver" may decide, and not the principal who asked,
    unless `create_app(allow_self_approval=True)`; without one every caller is trusted.
    """
    if call.session_id is None:
        raise ApiError(404, "This thread has no session to resume.", code="session_not_found")
    engine, settings = call.settings.engine, call.settings
    waiting = {a["id"]: a for a in await engine.pending_approvals(call.session_id)}
    # A decided one is not waiting any more: resolving it again replays its outcome (K3).
    asked = {"id": approval_id, **waiting.get(approval_id, {})}
    _check_may_decide(call, asked, settings)
    result = await engine.resolve_approval(
        call.session_id, approval_id, decision, args, by=call.principal, note=note
    )
    if not result.success:
        failure = _DECISION_FAILURES.get(result.error or "")
        if failure is None:
            raise turn_error(result, call.request, call.flow)
        raise ApiError(failure[0], result.message, code=failure[1])
    settings.people.hub.publish(
        call.session_id,
        "approval_resolved",
        {"approval": approval_id, "decision": decision, "message": result.message},
    )
    return result, asked


def _check_may_decide(call: Call, asked: dict[str, Any], settings: ServerSettings) -> None:
    if settings.authorize is None:
        return
    caller = caller_of(call.request)
    if caller is None or APPROVER not in caller.roles:
        raise ApiError(
            403,
            f"Deciding an approval needs the '{APPROVER}' role, and this principal lacks it.",
            code="role_required",
        )
    if asked.get("requested_by") == call.principal and not settings.people.allow_self_approval:
        raise ApiError(
            403,
            "You asked for this approval, so you may not decide it; another approver must "
            "(or the app allows it with create_app(allow_self_approval=True)).",
            code="self_approval",
        )


def snapshot_of(result: TurnResult, doc: dict[str, Any] | None) -> dict[str, Any]:
    """The state a front end shows: the current step, its state, and whether the flow ended.

    `session` is the picoflow session id, for the routes that take one (history, W1-W4).
    """
    step = result.step if doc is None else doc.get("current_step", result.step)
    steps = {} if doc is None else doc.get("steps") or {}
    state = (steps.get(step) or {}).get("state", {}) if isinstance(step, str) else {}
    return {
        "session": result.session_id,
        "step": step,
        "state": state,
        "completed": result.completed,
        "pendingApprovals": [a["id"] for a in result.pending_approvals],
    }


def tool_results(doc: dict[str, Any] | None, calls: Sequence[tuple[str, Any]]) -> list[str | None]:
    """What each of the turn's tool calls returned, as the session stored it (None: not found).

    The engine's `tool_call` event names the tool and its arguments; the result is in the
    tool message the turn saved. Each call is matched, newest first, with the newest stored
    call of the same name and arguments whose result is not matched yet.
    """
    if not calls:
        return []
    stored = _stored_calls(doc)
    found: list[str | None] = []
    for name, args in reversed(calls):
        match = next(
            (i for i in range(len(stored) - 1, -1, -1) if stored[i][:2] == (name, args)), None
        )
        found.append(None if match is None else stored.pop(match)[2])
    return found[::-1]


def _stored_calls(doc: dict[str, Any] | None) -> list[tuple[str, Any, str]]:
    """(name, args, result) of every answered tool call in the session's memory."""
    calls: list[tuple[str, Any, str]] = []
    memory = {} if doc is None else doc.get("memory") or {}
    for space in memory.values():
        asked: dict[str, tuple[str, Any]] = {}
        for message in (space or {}).get("messages") or []:
            data = message.get("data") or {}
            for call in data.get("tool_calls") or []:
                asked[str(call.get("id"))] = (call.get("name"), call.get("args"))
            if message.get("type") == "tool" and str(data.get("tool_call_id")) in asked:
                name, args = asked.pop(str(data.get("tool_call_id")))
                calls.append((name, args, _text(data.get("content"))))
    return calls


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "") if isinstance(part, dict) else str(part) for part in content
        )
    return str(content)


_PUMPS: set[asyncio.Future[None]] = set()


def pumped(
    frames: AsyncGenerator[str, None],
    call: Call,
    out: Translator,
    *,
    keep_as: Callable[[str], Awaitable[None]] | None = None,
) -> AsyncIterator[str]:
    """Run `frames` in a task of its own; the response follows it (see the module's text).

    The running turns count it until its end, so a shutdown waits for it (O6). An exception
    that escapes (a store that fails after the turn, a bug) ends the stream with the
    protocol's error event, as `/ai/run` would answer it: 503 for the store, else 500 (H3).
    With `keep_as`, the frames are also kept like `/ai/stream`'s (O5, `StreamKeeper`), so a
    client that lost them can read them again; `keep_as` records the kept stream's id.
    """
    settings = call.settings
    settings.turns.enter()
    ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    if keep_as is None:
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        sink: Callable[[str], None] = queue.put_nowait
        ending: Callable[[], None] = lambda: queue.put_nowait(None)  # noqa: E731
        follow, keeping = _follow(queue), None
        ready.set_result(None)
    else:
        live, opened = settings.streams.new_turn(call.principal)
        keeping = asyncio.ensure_future(_kept(settings, live, opened, keep_as, ready))
        sink, ending, follow = live.add, live.end, _follow_live(live, opened)

    async def pump() -> None:
        try:
            await asyncio.wait([ready])  # a reconnect finds the stream once the turn runs
            async with aclosing(frames):
                async for frame in frames:
                    sink(frame)
        except Exception as exc:  # logged with its traceback; the client gets no internals
            for frame in out.failed(_escaped(exc, call), request_id_for(call.request)):
                sink(frame)
        finally:
            ending()
            try:
                if keeping is not None:
                    await keeping  # the last batch is written before a shutdown closes the store
            finally:
                settings.turns.leave()

    task = asyncio.ensure_future(pump())
    _PUMPS.add(task)  # the loop holds tasks weakly; one collected mid-turn would stop it
    task.add_done_callback(_PUMPS.discard)
    return follow


async def _kept(
    settings: ServerSettings,
    live: LiveTurn,
    opened: asyncio.Future[bool],
    keep_as: Callable[[str], Awaitable[None]],
    ready: asyncio.Future[None],
) -> None:
    """Write the live turn's frames to the store, and record its id once it is there.

    `ready` is set once the id is recorded (or could not be): the turn starts then.
    """
    writing = asyncio.ensure_future(settings.streams.keep(live, opened))
    try:
        if await asyncio.shield(opened):
            await keep_as(live.turn_id)
    finally:
        if not ready.done():
            ready.set_result(None)
        await writing


async def _follow_live(live: LiveTurn, opened: asyncio.Future[bool]) -> AsyncIterator[str]:
    await asyncio.wait([opened])  # the first frame waits until another worker could find it
    async for frame in live.follow(0):
        yield frame


def _escaped(exc: Exception, call: Call) -> ApiError:
    request_id = request_id_for(call.request)
    if isinstance(exc, StoreError):
        logger.warning("a protocol stream's store failed (request id %s): %s", request_id, exc)
        return ApiError(
            503,
            "The session store is unavailable right now. Send the same request again in a "
            "few seconds: the run id makes it safe.",
            code="store_unavailable",
            retry_after=RETRY_AFTER_SECONDS,
        )
    logger.error("a protocol stream failed (request id %s)", request_id, exc_info=exc)
    return ApiError(
        500,
        f"Something went wrong on the server; report request id {request_id}.",
        code="internal_error",
    )


async def _follow(queue: asyncio.Queue[str | None]) -> AsyncIterator[str]:
    while (frame := await queue.get()) is not None:
        yield frame
