"""Request limits (H1): refuse a body that is too large or too deep before it costs memory.

The body of a turn is read here, not by FastAPI: FastAPI reads the whole body into memory before
any check can run, so a 100 MB `config` would be buffered (and stored) before anything said no.
Here the declared `Content-Length` is checked before a byte is read, and the bytes actually
received are counted while they stream in, so at most `max_body_bytes` are ever held. Every
route reads its body here, so every route refuses the same bodies (H8): a JSON object with a
duplicate key, for one, is a 400 wherever it is sent. What a request's headers must be is
checked before any route, by `_input_rules`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fastapi import Request
from pydantic import ValidationError
from starlette.requests import ClientDisconnect

from picoflow.server._errors import ApiError, ClientGone, validation_problem
from picoflow.server._input_rules import HINT, header_sizes_problem, media_type_problem
from picoflow.server._schemas import RunRequest
from picoflow.session import continuation

__all__ = [
    "Limits",
    "read_json_body",
    "read_json_request",
    "read_optional_body",
    "check_turn_sizes",
    "check_text_sizes",
    "check_header_sizes",
    "check_single",
    "read_run_request",
    "refuse_empty_message",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
_INT64 = range(-(2**63), 2**63)


@dataclass(frozen=True, slots=True)
class Limits:
    """The sizes one request may have; `create_app` documents each one."""

    max_body_bytes: int = 256 * 1024
    max_config_bytes: int = 16 * 1024
    max_message_chars: int = 8000
    max_json_depth: int = 32
    max_header_bytes: int = 32 * 1024
    max_headers: int = 100

    def __post_init__(self) -> None:
        for name in (
            "max_body_bytes",
            "max_config_bytes",
            "max_message_chars",
            "max_json_depth",
            "max_header_bytes",
            "max_headers",
        ):
            value = getattr(self, name)
            if type(value) is not int or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def check_header_sizes(request: Request, limits: Limits) -> None:
    """`header_sizes_problem`, raised; the app's input rules already ran it (H9)."""
    problem = header_sizes_problem(request.scope["headers"], limits)
    if problem is not None:
        raise problem


def check_single(request: Request, *names: str) -> None:
    """400 when a header that names one thing is sent twice: which one wins is a guess."""
    for name in names:
        if len(request.headers.getlist(name)) > 1:
            raise ApiError(
                400,
                f"The {name} header was sent more than once. Send it once, with one value.",
                code="duplicate_header",
            )


async def read_run_request(request: Request, limits: Limits) -> RunRequest:
    """The body of `/ai/run` or `/ai/stream`, read within the limits and validated."""
    _check_media_type(request)
    body = await _read_body(request, limits.max_body_bytes)
    data = _parse(body, limits.max_json_depth)
    try:
        run = RunRequest.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(validation_problem(error) for error in exc.errors()[:3])
        raise ApiError(
            400, f"The request is not valid ({problems}). {HINT}", code="invalid_body"
        ) from None
    _check_sizes(run, limits)
    return run


async def read_json_body(request: Request, limits: Limits) -> Any:
    """Any JSON body, read within the body-size and depth limits (the people routes, K7)."""
    return _parse(await _read_body(request, limits.max_body_bytes), limits.max_json_depth)


async def read_json_request(request: Request, limits: Limits, hint: str) -> Any:
    """The JSON body of a route that changes a session: declared JSON (415), within the limits.

    An empty body reads as `{}`, for routes whose fields are all optional. `hint` is the
    example body the route's error messages show.
    """
    _check_media_type(request, hint)
    body = await _read_body(request, limits.max_body_bytes)
    return _parse(body, limits.max_json_depth, hint) if body.strip() else {}


