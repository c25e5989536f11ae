"""O5: a streamed turn's events have ids, are kept, and a client that reconnects gets the rest.

`GET /ai/stream/{turn}` with `Last-Event-ID` answers the events after it (the turn here has
ended, so from the store); tests on a real server follow a turn that is still running, and
`tests/stores/test_o5_streams_across_workers.py` resumes on another app over SQLite and MongoDB.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from server_flows import GREETING, api, chat_flow, client_for, live_server, sse

from picoflow import Flow, Step, stay, tool
from picoflow.errors import StoreError
from picoflow.server import api_key_auth, create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

BODY = {"flowName": "ChatFlow", "message": "hello"}
ANA, BOB = "ana-key-0123456789abcdef", "bob-key-0123456789abcdef"


def frames(text: str) -> list[str]:
    """The raw frames of an SSE body, each with its blank line."""
    return [f"{frame}\n\n" for frame in text.split("\n\n") if frame.strip()]


def ids(text: str) -> list[str]:
    return [line[4:] for line in text.splitlines() if line.startswith("id: ")]


def turn_of(text: str) -> str:
    return ids(text)[0].split(":")[0]


async def test_o5_every_event_of_a_streamed_turn_has_an_id_of_its_turn_counting_from_one() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        first = await client.post("/ai/stream", json=BODY)
        second = await client.post("/ai/stream", json=BODY)
    for reply in (first, second):
        turn = turn_of(reply.text)
        count = len(sse(reply.text))
        assert ids(reply.text) == [f"{turn}:{n}" for n in range(1, count + 1)]
        assert all(frame.startswith("event: ") for frame in frames(reply.text))
    assert turn_of(first.text) != turn_of(second.text)  # a new id per turn
    assert sse(first.text)[-1][0] == "done" and len(turn_of(first.text)) == 16


async def test_o5_a_reconnect_with_last_event_id_gets_the_rest_byte_for_byte() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        original = await client.post("/ai/stream", json=BODY)
        sent = frames(original.text)
        turn = turn_of(original.text)
        rest = await client.get(f"/ai/stream/{turn}", headers={"Last-Event-ID": f"{turn}:2"})
        whole = await client.get(f"/ai/stream/{turn}")  # no Last-Event-ID: from the start
        done = await client.get(
            f"/ai/stream/{turn}", headers={"Last-Event-ID": f"{turn}:{len(sent)}"}
        )
    assert rest.status_code == 200
    assert rest.headers["content-type"] == "text/event-stream; charset=utf-8"
    assert rest.headers["cache-control"] == "no-cache"
    assert frames(rest.text) == sent[2:]
    assert frames(whole.text) == sent
    tokens = "".join(data["text"] for kind, data in sse(whole.text) if kind == "token")
    assert tokens == GREETING == sse(rest.text)[-1][1]["message"]
    # A client that has `done` gets 204: EventSource stops reconnecting on it.
    assert (done.status_code, done.text) == (204, "")


async def test_o5_unknown_turns_are_404_and_a_bad_last_event_id_is_400() -> None:
    _, app = api(chat_flow())
    async with client_for(app) as client:
        turn = turn_of((await client.post("/ai/stream", json=BODY)).text)
        unknown = await client.get("/ai/stream/NoSuchTurn0000")
        garbage = await client.get("/ai/stream/not:a:turn")
        other = await client.get(
            f"/ai/stream/{turn}", headers={"Last-Event-ID": "SomeOtherTurn1:3"}
        )
        wordy = await client.get(f"/ai/stream/{turn}", headers={"Last-Event-ID": f"{turn}:x"})
    assert unknown.status_code == 404 and garbage.status_code == 404
    assert unknown.json()["code"] == "not_found"
    assert unknown.json()["message"] == (
        "No stream of turn 'NoSuchTurn0000' is kept for you: the id is unknown, or the turn "
        "ended more than 600 seconds ago. Its reply, if the turn succeeded, is in the "
        "session: continue the session, or send the message again with the same "
        "Idempotency-Key to get the reply."
    )
    for reply in (other, wordy):
        assert reply.status_code == 400
        assert reply.json()["code"] == "invalid_last_event_id"
        assert reply.json()["message"].startswith(
            f"The Last-Event-ID header must be the id of an event of this turn, '{turn}:<n>', got"
        )


async def test_o5_a_post_with_last_event_id_is_refused_before_the_turn_runs() -> None:
    """A client resuming by POST would run its message again: it is told to GET instead."""
    model = ScriptedChatModel(script=["Hi."])
    _, app = api(chat_flow(model))
    async with client_for(app) as client:
        reply = await client.post(
            "/ai/stream", json=BODY, headers={"Last-Event-ID": "AbCdEfGh12345678:3"}
        )
    assert reply.status_code == 400 and reply.json()["code"] == "invalid_last_event_id"
    assert "send GET /ai/stream/<turn> with that header" in reply.json()["message"]
    assert model.requests == []


async def test_o5_h4_another_principals_turn_is_as_unknown_as_no_turn() -> None:
    _, app = api(chat_flow(), authorize=api_key_auth({ANA: "ana", BOB: "bob"}))
    async with client_for(app) as client:
        mine = await client.post("/ai/stream", json=BODY, headers={"X-API-Key": ANA})
        turn = turn_of(mine.text)
        theirs = await client.get(f"/ai/stream/{turn}", headers={"X-API-Key": BOB})
        nobody = await client.get(f"/ai/stream/{turn}")
        again = await client.get(f"/ai/stream/{turn}", headers={"X-API-Key": ANA})
    assert theirs.status_code == 404
    assert theirs.json()["message"].startswith(f"No stream of turn '{turn}' is kept for you")
    assert nobody.status_code == 401
    assert frames(again.text) == frames(mine.text)


async def test_o5_an_idempotent_replay_is_kept_and_resumable_too() -> None:
    _, app = api(chat_flow())
    key = {"Idempotency-Key": "6f0c2a36-resume-1"}
    async with client_for(app) as client:
        first = await client.post("/ai/stream", json=BODY, headers=key)
        retry = await client.post("/ai/stream", json=BODY, headers=key)
        turn = turn_of(retry.text)
        resumed = await client.get(f"/ai/stream/{turn}")
    assert [kind for kind, _ in sse(retry.text)] == ["done"]
    assert ids(retry.text) == [f"{turn}:1"] and turn != turn_of(first.text)
    assert frames(resumed.text) == frames(retry.text)


async def test_o5_events_are_written_in_batches_not_one_store_write_each() -> None:
    words = " ".join(f"word{n}" for n in range(200))
    _, app = api(chat_flow(ScriptedChatModel(script=[words])))
    keeper = app.state.picoflow.streams
    async with client_for(app) as client:
        reply = await client.post("/ai/stream", json=BODY)
    assert len(sse(reply.text)) == 201
    # One write opens the stream, then one per batch; a 201-event turn takes a few.
    assert 2 <= keeper.writes <= 10, keeper.writes


@pytest.mark.parametrize("ttl", [0, -1, "600", True])
def test_o5_stream_ttl_must_be_a_positive_number_of_seconds(ttl: Any) -> None:
    engine, _ = api(chat_flow())
    with pytest.raises(ValueError, match=r"stream_ttl=\.\.\.\) must be a number of seconds > 0"):
        create_app(engine, stream_ttl=ttl)


def test_o5_a_store_without_the_capability_keeps_streams_in_the_process() -> None:
    """A store of one's own: resuming works on the worker that ran the turn."""

    class OwnStore:
        async def revision(self, session_id: str) -> None:
            return None

    engine, app = api(chat_flow())
    keeper = type(app.state.picoflow.streams)(OwnStore(), 60)
    assert type(keeper.store).__name__ == "MemoryStreams"
    assert keeper.ttl == 60.0


