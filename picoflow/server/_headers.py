"""The session header: how a client names its session across turns (PicoFlow's contract).

PicoFlow clients send and read `CHAT_SESSION_ID`. Header names are case-insensitive, but some
reverse proxies drop names that contain underscores (nginx without `underscores_in_headers on;`),
so `chat-session-id` is accepted as well, and every reply that names a session carries both.
"""

from __future__ import annotations

import re
import uuid

from fastapi import Request

__all__ = [
    "SESSION_HEADER",
    "SESSION_HEADER_ALT",
    "REQUEST_ID_HEADER",
    "session_headers",
    "request_id_for",
]

SESSION_HEADER = "CHAT_SESSION_ID"
SESSION_HEADER_ALT = "chat-session-id"
REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")


def session_headers(session_id: str | None) -> dict[str, str]:
    """Response headers that name the session, in both spellings; none without a session."""
    if not session_id:
        return {}
    return {SESSION_HEADER: session_id, SESSION_HEADER_ALT: session_id}


def request_id_for(request: Request) -> str:
    """The id a failure is logged under: the proxy's `X-Request-ID` if sane, else a new one.

    Reusing the proxy's id lets an operator follow one request through both logs.
    """
    incoming = request.headers.get(REQUEST_ID_HEADER, "")
    if _REQUEST_ID.fullmatch(incoming):
        return incoming
    return uuid.uuid4().hex
