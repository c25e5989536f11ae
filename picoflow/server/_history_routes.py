"""A session's history over HTTP: list it, show a revision, rewind, undo, fork, edit (W1-W4).

Every route names the session in its path and acts for the caller's principal only (H4): a
session of another principal is a 404 worded exactly like an id nobody issued, so a caller
cannot learn which ids exist. Bodies are JSON only (415 otherwise, so a page of another site
cannot change a session without the CORS preflight), read within the server's limits like a
turn's. An expired session is a 404 too. Rewind, undo and edit take the session's lock and
revision check in the engine: one racing a turn of another worker is the turn routes' 409
`session_conflict`, never a merge. Rewind, undo, fork and edit take an `Idempotency-Key` as
`/ai/run` does (H5, O4): a retry, on any worker, gets the first result instead of changing the
session again; an undo sent twice would otherwise undo two turns.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr, ValidationError

from picoflow.engine._revisions import supports_history
from picoflow.errors import (
    EffectInHistoryError,
    IdempotencyKeyReusedError,
    RevisionNotFoundError,
    SessionNotFoundError,
)
from picoflow.server._auth import principal_of
from picoflow.server._errors import ApiError, turn_error, validation_problem
from picoflow.server._headers import REQUEST_ID_HEADER, request_id_for, session_headers
from picoflow.server._idempotency import IDEMPOTENCY_HEADER, key_of
from picoflow.server._input_rules import hint_for
from picoflow.server._limits import check_turn_sizes, read_json_request
from picoflow.server._routes import ServerSettings, _header_docs, _reply
from picoflow.server._schemas import ErrorEnvelope
from picoflow.session import is_expired, is_session_id
from picoflow.stores.base import JSONDict

__all__ = ["history_router"]

PREFIX = "/ai/sessions"


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


_FORCE = (
    "Go back even past what a tool did in the world: the effects stay recorded and the "
    "model is told. Without it such a change is a 409 effect_in_history."
)


class RewindRequest(_Body):
    """Body of `POST /ai/sessions/{session_id}/rewind`."""

    to_revision: StrictInt = Field(ge=0, description="The revision to restore (see /history).")
    force: StrictBool = Field(False, description=_FORCE)


class UndoRequest(_Body):
    """Body of `POST /ai/sessions/{session_id}/undo`: `{}` or empty, or `{"force": true}`."""

    force: StrictBool = Field(False, description=_FORCE)


class ForkRequest(_Body):
    """Body of `POST /ai/sessions/{session_id}/fork`."""

    at_revision: StrictInt | None = Field(
        None, ge=0, description="The revision to copy; null or absent: the current one."
    )
    force: StrictBool = Field(False, description=_FORCE)


class EditRequest(_Body):
    """Body of `POST /ai/sessions/{session_id}/edit`."""

    revision: StrictInt = Field(ge=0, description="The turn whose message to replace.")
    message: StrictStr = Field(description="The new text; the turn runs again with it.")
    config: dict[str, Any] | None = Field(
        None, description="The turn's config, as `POST /ai/run` takes it."
    )
    force: StrictBool = Field(False, description=_FORCE)


_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorEnvelope, "description": text}
    for status, text in (
        (400, "Bad request (a malformed revision, limit or body): fix it before retrying."),
        (401, "No valid credentials were sent."),
        (404, "No such session of yours, or the session keeps no such revision."),
        (409, "Another request saved the session first; send the same request again."),
        (422, "The Idempotency-Key was first sent with another request."),
        (413, "The body, message or config is too large."),
        (415, "The body is not sent as application/json."),
        (501, "This server's session store keeps no history."),
        ("4XX", "Any other client error, same envelope."),
    )
}


_KEY_DOCS = _header_docs(
    (
        IDEMPOTENCY_HEADER,
        "A new random key per change; the same key when retrying it, so the retry gets the "
        "first result instead of changing the session twice (an undo sent twice undoes two "
        "turns).",
    )
)


def _body_doc(model: type[_Body]) -> dict[str, Any]:
    """The request body for `/docs`: routes read their body themselves, within the limits."""
    schema = {"content": {"application/json": {"schema": model.model_json_schema()}}}
    return {
        "requestBody": {"required": model is not UndoRequest, **schema},
        "parameters": _KEY_DOCS,
    }


history_router = APIRouter(prefix=PREFIX, responses=_RESPONSES)


async def _owned(request: Request, session_id: str) -> tuple[ServerSettings, str | None, JSONDict]:
    """Settings, principal and the session's document, or the refusal (credentials first).

    404 unless the caller owns the session (H4). An expired session is gone here as for a turn
    (P5): rewinding it would bring it back to life, and the purge deletes it with its history.
    """
    settings: ServerSettings = request.app.state.picoflow
    principal = await principal_of(request, settings.authorize)
    if not supports_history(settings.engine.store):
        raise ApiError(
            501,
            "This server's session store keeps no history, so sessions cannot be listed, "
            "rewound, forked or edited here. Its operator can switch to MemoryStore, "
            "SQLiteStore or MongoStore.",
            code="history_unavailable",
        )
    doc = None
    if is_session_id(session_id):
        doc = await settings.engine.get_session(session_id, owner=principal)
    running = doc is not None and doc.get("run_status") == "running"
    if doc is None or (running and is_expired(doc, datetime.now(UTC))):
        raise _no_session(session_id)
    return settings, principal, doc


def _no_session(session_id: str) -> ApiError:
    """The same reply for an unknown id and another principal's session (H4)."""
    if not is_session_id(session_id):
        return ApiError(
            404,
            "There is no such session: the path does not hold a session id this server "
            "issued. Use the `session` of a reply of POST /ai/run.",
            code="session_not_found",
        )
    return ApiError(
        404,
        f"There is no session '{session_id}' of yours: it was never started, has ended or "
        "expired, or belongs to someone else. Start a new one with POST /ai/run.",
        code="session_not_found",
        session=session_id,
    )