async def _raw_first_event(url: str, body: bytes) -> tuple[str, str]:
    """POST /ai/stream over a bare socket, read the headers and first event, hang up."""
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        b"POST /ai/stream HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    size = int((await reader.readuntil(b"\r\n")).strip(), 16)  # chunked: the first chunk
    first = (await reader.readexactly(size)).decode()
    writer.close()
    await writer.wait_closed()
    return head, first


async def test_o5_a_client_that_leaves_after_one_event_can_follow_the_rest_live() -> None:
    """A raw client reads the first event and hangs up; the turn runs on and is saved whole,
    and a reconnect with Last-Event-ID gets the rest as the model writes it, then `done`."""
    client_gone, reconnected = threading.Event(), threading.Event()

    async def policy(messages: list[Any], tool_names: list[str]) -> Any:
        if not any(m.type == "tool" for m in messages):
            return tool_call("look_up")  # the first event, which the raw client reads
        assert await asyncio.to_thread(client_gone.wait, 10)
        assert await asyncio.to_thread(reconnected.wait, 10)
        return "The whole answer, written after the client left."

    model = ScriptedChatModel(policy=policy)

    class ChatStep(Step):
        @tool
        def look_up(self) -> Any:
            """Look something up before answering."""
            return stay("found it")

    class SlowFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ChatStep(self)]

    engine, app = api(SlowFlow)
    with live_server(app) as live:
        body = b'{"flowName": "SlowFlow", "message": "question"}'
        head, first = await _raw_first_event(live.url, body)
        assert head.startswith("HTTP/1.1 200")
        turn = turn_of(first)
        client_gone.set()
        async with httpx.AsyncClient(base_url=live.url) as client:
            headers = {"Last-Event-ID": f"{turn}:1"}
            async with client.stream("GET", f"/ai/stream/{turn}", headers=headers) as reply:
                assert reply.status_code == 200
                reconnected.set()  # the model writes only now: these events come live
                rest = "".join([chunk async for chunk in reply.aiter_text()])
        session = sse(rest)[-1][1]["session"]
        doc = live.call(engine.get_session(session))
    assert sse(first) == [("tool_call", {"name": "look_up", "args": {}, "step": "ChatStep"})]
    events = sse(rest)
    assert ids(rest)[0] == f"{turn}:2"
    tokens = "".join(data["text"] for kind, data in sse(first + rest) if kind == "token")
    assert tokens == "The whole answer, written after the client left."
    done = events[-1][1]
    assert events[-1][0] == "done" and done["success"] is True
    said = [m["data"]["content"] for m in doc["memory"]["ChatStep"]["messages"][1:]]
    assert said == ["question", "", "found it", "The whole answer, written after the client left."]


