"""How failures become HTTP replies: one envelope, a status that says whose fault it was.

Every error reply is the PicoFlow envelope with `success: false` and a message a person can act
on, never FastAPI's raw `{"detail": ...}`. The status tells a client what to do:

- 400: the request is wrong (unknown flow, malformed body or session id, empty message on a
  running session, a session of another flow); fix the request.
- 409: another request saved the same session first; send the turn again.
- 413: the message is longer than the server accepts; shorten it.
- 503: the session store is unreachable; retry later.
- 500: a bug in the flow or the server; the reply carries the `requestId` it was logged under.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..engine import TurnResult
from ..errors import PicoflowError
from ._headers import REQUEST_ID_HEADER, request_id_for, session_headers
from ._schemas import ErrorEnvelope

__all__ = ["ApiError", "status_for", "turn_error", "install_error_handlers"]

logger = logging.getLogger(__name__)

# TurnResult.error (an error class name) -> status. Anything not listed is a bug: 500.
TURN_ERROR_STATUS: dict[str, int] = {
    "InvalidRequest": 400,  # E2: the request cannot run as sent (unknown flow, empty message, ...)
    "SessionConflictError": 409,  # P4: another writer saved first
    "SessionNotFoundError": 409,  # the session was deleted during the turn
    "StoreError": 503,
}
_ROUTES = "POST /ai/run, POST /ai/stream, POST /ai/end, GET /ai/flows, GET /healthcheck"


class ApiError(Exception):
    """A failure to answer with the error envelope; raised by routes, rendered by a handler."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        session: str | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.session = session
        self.request_id = request_id

    def envelope(self) -> ErrorEnvelope:
        """The JSON body of the reply."""
        return ErrorEnvelope(
            success=False,
            completed=False,
            message=self.message,
            session=self.session or "",
            request_id=self.request_id,
        )


def status_for(result: TurnResult) -> int:
    """The HTTP status of a turn: 200, or the mapping above for a failed one."""
    if result.success:
        return 200
    return TURN_ERROR_STATUS.get(result.error or "", 500)


def turn_error(result: TurnResult, request: Request, flow_name: str) -> ApiError:
    """The ApiError for a failed turn; a 500 is logged with the request id it will carry.

    A 500 reply does not repeat the exception text (it may hold internals); the log has it.
    """
    status = status_for(result)
    if status != 500:
        return ApiError(status, result.message, session=result.session_id)
    request_id = request_id_for(request)
    logger.error(
        "turn of %s failed with %s (request id %s): %s",
        flow_name,
        result.error,
        request_id,
        result.message,
        extra={"session_id": result.session_id, "request_id": request_id},
    )
    return ApiError(500, _bug_message(request_id), session=result.session_id, request_id=request_id)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every failure into the envelope.

    The `Exception` handler runs in Starlette's outermost middleware, which sends our reply and
    then re-raises, so the server also logs the traceback; the other handlers do not re-raise.
    """
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(PicoflowError, _picoflow_error)
    app.add_exception_handler(Exception, _unexpected_error)


def _bug_message(request_id: str) -> str:
    return (
        "The server failed to handle this request because of a bug in the flow or the server; "
        f"the session was not changed. The failure is logged with request id {request_id}: "
        "retry, and report that id if it happens again."
    )


def _render(error: ApiError) -> JSONResponse:
    headers = session_headers(error.session)
    if error.request_id:
        headers[REQUEST_ID_HEADER] = error.request_id
    return JSONResponse(error.envelope().to_wire(), status_code=error.status, headers=headers)


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return _render(exc)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """400 instead of FastAPI's raw 422: say which fields were wrong and what to send."""
    assert isinstance(exc, RequestValidationError)
    problems = [_problem(error) for error in exc.errors()[:3]]
    message = (
        f"The request is not valid ({'; '.join(problems)}). Send a JSON object such as "
        '{"flowName": "HotelFlow", "message": "Hi"} with Content-Type: application/json.'
    )
    return _render(ApiError(400, message))


def _problem(error: Mapping[str, Any]) -> str:
    """One validation error in the client's terms: the wire field name and what was wrong."""
    location = [str(part) for part in error["loc"] if part != "body"]
    if error["type"] == "json_invalid":
        return "the body is not valid JSON"
    if error["type"] in ("model_attributes_type", "dict_type") and not location:
        return "the body must be a JSON object"
    return f"{'.'.join(location) or 'body'}: {error['msg']}"


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Unknown paths and wrong methods get the envelope too, naming the routes that exist."""
    assert isinstance(exc, StarletteHTTPException)
    message = (
        f"{exc.detail}: {request.method} {request.url.path} is not part of this API. "
        f"The routes are {_ROUTES}."
    )
    response = _render(ApiError(exc.status_code, message))
    response.headers.update(exc.headers or {})
    return response


async def _picoflow_error(request: Request, exc: Exception) -> JSONResponse:
    """A PicoflowError raised outside a turn (e.g. by the store while ending a session)."""
    status = TURN_ERROR_STATUS.get(type(exc).__name__, 500)
    if status == 500:
        return await _unexpected_error(request, exc)
    return _render(ApiError(status, str(exc), session=getattr(exc, "session_id", None)))


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: log the traceback under a request id and send that id, not the traceback."""
    request_id = request_id_for(request)
    logger.error(
        "%s %s failed (request id %s)",
        request.method,
        request.url.path,
        request_id,
        exc_info=exc,
        extra={"request_id": request_id},
    )
    return _render(ApiError(500, _bug_message(request_id), request_id=request_id))
