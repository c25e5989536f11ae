"""G1, G2 and V9: a reply that dropped mid-stream and was retried, as each protocol can say it.

Neither protocol can take streamed text back. AG-UI ends the run with a MESSAGES_SNAPSHOT that
holds the reply as saved; the AI SDK stream gets a transient `data-retract` and the retry in a
new text part.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from protocol_kit import chat_request, client_for, data_frames, run_input

from picoflow import Flow, FlowEngine, Step
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import transient_error


class DropsOnce(BaseChatModel):
    """The first stream drops after "Three hot"; the retry says "Three hotels match."."""

    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "drops-once"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=AIMessage("unused"))])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        self.calls += 1
        yield ChatGenerationChunk(message=AIMessageChunk(content="Three "))
        if self.calls == 1:
            yield ChatGenerationChunk(message=AIMessageChunk(content="hot"))
            raise transient_error("connection")
        yield ChatGenerationChunk(message=AIMessageChunk(content="hotels match."))


def app_with_drop() -> Any:
    model = DropsOnce()

    class TalkStep(Step):
        pass

    class TalkFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [TalkStep(self)]

    async def no_wait(seconds: float) -> None:
        pass

    return create_app(FlowEngine(flows=[TalkFlow], store=MemoryStore(), sleep=no_wait))


async def test_g1_v9_a_retracted_reply_ends_with_a_messages_snapshot_of_the_saved_reply() -> None:
    async with client_for(app_with_drop()) as client:
        body = run_input("t-r", "r-1", "hotels?")
        frames = data_frames((await client.post("/ag-ui/TalkFlow", json=body)).text)
    snapshot = next(f for f in frames if f["type"] == "MESSAGES_SNAPSHOT")["messages"]
    assert [(m["role"], m["content"]) for m in snapshot] == [
        ("user", "hotels?"),
        ("assistant", "Three hotels match."),
    ]
    assert frames[-1]["type"] == "RUN_FINISHED"


async def test_g2_v9_a_retracted_reply_is_announced_and_retried_in_a_new_text_part() -> None:
    async with client_for(app_with_drop()) as client:
        body = chat_request("chat-retract-0001", "hotels?")
        frames = data_frames((await client.post("/ai-sdk/TalkFlow", json=body)).text)
    chunks = [f for f in frames if f != "[DONE]"]
    retract = next(f for f in chunks if f["type"] == "data-retract")
    assert retract["data"]["text"] == "Three hot" and retract["transient"] is True
    texts: dict[str, str] = {}
    for chunk in chunks:
        if chunk["type"] == "text-delta":
            texts[chunk["id"]] = texts.get(chunk["id"], "") + chunk["delta"]
    assert list(texts.values()) == ["Three hot", "Three hotels match."]