async def _read_body(request: Request, limit: int) -> bytes:
    """At most `limit` bytes of body; the rest is never read from the connection."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise ApiError(
                400,
                f"The Content-Length header {declared[:40]!r} is not a number of bytes.",
                code="invalid_body",
            )
        if int(declared) > limit:
            raise _too_large(f"has {int(declared)} bytes, more", limit)
    chunks: list[bytes] = []
    received = 0
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise _too_large("is longer", limit)
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGone(received) from None
    return b"".join(chunks)


async def read_optional_body(request: Request, limits: Limits) -> Any:
    """The body of a route that needs none (`/ai/end`): None when empty, else checked JSON.

    A body that is sent is read like any other (H8: duplicate keys, depth, sizes), so every
    POST route refuses the same bad bodies, even one it would ignore.
    """
    body = await _read_body(request, limits.max_body_bytes)
    return _parse(body, limits.max_json_depth) if body.strip() else None


def _check_media_type(request: Request, hint: str = HINT) -> None:
    """`media_type_problem`, raised; the app's input rules already ran it (H8)."""
    problem = media_type_problem(request.scope["headers"], hint)
    if problem is not None:
        raise problem


def _too_large(what: str, limit: int) -> ApiError:
    return ApiError(
        413,
        f"The request body {what} than this server accepts ({limit} bytes). Send a shorter "
        "message or a smaller config.",
        code="body_too_large",
    )


def _parse(body: bytes, max_depth: int, hint: str = HINT) -> Any:
    """JSON from UTF-8 bytes; each way it can be wrong gets its own 400."""
    try:
        text = body.decode("utf-8").removeprefix("\ufeff")  # a BOM some tools add (RFC 8259)
    except UnicodeDecodeError as exc:
        raise ApiError(
            400,
            f"The request body is not valid UTF-8 (the byte at offset {exc.start} is not part "
            f"of a UTF-8 character). {hint}",
            code="invalid_encoding",
        ) from None
    try:
        if text.startswith("\ufeff"):  # a second BOM: refused as `json.loads` refuses it
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
        data = _DECODER.decode(text)
    except RecursionError:
        raise _too_deep(max_depth) from None
    except _DuplicateKey as exc:
        raise ApiError(
            400,
            f"The request is not valid (the key {_shown(exc.key)!r} appears twice in one JSON "
            f"object, and which one counts would be a guess). {hint}",
            code="invalid_body",
        ) from None
    except ValueError as exc:
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise ApiError(
            400,
            f"The request is not valid (the body is not valid JSON: {reason}). {hint}",
            code="invalid_body",
        ) from None
    # Valid UTF-8 holds no lone surrogate: only a `\u` escape can make one.
    _check_values(data, max_depth, texts="\\u" in text)
    return data


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


@dataclass(frozen=True, slots=True)
class _Unkeepable:
    """A number as the client wrote it, too large to convert; `_check_values` refuses it."""

    text: str

    def __str__(self) -> str:
        return self.text


def _parse_int(text: str) -> int | _Unkeepable:
    # 64-bit ints have at most 20 characters; longer ones are kept as text, not converted
    # (Python refuses ints over 4300 digits with advice meant for the server's programmer).
    return int(text) if len(text) <= 20 else _Unkeepable(text)


