"""The loopback OpenAI server drives the real ChatOpenAI from a ScriptedChatModel brain."""

from __future__ import annotations

import asyncio
from contextlib import ExitStack

import openai
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from support.openai_server import OpenAIServer

from picoflow.testing import ScriptedChatModel, tool_call, tool_calls


@tool
def get_weather(city: str) -> str:
    """Get the weather in a city."""
    return f"sunny in {city}"


@pytest.fixture
def serve():
    """Start servers around fresh brains: `server, brain = serve(script=[...])`."""
    with ExitStack() as stack:

        def start(**brain_options):
            brain = ScriptedChatModel(**brain_options)
            return stack.enter_context(OpenAIServer(brain)), brain

        yield start


def call(name: str, args: dict, id: str) -> dict:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


async def test_plain_text_reply_with_usage(serve):
    server, brain = serve(script=["Hello there."])
    reply = await server.chat_model().ainvoke("hi")
    assert reply.content == "Hello there."
    assert usage_of(reply) == expected_usage(brain.requests[0].messages, "Hello there.")
    assert server.base_url.startswith("http://127.0.0.1:")
    assert server.requests == [
        {"messages": [{"content": "hi", "role": "user"}], "model": "fake", "stream": False}
    ]
    assert brain.requests[0].messages == [HumanMessage("hi")]


def expected_usage(messages, content: str) -> tuple[int, int, int]:
    """The usage a fresh brain reports for the same reply to the same messages."""
    usage = ScriptedChatModel(script=[content]).invoke(messages).usage_metadata
    return usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]


def usage_of(message) -> tuple[int, int, int]:
    usage = message.usage_metadata
    return usage["input_tokens"], usage["output_tokens"], usage["total_tokens"]


async def test_bound_tools_return_real_tool_calls(serve):
    server, brain = serve(script=[tool_call("get_weather", city="Paris")])
    reply = await server.chat_model().bind_tools([get_weather]).ainvoke("weather?")
    assert reply.tool_calls == [call("get_weather", {"city": "Paris"}, "call_1")]
    assert brain.requests[0].tool_names == ["get_weather"]
    assert server.requests[0]["tools"][0]["function"]["name"] == "get_weather"


async def test_parallel_tool_calls(serve):
    server, _ = serve(script=[tool_calls(("get_weather", {"city": "A"}), ("get_weather", {}))])
    reply = await server.chat_model().bind_tools([get_weather]).ainvoke("two")
    assert reply.tool_calls == [
        call("get_weather", {"city": "A"}, "call_1"),
        call("get_weather", {}, "call_2"),
    ]


async def test_tool_result_round_trip(serve):
    server, brain = serve(script=[tool_call("get_weather", city="Paris"), "It is sunny."])
    model = server.chat_model().bind_tools([get_weather])
    asked = HumanMessage("weather in Paris?")
    ai = await model.ainvoke([asked])
    result = ToolMessage("sunny in Paris", tool_call_id=ai.tool_calls[0]["id"])
    final = await model.ainvoke([asked, ai, result])
    assert final.content == "It is sunny."
    assert brain.requests[1].messages == [
        asked,
        AIMessage("", tool_calls=[call("get_weather", {"city": "Paris"}, "call_1")]),
        ToolMessage("sunny in Paris", tool_call_id="call_1"),
    ]
    assert server.requests[1]["messages"][2] == {
        "content": "sunny in Paris",
        "role": "tool",
        "tool_call_id": "call_1",
    }


@pytest.mark.parametrize(
    "reply",
    [
        tool_call("get_weather", city="Paris"),
        tool_calls(("get_weather", {"city": "Rome"}), ("get_weather", {"city": "Oslo"})),
        tool_calls(("get_weather", {"city": "Nice"}), content="Checking the weather. "),
    ],
    ids=["call", "parallel", "text+call"],
)
async def test_streamed_tool_calls_equal_invoked_ones(serve, reply):
    invoking, _ = serve(script=[reply])
    streaming, _ = serve(script=[reply])
    invoked = await invoking.chat_model().bind_tools([get_weather]).ainvoke("weather?")
    chunks = [c async for c in streaming.chat_model().bind_tools([get_weather]).astream("weather?")]
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed = streamed + chunk
    assert streamed.content == invoked.content
    assert streamed.tool_calls == invoked.tool_calls
    pieces = [p for c in chunks for p in c.tool_call_chunks]
    assert len(pieces) == 2 * len(invoked.tool_calls)  # arguments arrive in two pieces
    assert streaming.requests[0]["stream"] is True
    assert all(c.usage_metadata is None for c in chunks)  # stream_usage is off by default


async def test_streamed_text_arrives_in_words(serve):
    server, _ = serve(script=["Three words here."])
    chunks = [c.content async for c in server.chat_model().astream("hi")]
    assert "".join(chunks) == "Three words here."
    assert [c for c in chunks if c] == ["Three ", "words ", "here."]


async def test_stream_usage_reports_the_brains_numbers(serve):
    server, brain = serve(script=["Counted reply."])
    chunks = [c async for c in server.chat_model(stream_usage=True).astream("count me")]
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed = streamed + chunk
    assert server.requests[0]["stream_options"] == {"include_usage": True}
    assert usage_of(streamed) == expected_usage(brain.requests[0].messages, "Counted reply.")


async def test_brain_failure_is_a_server_error(serve):
    server, _ = serve(script=[ConnectionError("upstream down")])
    with pytest.raises(openai.InternalServerError) as error:
        await server.chat_model().ainvoke("hi")
    assert error.value.status_code == 500
    assert error.value.body == {
        "message": "upstream down",
        "type": "server_error",
        "code": None,
    }


async def test_concurrent_requests_each_get_one_reply(serve):
    server, brain = serve(script=["one", "two", "three"])
    model = server.chat_model()
    replies = await asyncio.gather(*(model.ainvoke(f"q{n}") for n in range(3)))
    assert sorted(r.content for r in replies) == ["one", "three", "two"]
    assert len(brain.requests) == 3


async def test_default_brain_echoes_and_the_brain_can_be_swapped():
    with OpenAIServer() as server:
        assert (await server.chat_model().ainvoke("hello")).content == "echo: hello"
        server.brain = ScriptedChatModel(script=["Swapped."])
        assert (await server.chat_model().ainvoke("hello")).content == "Swapped."
        assert len(server.requests) == 2


def test_sync_client_and_unknown_route(serve):
    server, _ = serve(script=["Sync works."])
    assert server.chat_model().invoke("hi").content == "Sync works."
    client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="fake", input="x")
    client.close()
