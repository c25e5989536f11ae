"""H1/H3: what a request must look like before a turn runs (issue #25, items 1 and 2).

A body that is not declared JSON is refused (a page of another site can send `text/plain`
without a CORS preflight), a header that names one thing may not come twice, headers are
bounded, an empty message on a running session is refused before a stream starts, and a client
that goes away mid-body costs one log line.
"""

from __future__ import annotations

import json
import logging
import socket
from typing import Any

import pytest
from server_flows import api, chat_flow, client_for, live_server
from test_api_errors import HINT, error_body, failure

from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

HELLO = {"flowName": "ChatFlow", "message": "hello"}
BODY = json.dumps(HELLO).encode()


def counted() -> tuple[ScriptedChatModel, Any]:
    model = ScriptedChatModel(policy=lambda messages, tools: "hi")
    return model, chat_flow(model)


@pytest.mark.parametrize("route", ["/ai/run", "/ai/stream"])
@pytest.mark.parametrize(
    ("content_type", "shown"),
    [
        ("text/plain", "'text/plain'"),
        ("text/plain;charset=UTF-8", "'text/plain;charset=UTF-8'"),
        ("application/x-www-form-urlencoded", "'application/x-www-form-urlencoded'"),
        ("multipart/form-data; boundary=x", "'multipart/form-data; boundary=x'"),
        (None, "none"),
    ],
)
async def test_h1_a_body_not_declared_json_is_415_and_runs_no_turn(
    route: str, content_type: str | None, shown: str
) -> None:
    """The content types a cross-site 'simple' request may carry, and none at all."""
    model, flow = counted()
    store = MemoryStore()
    _, app = api(flow, store=store)
    headers = {} if content_type is None else {"Content-Type": content_type}
    async with client_for(app) as client:
        reply = await client.post(route, content=BODY, headers=headers)
    assert reply.status_code == 415
    assert error_body(reply) == failure(
        f"The request's Content-Type is {shown}, but this server reads only JSON bodies. {HINT}",
        code="unsupported_media_type",
    )
    assert model.requests == [] and repr(store) == "MemoryStore(sessions=0)"


@pytest.mark.parametrize(
    "content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"]
)
async def test_h1_json_bodies_are_read_whatever_their_parameters(content_type: str) -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=BODY, headers={"Content-Type": content_type})
    assert reply.status_code == 200


async def test_h1_two_content_types_are_415() -> None:
    _, app = api(chat_flow())
    headers = [("Content-Type", "application/json"), ("Content-Type", "text/plain")]
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=BODY, headers=headers)
    assert reply.status_code == 415
    assert reply.json()["message"].startswith(
        "The request's Content-Type is 'application/json', 'text/plain', but this server"
    )


@pytest.mark.parametrize("name", ["CHAT_SESSION_ID", "chat-session-id", "Idempotency-Key"])
async def test_h1_a_header_naming_one_thing_sent_twice_is_400(name: str) -> None:
    model, flow = counted()
    _, app = api(flow)
    async with client_for(app) as client:
        first = (await client.post("/ai/run", json=HELLO)).json()["session"]
        second = (await client.post("/ai/run", json=HELLO)).json()["session"]
        value = (first, second) if name != "Idempotency-Key" else ("k-1", "k-2")
        headers = [(name, value[0]), (name, value[1])]
        reply = await client.post("/ai/run", json=HELLO, headers=headers)
    assert reply.status_code == 400
    assert error_body(reply) == failure(
        f"The {name} header was sent more than once. Send it once, with one value.",
        code="duplicate_header",
    )
    assert len(model.requests) == 2  # the two sessions' openings, nothing for the refused one


@pytest.mark.parametrize(
    "headers", [[("X-Big", "x" * 100_000)], [(f"X-H{n}", "1") for n in range(1000)]]
)
async def test_h1_too_many_or_too_large_headers_are_431(headers: list[tuple[str, str]]) -> None:
    """One 100 KB header, or 1,000 small ones; the chat page is refused as well."""
    model, flow = counted()
    _, app = api(flow)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", content=BODY, headers=headers)
        page = await client.get("/", headers=headers)
    # httpx adds its own few headers (host, accept, content-type, content-length, ...)
    body = error_body(reply)
    assert reply.status_code == page.status_code == 431
    assert body["code"] == "headers_too_large"
    assert body["message"].endswith(
        "this server accepts at most 100 headers and 32768 bytes. Send fewer or smaller headers "
        "(large cookies are the usual cause)."
    )
    assert model.requests == []