def _no_revision(session_id: str, message: str) -> ApiError:
    """The engine's words, pointed at the route that lists the revisions instead of Python."""
    listing = f"GET {PREFIX}/{session_id}/history"
    return ApiError(
        404,
        message.replace("engine.history(session_id)", listing),
        code="revision_not_found",
        session=session_id,
    )


def _number(request: Request, name: str, lowest: int) -> int | None:
    """A query parameter that is a whole number >= `lowest`, or None when absent; else 400.

    At most 18 digits: every store keeps revisions as 64-bit integers.
    """
    values = request.query_params.getlist(name)
    if not values:
        return None
    text = values[0]
    fits = len(values) == 1 and text.isascii() and text.isdigit() and len(text) <= 18
    if fits and int(text) >= lowest:
        return int(text)
    shown = repr(text[:40]) if len(values) == 1 else f"{len(values)} values"
    raise ApiError(
        400,
        f"?{name}= must be one whole number >= {lowest}, got {shown}. "
        f"GET {PREFIX}/<session>/history lists the revisions.",
        code="invalid_query",
    )


async def _read(request: Request, settings: ServerSettings, model: type[_Body], route: str) -> Any:
    """The route's body, validated; a wrong one is a 400 showing the body to send."""
    hint = hint_for(f"{PREFIX}/{{session_id}}/{route}")
    data = await read_json_request(request, settings.limits, hint)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(validation_problem(error) for error in exc.errors()[:3])
        raise ApiError(
            400, f"The request is not valid ({problems}). {hint}", code="invalid_body"
        ) from None


async def _change(
    request: Request, session_id: str, model: type[_Body], route: str
) -> tuple[ServerSettings, str | None, Any, str | None]:
    """What a route that changes a session starts with.

    Its owner, an open server, its body and its idempotency key (H5, O4).
    """
    settings, principal, _ = await _owned(request, session_id)
    settings.turns.check_open()
    key = key_of(request)
    return settings, principal, await _read(request, settings, model, route), key


@contextmanager
def _refusals(session_id: str) -> Iterator[None]:
    """The engine's not-found errors as these routes' 404s (its conflicts are the turn's 409)."""
    try:
        yield
    except SessionNotFoundError:
        raise _no_session(session_id) from None
    except RevisionNotFoundError as exc:
        raise _no_revision(session_id, str(exc)) from None
    except IdempotencyKeyReusedError as exc:
        raise ApiError(422, str(exc), code="idempotency_key_reused", session=session_id) from None
    except EffectInHistoryError as exc:  # K9: nothing changed; force=True goes back anyway
        raise ApiError(409, str(exc), code="effect_in_history", session=session_id) from None


def _answer(body: Mapping[str, Any], request: Request, session_id: str) -> JSONResponse:
    headers = session_headers(session_id)
    headers[REQUEST_ID_HEADER] = request_id_for(request)
    return JSONResponse(dict(body), headers=headers)


@history_router.get("/{session_id}", summary="A session's document, now or at a revision")
async def session_document(session_id: str, request: Request) -> JSONResponse:
    """The stored session document; with `?revision=N`, exactly as revision N saved it (W1).

    404 `revision_not_found` when the session keeps no such revision (never saved, or removed
    by retention).
    """
    settings, principal, doc = await _owned(request, session_id)
    revision = _number(request, "revision", 0)
    if revision is not None:
        old = await settings.engine.get_session(session_id, owner=principal, revision=revision)
        if old is None:
            raise _no_revision(session_id, str(RevisionNotFoundError(session_id, revision)))
        doc = old
    return _answer(doc, request, session_id)


