"""The input rules every route follows (H8-H11), checked in one place: an ASGI middleware.

`/ai/run` set the rules (issue 25) and each route used to call them itself; the routes that
forgot let a cross-site form resolve an approval (issue 36). `InputRules` wraps the whole app,
so every route, one added later included, answers the same bad input the same way, before its
own code runs: headers over the limits are 431 (H9); a header that names one thing sent twice
is 400 `duplicate_header` (H9); a POST whose body is not declared JSON is 415 (H8). A request
without valid credentials hears 401 instead of those 400s and 415s, as it would from the route
(credentials first, H4), except on the public routes (pages, docs, health). What needs the
body (duplicate keys, depth, sizes) is checked by the one body reader every route reads with
(`_limits`), and the request's path is logged with control characters escaped (H11).

The happy path costs a pass or two over the headers: the route table is read only to refuse.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from fastapi import Request, routing
from starlette.routing import BaseRoute, Mount, compile_path
from starlette.types import ASGIApp, Receive, Scope, Send

from picoflow.server._auth import Authorize, principal_of
from picoflow.server._errors import ApiError, refusal_reply
from picoflow.server._headers import escaped
from picoflow.session import is_session_id

if TYPE_CHECKING:
    from picoflow.server._limits import Limits

__all__ = [
    "BODY_EXAMPLES",
    "BODYLESS",
    "HINT",
    "InputRules",
    "PUBLIC",
    "app_routes",
    "SINGLE_HEADERS",
    "duplicate_header_problem",
    "header_sizes_problem",
    "hint_for",
    "media_type_problem",
    "session_header",
]

# The body each POST route takes, shown by its 400 and 415 replies (H8); by route template.
_TURN = '{"flowName": "HotelFlow", "message": "Hi"}'
BODY_EXAMPLES = {
    **dict.fromkeys(("/ai/run", "/ai/stream", "/ai/chat"), _TURN),
    "/ai/sessions/{session_id}/rewind": '{"to_revision": 2}',
    "/ai/sessions/{session_id}/undo": "{}",
    "/ai/sessions/{session_id}/fork": '{"at_revision": 2} (or {} for the current revision)',
    "/ai/sessions/{session_id}/edit": '{"revision": 3, "message": "Three nights"}',
    "/ai/approvals/{approval_id}": '{"decision": "approve"}',
    "/ai/operator/reply": '{"message": "I have booked it for you."}',
    "/ai/operator/return": '{} (or {"step": "...", "note": "..."})',
}
HINT = f"Send a JSON object such as {_TURN} with Content-Type: application/json."
# Headers that name one thing: sent twice, which copy counts would be a guess (400, H9).
SINGLE_HEADERS = {
    name.lower().encode("latin-1"): name
    for name in (
        "CHAT_SESSION_ID",
        "chat-session-id",
        "Idempotency-Key",
        "Last-Event-ID",
        "Authorization",
        "X-API-Key",
    )
}
RawHeaders = list[tuple[bytes, bytes]]


def hint_for(route: str) -> str:
    """What to send, for the 400 and 415 replies of the route with this path template."""
    example = BODY_EXAMPLES.get(route)
    if example is None:
        return "Send a JSON object with Content-Type: application/json."
    return f"Send a JSON object such as {example} with Content-Type: application/json."


def header_sizes_problem(headers: RawHeaders, limits: Limits) -> ApiError | None:
    """431 for too many or too large headers, whatever the HTTP server in front allows.

    Servers differ (uvicorn's h11 stops at 16 KB of headers, httptools at none), and every
    header is held in memory for the whole request, so the limit is the app's own.
    """
    size = sum(len(name) + len(value) for name, value in headers)
    if len(headers) <= limits.max_headers and size <= limits.max_header_bytes:
        return None
    return ApiError(
        431,
        f"The request has {len(headers)} headers of {size} bytes in all; this server "
        f"accepts at most {limits.max_headers} headers and {limits.max_header_bytes} "
        "bytes. Send fewer or smaller headers (large cookies are the usual cause).",
        code="headers_too_large",
    )


def duplicate_header_problem(headers: RawHeaders) -> ApiError | None:
    """400 when a header of `SINGLE_HEADERS` is sent more than once (ASGI names are lower case)."""
    seen: set[bytes] = set()
    for name, _ in headers:
        if name in SINGLE_HEADERS:
            if name in seen:
                return ApiError(
                    400,
                    f"The {SINGLE_HEADERS[name]} header was sent more than once. Send it once, "
                    "with one value.",
                    code="duplicate_header",
                )
            seen.add(name)
    return None


def session_header(request: Request) -> str | None:
    """The session the headers name, or None to start one (an empty header means none yet).

    Both spellings may be sent if they agree; a value this server never issued is a 400.
    """
    headers = request.headers
    first = headers.get("chat_session_id") or None
    second = headers.get("chat-session-id") or None
    if first and second and first != second:
        raise ApiError(
            400,
            f"The CHAT_SESSION_ID and chat-session-id headers name different sessions "
            f"('{escaped(first[:60])}' and '{escaped(second[:60])}'). Send the session id in one "
            "of them.",
            code="invalid_session_header",
        )
    session_id = first or second
    if session_id is not None and not is_session_id(session_id):
        raise ApiError(
            400,
            "The CHAT_SESSION_ID header is not a session id this server issued. Send the "
            "`session` value of an earlier reply, or omit the header to start a new session.",
            code="invalid_session_header",
        )
    return session_id


# What a browser page of another site can send without a CORS preflight: a "simple" request
# has one of these types (or none), so a turn must never run from such a body.
_JSON_TYPES = ("application/json",)


def media_type_problem(headers: RawHeaders, hint: str = HINT) -> ApiError | None:
    """415 unless the body is declared JSON: text/plain would let any site run turns.

    A page of another origin may POST `text/plain` (or a form) without a CORS preflight; the
    browser hides the reply from it, but the turn would still run as the visitor (with their
    cookies). Requiring `application/json` forces the preflight, which CORS then decides.
    """
    declared = [value.decode("latin-1") for name, value in headers if name == b"content-type"]
    media = declared[0].split(";")[0].strip().lower() if len(declared) == 1 else ""
    if media in _JSON_TYPES or (media.startswith("application/") and media.endswith("+json")):
        return None
    shown = ", ".join(repr(value[:60]) for value in declared) or "none"
    return ApiError(
        415,
        f"The request's Content-Type is {shown}, but this server reads only JSON bodies. {hint}",
        code="unsupported_media_type",
    )


_SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Routes that take no body: a POST to them may come without one, and then without a type.
BODYLESS = frozenset({"/ai/end", "/ai/scenario"})
# Routes anyone may call: a refusal there needs no credentials first.
PUBLIC = frozenset(
    {"/", "/healthcheck", "/ready", "/operator", "/docs", "/redoc", "/openapi.json"}
    | {"/docs/oauth2-redirect"}
)
_MEDIA = ApiError(415, "", code="unsupported_media_type")  # its hint needs the route
_route_contexts = getattr(routing, "iter_route_contexts", None)


class InputRules:
    """Pure ASGI (nothing is buffered, streams pass as they are): the rules, before any route.

    Refusals are rendered here, in the envelope and with the log line of every `ApiError`:
    the app's exception handlers sit inside the middleware stack, below this.
    """

    def __init__(self, app: ASGIApp, limits: Limits, authorize: Authorize | None) -> None:
        self.app = app
        self.limits = limits
        self.authorize = authorize

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            problem = await self._problem(scope)
            if problem is not None:
                request = Request(scope, receive)
                await (await refusal_reply(request, problem))(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _problem(self, scope: Scope) -> ApiError | None:
        """The refusal this request gets, or None to let the route answer."""
        headers = scope["headers"]
        problem = header_sizes_problem(headers, self.limits)
        if problem is not None:  # first, credentials included: they are headers too
            return problem
        problem = duplicate_header_problem(headers)
        if problem is None and scope["method"] not in _SAFE_METHODS:
            if media_type_problem(headers) is not None:
                problem = _MEDIA
        if problem is None:
            return None
        found = _route_of(scope)
        if found is None:  # not a route of this app: the router's 404 or 405 says so
            return None
        path, route = found
        if problem is _MEDIA:
            if path in BODYLESS and _no_body(headers):
                return None
            problem = media_type_problem(headers, hint_for(path))
        if self.authorize is not None and path not in PUBLIC and not isinstance(route, Mount):
            try:
                await principal_of(Request(scope), self.authorize)
            except ApiError as refused:
                return refused
        return problem


def app_routes(app: Any) -> Iterator[tuple[str, set[str] | None, BaseRoute]]:
    """(path template, methods, route) of every route of a FastAPI app, mounts included.

    FastAPI 0.16x keeps an included router as one entry of `app.routes`; `iter_route_contexts`
    lists what it holds. Older versions list the routes themselves.
    """
    routes = app.router.routes
    if _route_contexts is None:
        for route in routes:
            yield getattr(route, "path", ""), getattr(route, "methods", None), route
        return
    for context in _route_contexts(routes):
        yield context.path or "", context.methods, context.original_route


def _route_of(scope: Scope) -> tuple[str, BaseRoute] | None:
    """The path template and route that would answer the request (a mount counts), or None."""
    path, root = scope["path"], scope.get("root_path", "")
    path, method = path[len(root) :] if root and path.startswith(root) else path, scope["method"]
    for template, methods, route in app_routes(scope["app"]):
        if isinstance(route, Mount):
            if path == template or path.startswith(template.rstrip("/") + "/"):
                return template, route
        elif methods is not None and method in methods:
            if compile_path(template)[0].match(path):
                return template, route
    return None


def _no_body(headers: RawHeaders) -> bool:
    """No body and no declared type: `Content-Length` absent or 0, no chunked upload."""
    for name, value in headers:
        if name in (b"content-type", b"transfer-encoding"):
            return False
        if name == b"content-length" and value.strip() != b"0":
            return False
    return True
