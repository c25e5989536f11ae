"""H1: limits are enforced before a body is read in full; each refusal says which limit."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from server_flows import api, chat_flow, client_for
from support.flows import two_step_flow
from test_api_errors import HINT, error_body, failure

from picoflow.server import create_app
from picoflow.testing import ScriptedChatModel

MIB = 1024 * 1024
JSON = {"Content-Type": "application/json"}
CHUNK = 64 * 1024


class EndlessBody:
    """An ASGI `receive` that streams a body of `total` bytes and counts what was taken."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.taken = 0
        self._chunks = self.chunks()

    def chunks(self) -> Iterator[bytes]:
        yield b'{"flowName": "ChatFlow", "config": {"blob": "'
        while self.taken < self.total:
            yield b"x" * CHUNK

    async def receive(self) -> dict[str, Any]:
        chunk = next(self._chunks)
        self.taken += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": self.taken < self.total}


async def call_asgi(
    app: Any, body: EndlessBody, headers: list[tuple[bytes, bytes]]
) -> tuple[int, dict[str, Any]]:
    """One POST /ai/run straight through the ASGI interface, as uvicorn would make it."""
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/ai/run",
        "raw_path": b"/ai/run",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("test", 80),
    }
    await app(scope, body.receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(payload)


def too_large(limit: int, what: str) -> str:
    return (
        f"The request body {what} than this server accepts ({limit} bytes). Send a shorter "
        "message or a smaller config."
    )


async def test_h1_a_declared_huge_body_is_refused_before_a_byte_is_read() -> None:
    engine, app = api(chat_flow())
    body = EndlessBody(100 * MIB)
    status, reply = await call_asgi(app, body, [(b"content-length", str(100 * MIB).encode())])
    assert status == 413
    assert reply["code"] == "body_too_large"
    assert reply["message"] == too_large(256 * 1024, f"has {100 * MIB} bytes, more")
    assert body.taken == 0


async def test_h1_a_huge_body_without_length_is_cut_off_at_the_limit_not_buffered() -> None:
    """A chunked 100 MB body: the server stops reading once the limit is passed."""
    engine, app = api(chat_flow(), max_body_bytes=MIB)
    body = EndlessBody(100 * MIB)
    status, reply = await call_asgi(app, body, [])
    assert status == 413
    assert reply["message"] == too_large(MIB, "is longer")
    assert MIB < body.taken <= MIB + CHUNK + 100  # one chunk past the limit, never the rest
    assert await engine.store.load("x" * 24) is None


async def test_h1_a_body_at_the_limit_is_read() -> None:
    model = ScriptedChatModel(script=["ok"])
    body = json.dumps({"flowName": "HotelFlow", "message": "hi"}).encode()
    _, app = api(two_step_flow(model), max_body_bytes=len(body))
    async with client_for(app) as client:
        fits = await client.post("/ai/run", content=body, headers=JSON)
        over = await client.post("/ai/run", content=body + b" ", headers=JSON)
    assert fits.status_code == 200
    assert over.status_code == 413
    assert error_body(over) == failure(
        too_large(len(body), f"has {len(body) + 1} bytes, more"), code="body_too_large"
    )


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_h1_a_config_over_the_limit_is_413_and_nothing_is_stored(route: str) -> None:
    model = ScriptedChatModel(script=["ok"])
    engine, app = api(two_step_flow(model), max_config_bytes=100)
    config = {"tenant": "x" * 100}
    async with client_for(app) as client:
        reply = await client.post(
            route, json={"flowName": "HotelFlow", "message": "hi", "config": config}
        )
    assert reply.status_code == 413
    assert error_body(reply) == failure(
        "The config has 113 bytes as JSON; this server accepts at most 100. Keep large data "
        "out of the config (it is stored with the session) and send a reference to it instead.",
        code="config_too_large",
    )
    assert model.requests == []


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
async def test_h1_a_message_over_the_limit_is_413_and_reaches_no_model(route: str) -> None:
    model = ScriptedChatModel(script=["ok"])
    _, app = api(two_step_flow(model), max_message_chars=10)
    async with client_for(app) as client:
        long = await client.post(route, json={"flowName": "HotelFlow", "message": "x" * 11})
        fits = await client.post("/ai/run", json={"flowName": "HotelFlow", "message": "x" * 10})
    assert long.status_code == 413
    assert error_body(long) == failure(
        "The message has 11 characters; this server accepts at most 10. Shorten it or send it "
        "over several turns.",
        code="message_too_long",
    )
    assert fits.status_code == 200
    assert len(model.requests) == 1


def nested(depth: int) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for _ in range(depth - 2):  # the body and the config are two levels
        config = {"a": config}
    return {"flowName": "ChatFlow", "config": config}


TOO_DEEP = (
    "The request body nests JSON objects or arrays more than {} levels deep, the most this "
    "server accepts. Send a flatter config."
)


@pytest.mark.parametrize(
    "body",
    [
        json.dumps(nested(9)).encode(),
        b'{"flowName": "ChatFlow", "config": {"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}",
    ],
    ids=["one-level-too-deep", "deep-enough-to-exhaust-the-parser"],
)
async def test_h1_json_nested_too_deep_is_400_naming_the_limit(body: bytes) -> None:
    _, app = api(chat_flow(), max_json_depth=8)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=body, headers=JSON)
        fits = await client.post("/ai/run", json=nested(8))
    assert reply.status_code == 400
    assert error_body(reply) == failure(TOO_DEEP.format(8), code="too_deep")
    assert fits.status_code == 200