async def test_o5_pages_of_allowed_origins_may_send_last_event_id() -> None:
    _, app = api(chat_flow(), cors_origins=["https://chat.example.com"])
    async with client_for(app) as client:
        preflight = await client.options(
            "/ai/stream/AbCdEfGh12345678",
            headers={
                "Origin": "https://chat.example.com",
                "Access-Control-Request-Method": "GET",
                "Access-Control-Request-Headers": "last-event-id",
            },
        )
    assert preflight.status_code == 200
    assert "last-event-id" in preflight.headers["access-control-allow-headers"].lower()


async def test_o5_a_store_that_cannot_keep_the_stream_never_fails_the_turn(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Keeping is a service to clients that reconnect: its failure is logged, and only a
    reconnect notices (404)."""

    class NoKeeping(MemoryStore):
        async def stream_open(self, *args: Any) -> None:
            raise StoreError("the disk is full")

    _, app = api(chat_flow(), store=NoKeeping())
    async with client_for(app) as client:
        reply = await client.post("/ai/stream", json=BODY)
        turn = turn_of(reply.text)
        again = await client.get(f"/ai/stream/{turn}")
    assert sse(reply.text)[-1][1]["success"] is True
    assert "".join(d["text"] for k, d in sse(reply.text) if k == "token") == GREETING
    assert again.status_code == 404
    assert [r.getMessage() for r in caplog.records if r.name == "picoflow.server._kept"] == [
        f"stream {turn} is not kept (a reconnect gets 404): the disk is full"
    ]
