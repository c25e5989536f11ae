"""Models: ModelLike forms, the provider registry, and the real ChatOpenAI client over loopback.

The loopback tests run a two-step flow through `langchain_openai.ChatOpenAI` against a local
OpenAI-compatible HTTP server, so the request/response mapping (tool schemas, tool-call ids,
tool results, streaming chunks, usage) is the real one, not a fake's.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableLambda
from support.flows import engine_for, transcript, two_step_flow
from support.openai_server import OpenAIServer

from picoflow import Flow, FlowDefinitionError, FlowEngine, ModelSpec, Step
from picoflow.models import ProviderRegistry, describe_model, parse_model
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


def test_model_strings_parse_to_specs() -> None:
    assert parse_model("openai:gpt-4o", "here") == ModelSpec("openai", "gpt-4o")
    assert parse_model(" ollama:llama3.1:8b ", "here") == ModelSpec("ollama", "llama3.1:8b")
    spec = ModelSpec("openai", "gpt-4o", {"temperature": 0})
    assert parse_model(spec, "here") is spec


@pytest.mark.parametrize("bad", ["gpt-4o", "openai:", ":gpt", 42, None])
def test_invalid_model_selection_is_a_definition_error(bad: Any) -> None:
    with pytest.raises(FlowDefinitionError) as info:
        parse_model(bad, "HotelFlow.config_model()")
    assert str(info.value) == (
        f"HotelFlow.config_model(): {bad!r} is not a model. Use a 'provider:model' string such "
        "as 'openai:gpt-4o', a ModelSpec(provider, name), or a LangChain BaseChatModel instance."
    )


def test_persisted_model_description_strips_secrets() -> None:
    spec = ModelSpec(
        "openai", "gpt-4o", {"api_key": "sk-1", "temperature": 0.2, "extra": {"token": "t"}}
    )
    assert describe_model(spec) == {
        "provider": "openai",
        "name": "gpt-4o",
        "params": {"temperature": 0.2, "extra": {}},
        "retry_attempts": 3,
    }


def test_registry_builds_each_model_once_and_custom_providers_plug_in() -> None:
    built: list[ModelSpec] = []

    def factory(spec: ModelSpec) -> ScriptedChatModel:
        built.append(spec)
        return ScriptedChatModel(script=[])

    registry = ProviderRegistry({"scripted": factory})
    first = registry.resolve(ModelSpec("scripted", "a"))
    assert registry.resolve(ModelSpec("scripted", "a")) is first
    registry.resolve(ModelSpec("scripted", "b"))
    assert [s.name for s in built] == ["a", "b"]


def test_openai_provider_leaves_retries_to_picoflow_and_honours_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # V9: picoflow retries transient failures itself; the client retrying too would multiply
    # the attempts (3 x 3) and hide Retry-After from the policy.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1234/v1")
    model = ProviderRegistry().resolve(ModelSpec("openai", "gpt-4o-mini", retry_attempts=5))
    assert type(model).__name__ == "ChatOpenAI"
    assert model.max_retries == 0 and model.model_name == "gpt-4o-mini"
    assert str(model.root_client.base_url) == "http://127.0.0.1:1234/v1/"


def booking_brain() -> ScriptedChatModel:
    # Over HTTP the brain sees no run metadata, so the script is one list in call order.
    return ScriptedChatModel(
        script=[
            tool_call("capture_choices", city="Portland", nights=3),
            "Two hotels in Portland for 3 nights: 1. Riverside, 2. Pearl.",
        ]
    )


@pytest.mark.parametrize("streaming", [False, True])
async def test_two_step_flow_through_real_chatopenai_over_loopback(streaming: bool) -> None:
    with OpenAIServer(booking_brain()) as server:
        params = {"streaming": streaming, "stream_usage": True, "base_url": server.base_url}

        class LoopbackFlow(two_step_flow(ScriptedChatModel(script=[]))):  # type: ignore[misc]
            name = "HotelFlow"

            def config_model(self) -> Any:
                return ModelSpec("openai", "gpt-4o", params)

        engine = FlowEngine(flows=[LoopbackFlow], store=MemoryStore())
        result = await engine.run("HotelFlow", "Portland for 3 nights please")
    assert result.success, result.message
    assert result.step == "PresentStep"
    assert result.message == "Two hotels in Portland for 3 nights: 1. Riverside, 2. Pearl."
    assert result.usage["model"]["calls"] == 2 and result.usage["model"]["input_tokens"] > 0
    bodies = server.requests
    assert [b.get("stream", False) for b in bodies] == [streaming, streaming]
    assert [t["function"]["name"] for t in bodies[0]["tools"]] == ["capture_choices"]
    assert bodies[0]["tools"][0]["function"]["parameters"]["required"] == ["city", "nights"]
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["ExploreStep"]["state"]["criteria"] == {"city": "Portland", "nights": 3}
    assert transcript(doc, "ExploreStep") == [
        ("human", "Portland for 3 nights please"),
        ("ai", "call capture_choices"),
        ("tool", "ok"),
    ]
    assert transcript(doc, "PresentStep")[-1][0] == "ai"


async def test_provider_string_resolves_through_openai_base_url_env(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with OpenAIServer(booking_brain()) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

        class EnvFlow(Flow):
            name = "HotelFlow"

            def config_model(self) -> Any:
                return "openai:gpt-4o-mini"

            def define_steps(self) -> list[Step]:
                return two_step_flow(ScriptedChatModel(script=[]))().define_steps()  # type: ignore[misc]

        engine = engine_for(EnvFlow)
        result = await engine.run("HotelFlow", "Portland for 3 nights")
    assert result.success, result.message
    assert [b["model"] for b in server.requests] == ["gpt-4o-mini", "gpt-4o-mini"]


class _Events(BaseCallbackHandler):
    """Records what a tracing handler learns about each chat-model call."""

    def __init__(self) -> None:
        self.starts: list[tuple[list[str], dict[str, Any], int, list[str]]] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        tools = [t["function"]["name"] for t in kwargs["invocation_params"].get("tools", [])]
        meta = {
            key: value
            for key, value in kwargs["metadata"].items()
            if key.startswith("picoflow") and key != "picoflow_session_id"  # new per run
        }
        self.starts.append((sorted(kwargs["tags"]), meta, len(messages[0]), tools))


class _OwnInvoke(ScriptedChatModel):
    """A model that overrides `ainvoke`, so the engine must call it the long way round."""

    invoked: int = 0

    async def ainvoke(self, *args: Any, **kwargs: Any) -> Any:
        self.invoked += 1
        return await super().ainvoke(*args, **kwargs)


async def _traced_turn(model: ScriptedChatModel) -> list[Any]:
    handler = _Events()
    engine = engine_for(two_step_flow(model))

    async def turn(_: Any) -> Any:
        return await engine.run("HotelFlow", "Portland for 3 nights")

    # A caller's callbacks reach the model through the running context, as in LangSmith.
    result = await RunnableLambda(turn).ainvoke(None, config={"callbacks": [handler]})
    assert result.success, result.message
    return handler.starts


async def test_direct_agenerate_call_is_the_same_call_as_ainvoke(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """E3: the short path past `ainvoke` keeps callbacks, tags, metadata and bound tools."""
    prompts: list[int] = []
    through_prompt = BaseChatModel.agenerate_prompt

    async def counted(self: BaseChatModel, *args: Any, **kwargs: Any) -> Any:
        prompts.append(1)
        return await through_prompt(self, *args, **kwargs)

    monkeypatch.setattr(BaseChatModel, "agenerate_prompt", counted)
    script = [tool_call("capture_choices", city="Portland", nights=3), "Two hotels."]
    direct = await _traced_turn(ScriptedChatModel(script=script))
    assert prompts == []  # the short path was taken
    own = _OwnInvoke(script=script)
    long_way = await _traced_turn(own)
    assert own.invoked == 2 and len(prompts) == 2  # an overridden ainvoke is honoured
    assert direct == long_way
    assert [(meta["picoflow_step"], tools) for _, meta, _, tools in direct] == [
        ("ExploreStep", ["capture_choices"]),
        ("PresentStep", ["end_chat", "search_again"]),
    ]
    assert direct[0][0] == ["picoflow", "picoflow:reply", "picoflow:step:ExploreStep"]
