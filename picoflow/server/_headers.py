"""The session header: how a client names its session across turns (PicoFlow's contract).

PicoFlow clients send and read `CHAT_SESSION_ID`. Header names are case-insensitive, but some
reverse proxies drop names that contain underscores (nginx without `underscores_in_headers on;`),
so `chat-session-id` is accepted as well, and every reply that names a session carries both.
"""

from __future__ import annotations

import os
import re

from fastapi import Request

__all__ = [
    "SESSION_HEADER",
    "SESSION_HEADER_ALT",
    "REQUEST_ID_HEADER",
    "session_headers",
    "request_id_for",
    "wants_raw",
    "escaped",
    "logged_path",
]

SESSION_HEADER = "CHAT_SESSION_ID"
SESSION_HEADER_ALT = "chat-session-id"
REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
# What must not reach a log line raw: C0 and C1 controls and DEL (a NUL, a newline that forges
# a line, a terminal escape), line separators, bidi overrides, lone surrogates, the backslash.
_UNSAFE = re.compile(
    r"[\x00-\x1f\x7f-\x9f\\\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)


def escaped(text: str) -> str:
    r"""A client's text (a path, a header), safe to log: each unsafe character as an escape (H11).

    >>> print(escaped("/ai/x\x00y\x1b[31m\\"))
    /ai/x\x00y\x1b[31m\\
    """
    return _UNSAFE.sub(_escape, text)


def logged_path(request: Request) -> str:
    """The path as the client sent it, escaped: `request.url.path` silently drops newlines."""
    return escaped(request.scope["path"])


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\\":
        return "\\\\"
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def session_headers(session_id: str | None) -> dict[str, str]:
    """Response headers that name the session, in both spellings; none without a session."""
    if not session_id:
        return {}
    return {SESSION_HEADER: session_id, SESSION_HEADER_ALT: session_id}


def request_id_for(request: Request) -> str:
    """The id a failure is logged under: the proxy's `X-Request-ID` if sane, else a new one.

    Reusing the proxy's id lets an operator follow one request through both logs. The id is
    kept on the request, so the log entry and the reply always name the same one.
    """
    # `request.state` keeps its values in the scope's "state" dict; asking the dict spares the
    # KeyError and AttributeError a missing name raises inside `State.__getattr__`.
    known: str | None = request.scope.get("state", {}).get("request_id")
    if known is not None:
        return known
    incoming = request.headers.get(REQUEST_ID_HEADER, "")
    request_id = incoming if _REQUEST_ID.fullmatch(incoming) else new_request_id()
    request.state.request_id = request_id
    return request_id


def new_request_id() -> str:
    """`uuid.uuid4().hex`, built from the same 16 random bytes at a third of its cost.

    Every reply carries a request id; `uuid4` builds a `UUID` object only for its hex.

    >>> import uuid; uuid.UUID(hex=new_request_id()).version
    4
    """
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # the RFC 4122 variant
    return raw.hex()


def wants_raw(accept: str | None, content_type: str) -> bool:
    """True only when the `Accept` header prefers the reply's own media type to JSON.

    PicoFlow's JS client and chat-ui parse every reply as JSON, so the envelope is the default;
    a wildcard (`*/*`) never selects a raw body, only the media type named outright does.

    >>> wants_raw("text/markdown", "text/markdown")
    True
    >>> wants_raw("application/json, text/plain, */*", "text/markdown")
    False
    >>> wants_raw("text/markdown, application/json;q=0.5", "text/markdown; charset=utf-8")
    True
    """
    if not accept:
        return False
    media = content_type.split(";")[0].strip().lower()
    raw = envelope = 0.0
    for part in accept.split(","):
        name, _, params = part.partition(";")
        name = name.strip().lower()
        if name == media:
            raw = max(raw, _quality(params))
        elif name == "application/json":
            envelope = max(envelope, _quality(params))
    return raw > envelope


def _quality(params: str) -> float:
    """The `q` of one Accept entry: 1 when absent, 0 when unreadable (never prefer it)."""
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() == "q":
            try:
                return min(max(float(value), 0.0), 1.0)
            except ValueError:
                return 0.0
    return 1.0