def _parse_float(text: str) -> float | _Unkeepable:
    number = float(text)
    return number if math.isfinite(number) else _Unkeepable(text)  # 1e400 is infinity


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refused when a key comes twice (H8): `json` would keep the last one."""
    made = dict(pairs)
    if len(made) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return made


# `json.loads` with these hooks builds a decoder per call, a third of the parse of a turn's body.
_DECODER = json.JSONDecoder(
    object_pairs_hook=_object,
    parse_constant=_refuse_constant,
    parse_int=_parse_int,
    parse_float=_parse_float,
)


def _too_deep(max_depth: int) -> ApiError:
    return ApiError(
        400,
        f"The request body nests JSON objects or arrays more than {max_depth} levels deep, "
        "the most this server accepts. Send a flatter config.",
        code="too_deep",
    )


def _check_values(data: Any, max_depth: int, *, texts: bool = True) -> None:
    """Depth, 64-bit integers and valid Unicode, checked without recursion.

    Every store keeps exactly these values (H7), so a value outside them is the client's
    mistake, said now, rather than a store failure after the model has run. `texts=False`
    skips the search for lone surrogates, for JSON text that cannot hold one.
    """
    pending: list[tuple[Any, int, str]] = [(data, 1, "")]
    while pending:
        value, depth, path = pending.pop()
        if isinstance(value, dict | list):
            if depth > max_depth:
                raise _too_deep(max_depth)
            children = _children(value, path, texts)
            pending.extend((item, depth + 1, where) for where, item in children)
        elif isinstance(value, str):
            if texts:
                _check_text(value, path)
        elif isinstance(value, _Unkeepable) or (isinstance(value, int) and value not in _INT64):
            raise ApiError(
                400,
                f"The request holds at {_shown(path)} a number no store can keep "
                f"({_shown(str(value))}): integers must fit in 64 bits, other numbers in a "
                "double. Send such numbers as strings.",
                code="number_too_large",
            )


def _children(
    value: dict[str, Any] | list[Any], path: str, texts: bool
) -> Iterator[tuple[str, Any]]:
    """(path, item) of each member; keys are text too, so they are checked here."""
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield f"{path}[{index}]", item
        return
    for key, item in value.items():
        where = f"{path}.{key}" if path else key
        if texts:
            _check_text(key, where)
        yield where, item


def _check_text(text: str, path: str) -> None:
    match = _SURROGATE.search(text)
    if match is not None:
        raise ApiError(
            400,
            f"The request holds at {_shown(path)} a lone surrogate "
            f"(\\u{ord(match.group()):04x}), which is not valid Unicode text. Send whole "
            "characters (a surrogate pair, or the character itself).",
            code="invalid_text",
        )


def _shown(path: str) -> str:
    """A client-chosen path, safe to echo: surrogates escaped, at most 60 characters."""
    shown = _SURROGATE.sub(lambda match: f"\\u{ord(match.group()):04x}", path)
    return (shown if len(shown) <= 60 else shown[:59] + "…") or "the top level"


def refuse_empty_message(doc: dict[str, Any], message: str) -> None:
    """400 before a stream starts, for a request the engine would refuse (E2).

    Once the stream has begun its status is 200, so the refusal would reach the client only
    as a `done` event carrying 400: said here, a client gets the real status.
    """
    if message.strip() or continuation(doc, datetime.now(UTC)) != "continue":
        return
    raise ApiError(
        400,
        "The message is empty. Send the user's text; an empty message only starts a new session.",
        code="invalid_request",
        session=doc["id"],
    )


def _check_sizes(run: RunRequest, limits: Limits) -> None:
    check_turn_sizes(run.message, run.config, limits)


def check_turn_sizes(message: str, config: dict[str, Any] | None, limits: Limits) -> None:
    """Message length and config size: 413, with the limit, before any model is called."""
    if len(message) > limits.max_message_chars:
        raise ApiError(
            413,
            f"The message has {len(message)} characters; this server accepts at most "
            f"{limits.max_message_chars}. Shorten it or send it over several turns.",
            code="message_too_long",
        )
    if config is None:
        return
    size = len(json.dumps(config, ensure_ascii=False, separators=(",", ":")).encode())
    if size > limits.max_config_bytes:
        raise ApiError(
            413,
            f"The config has {size} bytes as JSON; this server accepts at most "
            f"{limits.max_config_bytes}. Keep large data out of the config (it is stored with "
            "the session) and send a reference to it instead.",
            code="config_too_large",
        )


def check_text_sizes(fields: dict[str, Any], limits: Limits) -> None:
    """413 for a text over `max_message_chars` or args over `max_config_bytes` (H11).

    The texts people send (operator replies, notes) are stored and read by the model like a
    user's message, so they get its limit; edited args are a tool's input, bounded like `config`.
    """
    for name, value in fields.items():
        if isinstance(value, str) and len(value) > limits.max_message_chars:
            raise ApiError(
                413,
                f"The {name} has {len(value)} characters; this server accepts at most "
                f"{limits.max_message_chars} (max_message_chars). Shorten it.",
                code=f"{name}_too_long",
            )
        if isinstance(value, dict):
            size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
            if size > limits.max_config_bytes:
                raise ApiError(
                    413,
                    f"The {name} have {size} bytes as JSON; this server accepts at most "
                    f"{limits.max_config_bytes} (max_config_bytes). Send smaller {name}.",
                    code=f"{name}_too_large",
                )
