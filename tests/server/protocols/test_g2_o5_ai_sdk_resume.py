"""G3, O5 for the AI SDK: `useChat({resume: true})` reconnects to a reply still streaming.

A model that waits mid-reply (on an event the test sets, never a sleep) keeps the turn
running while the reconnect is asked for; the reconnect gets the whole reply, the same chunks
the first client got. Nothing running is 204, for the owner and for anyone else (H4).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from protocol_kit import chat_request, client_for, data_frames

from picoflow import Flow, FlowEngine, Step
from picoflow.server import Principal, create_app
from picoflow.stores import MemoryStore

CHAT = "chat-resume-00001"


class WaitsMidReply(BaseChatModel):
    """Says "Three ", tells the test it is mid-reply, waits for `go_on`, says the rest."""

    midway: Any = None  # asyncio.Event, set once "Three " is out
    go_on: Any = None  # asyncio.Event the test sets

    @property
    def _llm_type(self) -> str:
        return "waits-mid-reply"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("unused"))])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        yield ChatGenerationChunk(message=AIMessageChunk(content="Three "))
        self.midway.set()
        await self.go_on.wait()
        yield ChatGenerationChunk(message=AIMessageChunk(content="hotels match."))


def app_for(model: WaitsMidReply, store: MemoryStore | None = None) -> Any:
    class TalkStep(Step):
        pass

    class TalkFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [TalkStep(self)]

    def by_header(request: Any) -> Principal | None:
        name = request.headers.get("X-User")
        return Principal(name) if name else None

    engine = FlowEngine(flows=[TalkFlow], store=store or MemoryStore())
    return create_app(engine, authorize=by_header)


async def test_g3_o5_a_reconnect_gets_the_running_reply_whole_then_204() -> None:
    model = WaitsMidReply(midway=asyncio.Event(), go_on=asyncio.Event())
    ann, eve = {"X-User": "ann"}, {"X-User": "eve"}
    route = f"/ai-sdk/TalkFlow/{CHAT}/stream"
    app = app_for(model)
    async with client_for(app) as client:
        before = await client.get(route, headers=ann)
        body = chat_request(CHAT, "hotels?")
        first = asyncio.ensure_future(client.post("/ai-sdk/TalkFlow", json=body, headers=ann))
        await model.midway.wait()
        other = await client.get(route, headers=eve)  # another owner's chat id: nothing
        (live,) = app.state.picoflow.streams.live.values()  # the running reply, on this worker
        follow = live.follow

        def go_on_once_followed(after: int) -> Any:
            model.go_on.set()  # the reconnect follows the reply now: let the reply go on
            return follow(after)

        live.follow = go_on_once_followed
        resumed = await client.get(route, headers=ann)
        sent = await first
        after = await client.get(route, headers=ann)
    assert (before.status_code, other.status_code, after.status_code) == (204, 204, 204)
    assert resumed.status_code == 200
    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert data_frames(resumed.text) == data_frames(sent.text)
    deltas = [
        f["delta"] for f in data_frames(sent.text) if f != "[DONE]" and f["type"] == "text-delta"
    ]
    assert "".join(deltas) == "Three hotels match." and data_frames(sent.text)[-1] == "[DONE]"


async def test_g3_o5_a_reconnect_to_another_worker_reads_the_reply_from_the_store() -> None:
    model, store = WaitsMidReply(midway=asyncio.Event(), go_on=asyncio.Event()), MemoryStore()
    ann = {"X-User": "ann"}
    one, two = app_for(model, store), app_for(model, store)  # two workers, one store
    keeper = two.state.picoflow.streams
    read = keeper.read
    reads = 0

    async def go_on_once_polling(turn_id: str, after: int) -> Any:
        nonlocal reads
        reads += 1
        if reads == 2:  # the reconnect polls the store now: let the reply go on
            model.go_on.set()
        return await read(turn_id, after)

    keeper.read = go_on_once_polling
    async with client_for(one) as first_worker, client_for(two) as second_worker:
        body = chat_request(CHAT, "hotels?")
        sent = asyncio.ensure_future(first_worker.post("/ai-sdk/TalkFlow", json=body, headers=ann))
        await model.midway.wait()
        resumed = await second_worker.get(f"/ai-sdk/TalkFlow/{CHAT}/stream", headers=ann)
        first = await sent
    assert resumed.status_code == 200 and reads >= 2
    assert data_frames(resumed.text) == data_frames(first.text)
