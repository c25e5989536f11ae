"""The loopback Anthropic and Ollama servers answer as the providers do, beyond the flow tests.

`test_providers.py` drives them through whole flows; here are the paths a flow does not take:
Ollama's non-streamed reply (ChatOllama always streams) and a provider error.
"""

from __future__ import annotations

import anthropic
import pytest
from langchain_anthropic import ChatAnthropic
from ollama import AsyncClient
from support.anthropic_server import AnthropicServer
from support.ollama_server import OllamaServer

from picoflow.testing import ScriptedChatModel, tool_call

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Look up the weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


async def test_ollama_non_streamed_reply_carries_tool_calls_and_counts() -> None:
    brain = ScriptedChatModel(script=[tool_call("get_weather", city="Oslo")])
    with OllamaServer(brain) as server:
        reply = await AsyncClient(host=server.url).chat(
            model="llama3.1",
            messages=[{"role": "user", "content": "weather?"}],
            tools=[WEATHER_TOOL],
            stream=False,
        )
    assert reply.message.tool_calls is not None
    call = reply.message.tool_calls[0].function
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Oslo"})
    assert reply.done and reply.prompt_eval_count and reply.eval_count
    assert brain.requests[0].tool_names == ["get_weather"]


async def test_anthropic_brain_failure_is_a_provider_error() -> None:
    brain = ScriptedChatModel(script=[])  # out of script: the brain raises
    with AnthropicServer(brain) as server:
        model = ChatAnthropic(model="claude-test", base_url=server.url, api_key="k", max_retries=0)
        with pytest.raises(anthropic.InternalServerError) as info:
            await model.ainvoke("hi")
    assert "ScriptedChatModel ran out of replies" in str(info.value)