async def test_h1_header_limits_are_settings() -> None:
    _, app = api(chat_flow(), max_headers=4, max_header_bytes=10_000)
    async with client_for(app) as client:
        reply = await client.post("/ai/run", json=HELLO, headers={"X-A": "1", "X-B": "2"})
    assert reply.status_code == 431


async def test_e2_stream_refuses_an_empty_message_with_400_before_the_stream() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        session = (await client.post("/ai/run", json=HELLO)).json()["session"]
        reply = await client.post(
            "/ai/stream", json={**HELLO, "message": "  "}, headers={"CHAT_SESSION_ID": session}
        )
    assert reply.status_code == 400
    assert reply.headers["content-type"] == "application/json"
    assert error_body(reply) == failure(
        "The message is empty. Send the user's text; an empty message only starts a new session.",
        session,
        code="invalid_request",
    )


class Lines(logging.Handler):
    """Every line the server logs, tracebacks included, as the console would show them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.seen: set[int] = set()  # a record reaching two of the loggers counts once
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if id(record) not in self.seen:
            self.seen.add(id(record))
            self.lines += self.format(record).splitlines()


def half_a_body(url: str) -> None:
    """Declare 1000 bytes, send 20, close: a client that went away mid-upload."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /ai/run HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b"Content-Length: 1000\r\nX-Request-ID: gone-1\r\n\r\n" + BODY[:20]
        )
        sock.shutdown(socket.SHUT_WR)
        sock.recv(65536)  # returns when the server closes: the request is over


def test_h2_a_client_gone_mid_body_is_one_info_line_without_traceback() -> None:
    """Issue #25 item 2: 200 half-sent bodies made 27,452 log lines; now one line each."""
    model, flow = counted()
    _, app = api(flow)
    handler = Lines()
    loggers = [
        logging.getLogger(name) for name in ("", "uvicorn", "uvicorn.error", "uvicorn.access")
    ]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        with live_server(app) as live:
            for _ in range(3):
                half_a_body(live.url)
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
    ours = [line for line in handler.lines if "picoflow" in line]
    gone = (
        "INFO picoflow.server._errors POST /ai/run: the client went away after sending 20 "
        "bytes of its body (request id gone-1)"
    )
    assert ours == [gone] * 3, handler.lines
    assert len(handler.lines) <= 3 * 2, handler.lines  # no traceback anywhere
    assert model.requests == []


async def test_h1_the_chat_route_refuses_too_many_headers_as_the_run_route_does() -> None:
    """H1: `/ai/run` checks its headers itself; `/ai/chat`, the same turn, gets the same 431."""
    model, flow = counted()
    _, app = api(flow, chat_route=True, max_headers=4)
    headers = {"X-A": "1", "X-B": "2"}
    async with client_for(app) as client:
        replies = [await client.post(route, json=HELLO, headers=headers) for route in RUN_ROUTES]
    assert [reply.status_code for reply in replies] == [431, 431]
    assert [error_body(reply)["code"] for reply in replies] == ["headers_too_large"] * 2
    assert model.requests == []


RUN_ROUTES = ("/ai/run", "/ai/chat")


async def test_h1_a_body_after_two_byte_order_marks_is_400_as_json_loads_says() -> None:
    """H1: one BOM is dropped (RFC 8259); a second one is refused with `json`'s own reason."""
    _, app = api(chat_flow())
    async with client_for(app) as client:
        one = await client.post("/ai/run", content=b"\xef\xbb\xbf" + BODY, headers=JSON_TYPE)
        two = await client.post("/ai/run", content=b"\xef\xbb\xbf" * 2 + BODY, headers=JSON_TYPE)
    assert one.status_code == 200
    assert two.status_code == 400
    assert error_body(two)["message"] == (
        "The request is not valid (the body is not valid JSON: Unexpected UTF-8 BOM (decode "
        f"using utf-8-sig)). {HINT}"
    )


JSON_TYPE = {"Content-Type": "application/json"}


def test_h2_a_new_request_id_is_a_version_4_uuid_in_hex() -> None:
    """H2: the id a reply carries when the proxy sent none, as `uuid.uuid4().hex` makes it."""
    import uuid

    from picoflow.server._headers import new_request_id

    ids = {new_request_id() for _ in range(200)}
    assert len(ids) == 200
    for request_id in ids:
        parsed = uuid.UUID(hex=request_id)
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        assert parsed.hex == request_id