async def test_h3_invalid_utf8_is_400_not_an_unknown_route() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=b'{"flowName": "Chat\xffFlow"}', headers=JSON)
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        "The request body is not valid UTF-8 (the byte at offset 18 is not part of a UTF-8 "
        f"character). {HINT}",
        code="invalid_encoding",
    )


@pytest.mark.parametrize(
    ("body", "code", "message"),
    [
        (
            b'{"flowName": "ChatFlow", "message": "hi \\ud800 there"}',
            "invalid_text",
            "The request holds at message a lone surrogate (\\ud800), which is not valid "
            "Unicode text. Send whole characters (a surrogate pair, or the character itself).",
        ),
        (
            b'{"flowName": "ChatFlow", "config": {"\\udfff": 1}}',
            "invalid_text",
            "The request holds at config.\\udfff a lone surrogate (\\udfff), which is not valid "
            "Unicode text. Send whole characters (a surrogate pair, or the character itself).",
        ),
        (
            b'{"flowName": "ChatFlow", "config": {"ids": [1, 1180591620717411303424]}}',
            "number_too_large",
            "The request holds at config.ids[1] a number no store can keep "
            "(1180591620717411303424): integers must fit in 64 bits, other numbers in a double. "
            "Send such numbers as strings.",
        ),
        (
            b'{"flowName": "ChatFlow", "config": {"n": ' + b"9" * 5000 + b"}}",
            "number_too_large",
            "The request holds at config.n a number no store can keep "
            f"({'9' * 59}…): integers must fit in 64 bits, other numbers in a double. "
            "Send such numbers as strings.",
        ),
        (
            b'{"flowName": "ChatFlow", "config": {"price": -1e400}}',
            "number_too_large",
            "The request holds at config.price a number no store can keep (-1e400): integers "
            "must fit in 64 bits, other numbers in a double. Send such numbers as strings.",
        ),
    ],
    ids=["lone-surrogate", "surrogate-key", "int-over-64-bits", "5000-digits", "float-overflow"],
)
async def test_h3_values_no_store_can_keep_are_400_before_the_turn(
    body: bytes, code: str, message: str
) -> None:
    model = ScriptedChatModel(script=[])
    _, app = api(chat_flow(model))
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=body, headers=JSON)
    assert reply.status_code == 400
    assert reply.json()["code"] == code
    assert reply.json()["message"] == message
    assert model.requests == []


async def test_h1_a_utf8_byte_order_mark_is_ignored() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/run", content=b'\xef\xbb\xbf{"flowName": "ChatFlow"}', headers=JSON
        )
    assert reply.status_code == 200


async def test_h1_a_surrogate_pair_and_a_64_bit_int_are_fine() -> None:
    _, app = api(chat_flow())
    body = (
        b'{"flowName": "ChatFlow", "message": "\\ud83d\\ude00", '
        b'"config": {"low": -9223372036854775808, "high": 9223372036854775807}}'
    )
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=body, headers=JSON)
    assert reply.status_code == 200


@pytest.mark.parametrize(
    "option", ["max_body_bytes", "max_config_bytes", "max_message_chars", "max_json_depth"]
)
@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_h1_limits_must_be_positive_integers(option: str, value: Any) -> None:
    engine, _ = api(chat_flow())
    with pytest.raises(ValueError) as caught:
        create_app(engine, **{option: value})
    assert str(caught.value) == f"{option} must be a positive integer, got {value!r}."


async def test_h1_a_content_length_that_is_not_a_number_is_400() -> None:
    _, app = api(chat_flow())
    body = EndlessBody(10)
    status, reply = await call_asgi(app, body, [(b"content-length", b"lots")])
    assert status == 400
    assert reply["message"] == "The Content-Length header 'lots' is not a number of bytes."
    assert body.taken == 0
