"""How failures become HTTP replies: one envelope, a status that says what the client can do.

Every error reply is the PicoFlow envelope with `success: false`, a message a person can act on,
a stable machine `code` and the `requestId` the server logged the details under (also in the
`X-Request-ID` header). The message never carries internals (H2): store paths, host names,
driver errors and exception texts go to the log only. The status (H3):

- 400: the request is wrong; fix it.  401/403: not allowed; send credentials.
- 404/405: not a route of this API.
- 409: another request saved the same session first; send the turn again.
- 413: the body, message or config is over a limit; make it smaller.
- 422: the session can never be saved or read again (over the store's limits, damaged, or
  written by a newer server); sending it again cannot help, start a new session.
- 503 with `Retry-After`: the store or the model is unavailable for now; retry later.
- 500: a bug in the flow or the server; report the `requestId`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from picoflow.engine import TurnResult
from picoflow.errors import PicoflowError, StoreError
from picoflow.server._headers import (
    REQUEST_ID_HEADER,
    logged_path,
    request_id_for,
    session_headers,
)
from picoflow.server._schemas import ErrorEnvelope

__all__ = [
    "ApiError",
    "ClientGone",
    "RETRY_AFTER_SECONDS",
    "turn_error",
    "install_error_handlers",
    "refusal_reply",
    "validation_problem",
]

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
_ROUTES = (
    "POST /ai/run, POST /ai/stream, GET /ai/stream/{turn}, POST /ai/end, GET /ai/flows, "
    "GET /ai/sessions/{id}/history, POST /ai/sessions/{id}/rewind|undo|fork|edit, "
    "GET /healthcheck, GET /ready"
)
_NOTHING_SAVED = "nothing was changed"


@dataclass(frozen=True, slots=True)
class _Failure:
    """How one kind of failed turn is answered; `message` None passes the turn's own text."""

    status: int
    code: str
    message: str | None
    retry_after: int | None = None


_MODEL_DOWN = _Failure(
    503,
    "model_unavailable",
    f"The language model is unavailable or rate limited right now; {_NOTHING_SAVED}. "
    "Send the same request again in a few seconds.",
    RETRY_AFTER_SECONDS,
)
_TIMEOUT = _Failure(
    503,
    "turn_timeout",
    f"The turn took longer than this server allows; {_NOTHING_SAVED}. Send the same request "
    "again in a few seconds.",
    RETRY_AFTER_SECONDS,
)
_BUG = _Failure(500, "internal_error", None)

# TurnResult.error (an error class name, or the engine's own labels) -> the answer (H3).
TURN_FAILURES: dict[str, _Failure] = {
    # E2: the request cannot run as sent; the engine's message is ours and names no internals.
    "InvalidRequest": _Failure(400, "invalid_request", None),
    # O3: a spending limit; the engine's message names the budget, its limit and the usage.
    "BudgetExceeded": _Failure(429, "budget_exceeded", None),
    # K9: an edit would go back past what a tool did in the world; the message names it.
    "EffectInHistoryError": _Failure(409, "effect_in_history", None),
    "SessionConflictError": _Failure(
        409,
        "session_conflict",
        f"Another request saved this session first; {_NOTHING_SAVED}. Send the same request "
        "again: it runs on the saved session.",
    ),
    "SessionNotFoundError": _Failure(
        409,
        "session_ended",
        f"The session was ended while this turn ran; {_NOTHING_SAVED}. Send the message again "
        "to start a new session.",
    ),
    "StoreError": _Failure(
        503,
        "store_unavailable",
        f"The session store is unavailable right now; {_NOTHING_SAVED}. Send the same request "
        "again in a few seconds.",
        RETRY_AFTER_SECONDS,
    ),
    "StoreRefused": _Failure(
        422,
        "session_refused",
        f"This session can no longer be saved or read: it is over the store's limits, was "
        f"damaged, or was written by a newer version of this server; {_NOTHING_SAVED}. Sending "
        "it again cannot help: omit the session header to start a new session.",
    ),
    # Transient provider failures: V9's retries were not enough (ModelUnavailableError), or a
    # provider error that reached the engine unwrapped (openai, httpx).
    **dict.fromkeys(
        (
            "ModelUnavailableError",
            "RateLimitError",
            "APITimeoutError",
            "APIConnectionError",
            "InternalServerError",
            "ConnectError",
            "ConnectTimeout",
            "ReadTimeout",
            "WriteTimeout",
            "PoolTimeout",
            "RemoteProtocolError",
        ),
        _MODEL_DOWN,
    ),
    # O4: the key's record, saved with its first turn, is for another request.
    "IdempotencyKeyReused": _Failure(422, "idempotency_key_reused", None),
    "TurnTimeout": _TIMEOUT,  # H6: the engine's turn_timeout stopped the turn
    "TimeoutError": _TIMEOUT,
}


class ClientGone(Exception):
    """The client closed the connection while its body was being read.

    Normal on the internet (a tab closed, a phone out of coverage), so it is logged as one
    line with no traceback: a traceback per dropped upload floods the log.
    """

    def __init__(self, received: int) -> None:
        super().__init__(f"the client went away after sending {received} bytes of its body")
        self.received = received


