"""FlowEngine.stream: typed events, the same atomic turn as run()."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from support.flows import ExploreStep, engine_for, transcript, two_step_flow

from picoflow import Flow, FlowEngine, ModelSpec, Step
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, transient_error


async def test_stream_yields_tool_call_step_change_tokens_then_done() -> None:
    model = ScriptedChatModel(
        script=[tool_call("capture_choices", city="Portland", nights=2), "Three hotels match."]
    )
    engine = engine_for(two_step_flow(model))
    events = [event async for event in engine.stream("HotelFlow", "Portland, 2 nights")]
    kinds = [event.kind for event in events]
    assert kinds == ["tool_call", "step_changed", "token", "token", "token", "done"]
    assert events[0].data == {
        "name": "capture_choices",
        "args": {"city": "Portland", "nights": 2},
        "step": "ExploreStep",
    }
    assert events[1].data == {"from": "ExploreStep", "to": "PresentStep"}
    assert "".join(e.data["text"] for e in events if e.kind == "token") == "Three hotels match."
    result = events[-1].result
    assert result is not None and result.success and result.message == "Three hotels match."
    doc = await engine.get_session(result.session_id)
    assert transcript(doc, "PresentStep")[-1] == ("ai", "Three hotels match.")


async def test_stream_consumer_leaving_early_still_saves_the_whole_turn() -> None:
    model = ScriptedChatModel(script=["A long reply in several words.", "Next."])
    engine = engine_for(two_step_flow(model))
    stream = engine.stream("HotelFlow", "hello")
    first = await anext(stream)
    assert first.kind == "token"
    await stream.aclose()  # the client disconnected mid-reply
    # The turn ran to its end and was saved once: the session is whole, not half-written.
    result = await engine.run("HotelFlow", "")  # a fresh session still works
    assert result.success
    sessions = [model.requests[0].metadata["picoflow_session_id"]]
    doc = await engine.get_session(sessions[0])
    assert transcript(doc, "ExploreStep") == [
        ("human", "hello"),
        ("ai", "A long reply in several words."),
    ]
    assert doc["revision"] == 0


async def test_stream_failure_ends_with_a_failed_done_event() -> None:
    model = ScriptedChatModel(script=[RuntimeError("model down")])
    engine = engine_for(two_step_flow(model))
    events = [event async for event in engine.stream("HotelFlow", "hi")]
    assert [e.kind for e in events] == ["done"]
    assert events[0].result is not None and events[0].result.success is False


class DropsMidReply(BaseChatModel):
    """Streams part of a reply, then the connection drops (once); the retry streams it whole."""

    calls: int = 0
    drops: int = 1  # how many calls drop

    @property
    def _llm_type(self) -> str:
        return "drops-mid-reply"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self.bind(tools=tools, **kwargs)

    def _generate(self, messages: Any, stop: Any = None, **kwargs: Any) -> ChatResult:
        message = AIMessage("Three hotels match.")
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        self.calls += 1
        for text in ["Three ", "hot", "els match."]:
            if self.calls <= self.drops and text == "els match.":
                raise transient_error("connection")
            yield ChatGenerationChunk(message=AIMessageChunk(content=text))


def shown(events: list[Any]) -> str:
    """The text a client shows: tokens, minus what `retract` events take back."""
    text = ""
    for event in events:
        if event.kind == "token":
            text += event.data["text"]
        elif event.kind == "retract":
            assert text.endswith(event.data["text"])
            text = text.removesuffix(event.data["text"])
    return text


async def no_wait(seconds: float) -> None:
    pass


async def test_v9_stream_a_retry_after_a_drop_mid_reply_takes_back_the_partial_text() -> None:
    """V9: a streamed reply that fails after some tokens is followed at once by a `retract`
    event with that text, then the retry streams; the reply is never shown twice."""
    model = DropsMidReply()
    engine = FlowEngine(flows=[two_step_flow(model)], store=MemoryStore(), sleep=no_wait)
    events = [event async for event in engine.stream("HotelFlow", "hi")]
    assert [e.kind for e in events] == ["token", "token", "retract"] + ["token"] * 3 + ["done"]
    assert events[2].data == {"step": "ExploreStep", "text": "Three hot"}
    result = events[-1].result
    assert result is not None and result.success
    assert shown(events) == result.message == "Three hotels match."
    doc = await engine.get_session(result.session_id)
    assert transcript(doc, "ExploreStep") == [("human", "hi"), ("ai", "Three hotels match.")]


class SorryStep(ExploreStep):
    def on_llm_error(self, error: Exception) -> Any:
        return "Sorry, the hotel search is down; try again in a minute."


async def test_v9_stream_text_of_a_call_that_fails_for_good_is_retracted_before_the_fallback() -> (
    None
):
    """V9: when the attempts run out after some text went out, that text is taken back before
    `on_llm_error`'s reply, which the client then shows alone."""
    model = DropsMidReply(drops=99)

    class SorryFlow(Flow):
        def config_model(self) -> Any:
            return ModelSpec("drops", "m", retry_attempts=1)

        def define_steps(self) -> list[Step]:
            return [SorryStep(self)]

    engine = FlowEngine(
        flows=[SorryFlow],
        store=MemoryStore(),
        providers={"drops": lambda spec: model},
        sleep=no_wait,
    )
    events = [event async for event in engine.stream("SorryFlow", "hi")]
    kinds = [e.kind for e in events]
    assert kinds == ["token", "token", "retract", "token", "token", "retract", "done"]
    result = events[-1].result
    assert result is not None and result.success
    assert result.message == "Sorry, the hotel search is down; try again in a minute."
    assert shown(events) == ""  # the fallback reply is not streamed: it arrives in `done`


class SaysNothingFirst(DropsMidReply):
    async def _astream(
        self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        self.calls += 1
        for text in [" ", "\n"] if self.calls == 1 else ["Three hotels match."]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=text))


async def test_v9_stream_an_empty_reply_asked_again_is_retracted() -> None:
    """V9: a whitespace reply that is asked for again with the nudge is taken back."""
    engine = FlowEngine(flows=[two_step_flow(SaysNothingFirst())], store=MemoryStore())
    events = [event async for event in engine.stream("HotelFlow", "hi")]
    assert [e.kind for e in events] == ["token", "token", "retract", "token", "done"]
    result = events[-1].result
    assert result is not None and shown(events) == result.message == "Three hotels match."
