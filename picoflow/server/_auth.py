"""Who is calling (H4): a pluggable `authorize` hook, and an API-key helper to plug in.

`authorize(request)` returns the principal's name (any non-empty string: a user id, a tenant, a
client name), or None when the request carries no valid credentials (401); raising
`PermissionError` refuses a known caller (403, with the error's text as the message). It may be
a plain or an `async` function. The principal owns every session it creates: the engine stores
it with the session, and another principal's session id behaves as an unknown one.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from fastapi import Request

from picoflow.server._errors import ApiError

__all__ = ["Authorize", "Principal", "api_key_auth", "principal_of", "caller_of"]


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling, and what they may do beyond their own sessions (K7).

    `authorize` may return one instead of a plain name. Roles: "approver" may list and resolve
    approvals, "operator" may list handed-off sessions, answer in them and hand them back.
    """

    name: str
    roles: frozenset[str] = frozenset()


Authorize = Callable[[Request], "str | Principal | None | Awaitable[str | Principal | None]"]

MIN_KEY_CHARS = 16
_BEARER = "bearer "


def api_key_auth(keys: Mapping[str, str]) -> Callable[[Request], str | None]:
    """An `authorize` hook for `create_app` that accepts API keys, each naming its principal.

    Clients send a key as `Authorization: Bearer <key>` or `X-API-Key: <key>`. Keys are
    compared by their SHA-256 digests, so the time a lookup takes says nothing about how
    much of a key was right. Two keys may name the same principal (key rotation: both work
    until you remove the old one, and sessions stay with the principal).

    Args:
        keys: API key -> principal name, e.g. `{os.environ["ACME_KEY"]: "acme"}`.

    Raises:
        ValueError: no keys, a key shorter than 16 characters, or an empty principal.
    """
    if not keys:
        raise ValueError("api_key_auth needs at least one API key; none were given.")
    digests: dict[bytes, str] = {}
    for key, principal in keys.items():
        if not isinstance(key, str) or len(key) < MIN_KEY_CHARS:
            length = len(key) if isinstance(key, str) else type(key).__name__
            raise ValueError(
                f"API keys must be strings of at least {MIN_KEY_CHARS} characters; the key of "
                f"principal {principal!r} is {length}. Generate keys with "
                "`python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
            )
        if not isinstance(principal, str) or not principal:
            raise ValueError(
                f"Each API key must name a principal (a non-empty string), got {principal!r}."
            )
        digests[_digest(key)] = principal

    def authorize(request: Request) -> str | None:
        key = _presented_key(request)
        return None if key is None else digests.get(_digest(key))

    return authorize


def _presented_key(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header[: len(_BEARER)].lower() == _BEARER:
        return header[len(_BEARER) :].strip() or None
    return request.headers.get("x-api-key") or None


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


async def principal_of(request: Request, authorize: Authorize | None) -> str | None:
    """The caller's principal; None when the app has no `authorize` hook (anyone may call)."""
    if authorize is None:
        return None
    try:
        outcome = authorize(request)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except PermissionError as exc:
        message = str(exc) or "These credentials do not allow using this API."
        raise ApiError(403, message, code="forbidden") from None
    if outcome is None:
        raise ApiError(
            401,
            "This server needs credentials, and the request has none it accepts. Send your API "
            "key as `Authorization: Bearer <key>` (or `X-API-Key: <key>`).",
            code="unauthorized",
        )
    caller = outcome if isinstance(outcome, Principal) else None
    name = outcome.name if isinstance(outcome, Principal) else outcome
    if not isinstance(name, str) or not name:
        raise TypeError(
            f"authorize() must return a principal name (a non-empty string), a Principal or "
            f"None, got {outcome!r}."
        )
    request.state.picoflow_caller = caller or Principal(name)
    return name


def caller_of(request: Request) -> Principal | None:
    """The principal `principal_of` found for this request, with its roles (None: no auth)."""
    caller: Principal | None = getattr(request.state, "picoflow_caller", None)
    return caller