@history_router.get("/{session_id}/history", summary="A session's revisions, newest first")
async def session_history(session_id: str, request: Request) -> JSONResponse:
    """`{"success", "session", "revision", "history"}`; `?limit=N` keeps the newest N (W1).

    Each entry is what `engine.history` lists: `revision`, `saved_at`, `action` (its cause,
    K10), `message`, `step_before`, `step_after`, `reply` (its start) and `restored` (the
    revision a rewind copied or an edit ran on). `effects_through` is the newest revision that
    recorded a tool's effect, or null (K9): going back to before it needs `force`, so a page
    offers no Undo or Edit there.
    """
    settings, principal, doc = await _owned(request, session_id)
    limit = _number(request, "limit", 1)
    listed = await settings.engine.history(session_id, limit=limit, owner=principal)
    body = {"success": True, "session": session_id, "revision": doc["revision"]}
    body["effects_through"] = max((e["revision"] for e in doc.get("effects") or []), default=None)
    return _answer({**body, "history": listed}, request, session_id)


async def _moved(
    settings: ServerSettings, session_id: str, revision: int, owner: str | None
) -> Any:
    """What a rewind, undo or fork saved as `revision`, from its history entry."""
    listed = await settings.engine.history(session_id, owner=owner)
    entry: JSONDict = next((e for e in listed if e["revision"] == revision), {})
    return {
        "success": True,
        "session": session_id,
        "revision": revision,
        "restored": entry.get("restored"),
        "step": entry.get("step_after"),
    }


@history_router.post(
    "/{session_id}/rewind",
    summary="Make the session what it was after a revision",
    openapi_extra=_body_doc(RewindRequest),
)
async def rewind(session_id: str, request: Request) -> JSONResponse:
    """Restore revision `to_revision`, saved as a new revision (W2); the rewound turns stay.

    The reply: `{"success", "session", "revision" (the new one), "restored", "step"}`.
    """
    settings, principal, body, key = await _change(request, session_id, RewindRequest, "rewind")
    with _refusals(session_id):
        revision = await settings.engine.rewind(
            session_id, body.to_revision, owner=principal, idempotency_key=key, force=body.force
        )
    return _answer(await _moved(settings, session_id, revision, principal), request, session_id)


@history_router.post(
    "/{session_id}/undo", summary="Undo the last answer", openapi_extra=_body_doc(UndoRequest)
)
async def undo(session_id: str, request: Request) -> JSONResponse:
    """Rewind to before the last turn (W2); again, to before the one before. Body `{}`.

    The reply is `rewind`'s. A first turn cannot be undone (404 `revision_not_found`). Send
    an `Idempotency-Key`: a retry without one undoes the turn before as well.
    """
    settings, principal, body, key = await _change(request, session_id, UndoRequest, "undo")
    with _refusals(session_id):
        revision = await settings.engine.undo(
            session_id, owner=principal, idempotency_key=key, force=body.force
        )
    return _answer(await _moved(settings, session_id, revision, principal), request, session_id)


@history_router.post(
    "/{session_id}/fork",
    summary="Copy the session into a new one",
    openapi_extra=_body_doc(ForkRequest),
)
async def fork(session_id: str, request: Request) -> JSONResponse:
    """A new session (same owner and flow) from `at_revision`, default the current one (W3).

    The reply names the new session: `{"success", "session" (the new id), "revision": 0,
    "restored", "step", "forked_from": {"session_id", "revision"}}`.
    """
    settings, principal, body, key = await _change(request, session_id, ForkRequest, "fork")
    with _refusals(session_id):
        new_id = await settings.engine.fork(
            session_id, body.at_revision, owner=principal, idempotency_key=key, force=body.force
        )
    made = await _moved(settings, new_id, 0, principal)
    made["forked_from"] = {"session_id": session_id, "revision": made["restored"]}
    return _answer(made, request, new_id)


@history_router.post(
    "/{session_id}/edit",
    summary="Run a turn again with an edited message",
    openapi_extra=_body_doc(EditRequest),
)
async def edit(session_id: str, request: Request) -> Response:
    """Turn `revision` again with `message`, on the session as it was before it (W4).

    The reply is a turn's (`POST /ai/run`'s envelope and statuses); if the turn fails the
    session is unchanged.
    """
    settings, principal, doc = await _owned(request, session_id)
    settings.turns.check_open()
    key = key_of(request)
    body = await _read(request, settings, EditRequest, "edit")
    check_turn_sizes(body.message, body.config, settings.limits)
    settings.turns.enter()
    try:
        result = await settings.engine.edit_message(
            session_id,
            body.revision,
            body.message,
            owner=principal,
            config=body.config,
            idempotency_key=key,
            force=body.force,
        )
    finally:
        settings.turns.leave()
    if result.error == "SessionNotFoundError":
        raise _no_session(session_id)
    if result.error == "RevisionNotFoundError":
        raise _no_revision(session_id, result.message)
    if not result.success:
        raise turn_error(result, request, doc["flow"])
    return _reply(result, request, result.replayed)
