"""O5: a silent stream sends an SSE comment every `stream_keepalive` seconds.

Proxies and load balancers hang up on a connection that carries nothing for a while (nginx
after 60 s, many load balancers sooner). A turn waiting on a slow model or tool, and a client
that resumed a turn running on another worker, would lose the stream they mean to keep. Every
SSE client ignores a comment line, so `: keep-alive` keeps the connection without adding an
event. These tests hold the model until the client has seen a comment: the comment is what
they wait for, not a timer.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
import pytest
from server_flows import api, chat_flow, live_server, sse
from test_o5_resume_streams import _raw_first_event, ids, turn_of

from picoflow import Flow, Step, stay, tool
from picoflow.server import create_app
from picoflow.server._kept import KEEPALIVE, LiveTurn, beat_while_silent
from picoflow.testing import ScriptedChatModel, tool_call

QUICK = 0.05  # seconds of silence before a comment, in these tests


def gated_flow(first: threading.Event, second: threading.Event | None = None) -> type[Flow]:
    """A flow whose model waits for `first` (and, after a tool call, for `second`)."""

    async def policy(messages: list[Any], tool_names: list[str]) -> Any:
        if second is not None and not any(m.type == "tool" for m in messages):
            return tool_call("look_up")
        gate = second if second is not None else first
        assert await asyncio.to_thread(gate.wait, 10)
        return "Here is the answer."

    model = ScriptedChatModel(policy=policy)

    class ChatStep(Step):
        @tool
        def look_up(self) -> Any:
            """Look something up before answering."""
            return stay("found it")

    class GatedFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [ChatStep(self)]

    return GatedFlow


async def read_until_keepalive(reply: httpx.Response, release: threading.Event) -> str:
    """The whole body; `release` is set at the first comment, which lets the model answer."""
    body = ""
    async for chunk in reply.aiter_text():
        body += chunk
        if KEEPALIVE in body:
            release.set()
    return body


async def test_o5_a_silent_turn_sends_comments_and_its_events_are_unchanged() -> None:
    answer = threading.Event()
    engine, app = api(gated_flow(answer), stream_keepalive=QUICK)
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            body = {"flowName": "GatedFlow", "message": "hello"}
            async with client.stream("POST", "/ai/stream", json=body) as reply:
                assert reply.status_code == 200
                text = await read_until_keepalive(reply, answer)
    assert text.startswith(KEEPALIVE)  # before the model said anything
    events = sse(text)
    assert [kind for kind, _ in events][-1] == "done"
    assert events[-1][1]["message"] == "Here is the answer."
    turn = turn_of(text)
    assert ids(text) == [f"{turn}:{n}" for n in range(1, len(events) + 1)]  # comments: no id


async def test_o5_a_resumed_stream_waiting_for_the_turn_sends_comments() -> None:
    """The client left after the first event; its reconnect waits for a model that is still
    thinking, and gets comments until the rest comes."""
    tool_done, answer = threading.Event(), threading.Event()
    _, app = api(gated_flow(tool_done, answer), stream_keepalive=QUICK)
    with live_server(app) as live:
        head, first = await _raw_first_event(live.url, b'{"flowName": "GatedFlow", "message": "q"}')
        assert head.startswith("HTTP/1.1 200") and sse(first)[0][0] == "tool_call"
        turn = turn_of(first)
        async with httpx.AsyncClient(base_url=live.url) as client:
            headers = {"Last-Event-ID": f"{turn}:1"}
            async with client.stream("GET", f"/ai/stream/{turn}", headers=headers) as reply:
                assert reply.status_code == 200
                rest = await read_until_keepalive(reply, answer)
    assert KEEPALIVE in rest.split("event: ")[0]  # before the next event
    assert ids(rest)[0] == f"{turn}:2"
    assert sse(rest)[-1][0] == "done" and sse(rest)[-1][1]["message"] == "Here is the answer."


@pytest.mark.parametrize("bad", [0, -1, "15", True, float("nan")])
def test_o5_a_bad_keepalive_is_refused_by_create_app(bad: Any) -> None:
    engine, _ = api(chat_flow())
    with pytest.raises(ValueError) as caught:
        create_app(engine, stream_keepalive=bad)
    assert str(caught.value) == (
        f"create_app(stream_keepalive=...) must be a number of seconds > 0, or None to send "
        f"no keep-alive comments, got {bad!r}. Keep it under your proxy's idle timeout (nginx "
        "closes an idle connection after 60 s; 15 is the default)."
    )


async def test_o5_a_silent_live_turn_beats_and_each_follower_sends_one_comment_per_beat() -> None:
    """The parts on their own: one timer per turn beats while no frame comes, and every
    follower of the turn turns a beat into one comment, between the frames as they were."""
    live = LiveTurn("AbCdEfGh12345678", None)
    first, second = live.follow(0), live.follow(0)
    live.add("event: a\ndata: {}\n\n")
    assert [await anext(first), await anext(second)] == ["event: a\ndata: {}\n\n"] * 2
    beating = asyncio.ensure_future(beat_while_silent(live, 0.01))
    assert [await anext(first), await anext(second)] == [KEEPALIVE] * 2
    live.add("event: b\ndata: {}\n\n")
    live.add("event: done\ndata: {}\n\n", last=True)
    rest = [frame async for frame in first]
    assert [frame for frame in rest if frame != KEEPALIVE] == [
        "event: b\ndata: {}\n\n",
        "event: done\ndata: {}\n\n",
    ]
    await beating  # it stops once the turn has ended
    assert live.ended and [frame async for frame in second][-1] == "event: done\ndata: {}\n\n"