class ApiError(Exception):
    """A failure to answer with the error envelope; raised by routes, rendered by a handler."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str,
        session: str | None = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.session = session
        self.retry_after = retry_after

    def envelope(self, request_id: str) -> ErrorEnvelope:
        """The JSON body of the reply."""
        return ErrorEnvelope(
            success=False,
            completed=False,
            message=self.message,
            session=self.session or "",
            code=self.code,
            request_id=request_id,
        )


def turn_error(result: TurnResult, request: Request, flow_name: str) -> ApiError:
    """The ApiError for a failed turn; the turn's own text goes to the log, not the client."""
    failure = TURN_FAILURES.get(result.error or "", _BUG)
    request_id = request_id_for(request)
    message = failure.message or result.message
    if failure is _BUG:
        message = _bug_message(request_id)
    if result.effects:  # K8: saved up to what a tool did; the reply says what, not "unchanged"
        message = f"{result.message} (Request id {request_id}.)"
    if failure.message is not None or failure is _BUG:
        logger.log(
            logging.ERROR if failure is _BUG else logging.WARNING,
            "turn of %s failed with %s (request id %s): %s",
            flow_name,
            result.error,
            request_id,
            result.message,
            extra={"session_id": result.session_id, "request_id": request_id},
        )
    return ApiError(
        failure.status,
        message,
        code=failure.code,
        session=result.session_id,
        retry_after=failure.retry_after,
    )


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every failure into the envelope.

    The `Exception` handler runs in Starlette's outermost middleware, which sends our reply and
    then re-raises, so the server also logs the traceback; the other handlers do not re-raise.
    """
    app.add_exception_handler(ApiError, _api_error)
    app.add_exception_handler(ClientGone, _client_gone)
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


def render(request: Request, error: ApiError) -> JSONResponse:
    """The reply for `error`: envelope, status, request id header, and `Retry-After` if any."""
    request_id = request_id_for(request)
    headers = session_headers(error.session)
    headers[REQUEST_ID_HEADER] = request_id
    if error.retry_after is not None:
        headers["Retry-After"] = str(error.retry_after)
    if error.status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    body = error.envelope(request_id).to_wire()
    return JSONResponse(body, status_code=error.status, headers=headers)


async def _api_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ApiError)
    return await refusal_reply(request, exc)


async def refusal_reply(request: Request, exc: ApiError) -> JSONResponse:
    """A refusal the client can act on; logged at INFO, so its request id finds it too.

    Also the reply of the input rules' middleware, which sits outside the exception handlers.
    """
    request_id = request_id_for(request)
    logger.info(
        "%s %s answered %d %s (request id %s)",
        request.method,
        logged_path(request),
        exc.status,
        exc.code,
        request_id,
        extra={"request_id": request_id, "session_id": exc.session},
    )
    return render(request, exc)


async def _client_gone(request: Request, exc: Exception) -> Response:
    """One INFO line: nobody is left to read a reply, and a dropped upload is no failure."""
    assert isinstance(exc, ClientGone)
    request_id = request_id_for(request)
    logger.info(
        "%s %s: %s (request id %s)",
        request.method,
        logged_path(request),
        exc,
        request_id,
        extra={"request_id": request_id},
    )
    return Response(status_code=400, headers={REQUEST_ID_HEADER: request_id})


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    """400 instead of FastAPI's raw 422: say which fields were wrong and what to send."""
    assert isinstance(exc, RequestValidationError)
    problems = [validation_problem(error) for error in exc.errors()[:3]]
    message = (
        f"The request is not valid ({'; '.join(problems)}). Send a JSON object such as "
        '{"flowName": "HotelFlow", "message": "Hi"} with Content-Type: application/json.'
    )
    return render(request, ApiError(400, message, code="invalid_body"))


def validation_problem(error: Mapping[str, Any]) -> str:
    """One validation error in the client's terms: the wire field name and what was wrong."""
    location = [str(part) for part in error["loc"] if part != "body"]
    if error["type"] == "json_invalid":
        return "the body is not valid JSON"
    if error["type"] in ("model_attributes_type", "model_type", "dict_type") and not location:
        return "the body must be a JSON object"
    return f"{'.'.join(location) or 'body'}: {error['msg']}"


_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    """Unknown paths and wrong methods get the envelope too, naming the routes that exist."""
    assert isinstance(exc, StarletteHTTPException)
    message = (
        f"{exc.detail}: {request.method} {logged_path(request)} is not part of this API. "
        f"The routes are {_ROUTES}."
    )
    code = _HTTP_CODES.get(exc.status_code, "bad_request")
    response = render(request, ApiError(exc.status_code, message, code=code))
    response.headers.update(exc.headers or {})
    return response


async def _picoflow_error(request: Request, exc: Exception) -> JSONResponse:
    """A PicoflowError raised outside a turn (e.g. by the store while ending a session)."""
    name = type(exc).__name__
    if isinstance(exc, StoreError) and not exc.retryable:
        name = "StoreRefused"
    failure = TURN_FAILURES.get(name, _BUG)
    if failure.message is None:
        return await _unexpected_error(request, exc)
    request_id = request_id_for(request)
    logger.warning(
        "%s %s failed with %s (request id %s): %s",
        request.method,
        logged_path(request),
        name,
        request_id,
        exc,
        extra={"request_id": request_id},
    )
    error = ApiError(
        failure.status, failure.message, code=failure.code, retry_after=failure.retry_after
    )
    return render(request, error)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    """A bug: log the traceback under a request id and send that id, not the traceback."""
    request_id = request_id_for(request)
    logger.error(
        "%s %s failed (request id %s)",
        request.method,
        logged_path(request),
        request_id,
        exc_info=exc,
        extra={"request_id": request_id},
    )
    return render(request, ApiError(500, _bug_message(request_id), code="internal_error"))
