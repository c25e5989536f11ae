"""The built-in providers (F5): each string resolves to its LangChain class, checked at start.

The round trips run each provider's real LangChain client against a loopback server that
speaks its wire protocol (`anthropic_server.py`, `ollama_server.py`, `gemini_server.py`, and
`openai_server.py` for OpenAI, DeepSeek, OpenRouter and Azure OpenAI), run and streamed.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from support.anthropic_server import AnthropicServer
from support.gemini_server import GeminiServer
from support.ollama_server import OllamaServer
from support.openai_server import OpenAIServer

from picoflow import EndStep, Flow, FlowDefinitionError, FlowEngine, ModelSpec, Step, go, tool
from picoflow.models import ProviderRegistry
from picoflow.models._providers import BUILTIN_PROVIDERS
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

SECRET = "sk-secret-4f1c9a"


class WeatherTools(Step):
    def get_prompt(self) -> str:
        return "Report the weather, then move on."

    @tool
    def get_weather(self, city: str) -> str:
        """Look up the weather in a city."""
        return f"sunny in {city}"


class ClaudeStep(WeatherTools):
    @tool
    def next_step(self) -> Any:
        """Hand over to the next forecaster."""
        return go(LlamaStep)


class LlamaStep(WeatherTools):
    @tool
    def next_step(self) -> Any:
        """Hand over to the next forecaster."""
        return go(GptStep)


class GptStep(WeatherTools):
    pass


def three_provider_flow(params: dict[str, dict[str, Any]] | None = None) -> type[Flow]:
    """ClaudeStep on anthropic, LlamaStep on ollama, GptStep on the flow's openai default.

    Without `params` the models are plain "provider:model" strings; with it, ModelSpecs with
    each provider's params.
    """

    def model(provider: str, name: str) -> Any:
        if params is None:
            return f"{provider}:{name}"
        return ModelSpec(provider, name, params[provider])

    class WeatherFlow(Flow):
        def config_model(self) -> Any:
            return model("openai", "gpt-4o")

        def define_steps(self) -> list[Step]:
            return [
                ClaudeStep(self).use_model(model("anthropic", "claude-test")),
                LlamaStep(self).use_model(model("ollama", "llama3.1")),
                GptStep(self),
                EndStep(self).use_memory("end"),
            ]

    return WeatherFlow


SCRIPTS = {
    "anthropic": [tool_call("get_weather", city="Paris"), tool_call("next_step")],
    "ollama": [tool_call("get_weather", city="Rome"), tool_call("next_step")],
    "openai": [tool_call("get_weather", city="Oslo"), "Paris, Rome and Oslo are sunny."],
}


@pytest.fixture
def servers(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """One loopback server per provider, found through each provider's own env variable."""
    with ExitStack() as stack:
        brains = {name: ScriptedChatModel(script=script) for name, script in SCRIPTS.items()}
        anthropic = stack.enter_context(AnthropicServer(brains["anthropic"]))
        ollama = stack.enter_context(OllamaServer(brains["ollama"]))
        openai = stack.enter_context(OpenAIServer(brains["openai"]))
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic.url)
        monkeypatch.setenv("OLLAMA_HOST", ollama.url)
        monkeypatch.setenv("OPENAI_BASE_URL", openai.base_url)
        yield {"anthropic": anthropic, "ollama": ollama, "openai": openai}


def anthropic_tool_result(body: dict[str, Any]) -> tuple[str, str]:
    """(id of the tool_use the assistant sent, tool_use_id of the tool_result answering it)."""
    *_, assistant, user = body["messages"]
    return assistant["content"][-1]["id"], user["content"][0]["tool_use_id"]


async def test_f5_one_flow_round_trips_tools_through_anthropic_ollama_and_openai(servers):
    engine = FlowEngine(flows=[three_provider_flow()], store=MemoryStore())
    result = await engine.run("WeatherFlow", "What is the weather?")
    assert result.success, result.message
    assert (result.step, result.message) == ("GptStep", "Paris, Rome and Oslo are sunny.")
    assert result.usage["model"]["calls"] == 6
    first, second = servers["anthropic"].requests
    assert [t["name"] for t in first["tools"]] == ["get_weather", "next_step"]
    assert first["model"] == "claude-test"
    assert second["messages"][-1]["content"][0]["content"] == "sunny in Paris"
    sent_id, answered_id = anthropic_tool_result(second)
    assert sent_id == answered_id
    first, second = servers["ollama"].requests
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather", "next_step"]
    assert second["messages"][-1] == {"role": "tool", "content": "sunny in Rome"}
    assert servers["openai"].requests[1]["messages"][-1]["content"] == "sunny in Oslo"
    doc = await engine.get_session(result.session_id)
    assert doc["sequence"] == ["ClaudeStep", "LlamaStep", "GptStep"]
    claude = doc["memory"]["ClaudeStep"]["messages"]
    assert [m["data"]["content"] for m in claude if m["type"] == "tool"] == ["sunny in Paris", "ok"]


async def test_f5_streamed_turn_through_three_real_clients(servers):
    engine = FlowEngine(flows=[three_provider_flow()], store=MemoryStore())
    events = [event async for event in engine.stream("WeatherFlow", "What is the weather?")]
    result = events[-1].result
    assert result is not None and result.success, result
    assert result.message == "Paris, Rome and Oslo are sunny."
    calls = [(e.data["step"], e.data["name"]) for e in events if e.kind == "tool_call"]
    assert calls == [
        ("ClaudeStep", "get_weather"),
        ("ClaudeStep", "next_step"),
        ("LlamaStep", "get_weather"),
        ("LlamaStep", "next_step"),
        ("GptStep", "get_weather"),
    ]
    tokens = "".join(e.data["text"] for e in events if e.kind == "token")
    assert tokens == "Paris, Rome and Oslo are sunny."
    assert all(body["stream"] for body in servers["anthropic"].requests)
    assert all(body["stream"] for body in servers["ollama"].requests)
    assert all(body["stream"] for body in servers["openai"].requests)
    assert result.usage["model"]["input_tokens"] > 0 and result.usage["model"]["output_tokens"] > 0


async def test_api_keys_in_params_never_reach_the_document_or_the_logs(servers, caplog):
    caplog.set_level(logging.DEBUG)
    auth = {"headers": {"Authorization": f"Bearer {SECRET}"}}
    params = {
        "anthropic": {"api_key": SECRET, "temperature": 0.5},
        "ollama": {"client_kwargs": auth, "temperature": 0.0},
        "openai": {"api_key": SECRET},
    }
    engine = FlowEngine(flows=[three_provider_flow(params)], store=MemoryStore())
    result = await engine.run("WeatherFlow", "What is the weather?")
    assert result.success, result.message
    doc = await engine.get_session(result.session_id)
    assert SECRET not in repr(doc)
    models = {name: doc["steps"][name]["model"] for name in ("ClaudeStep", "LlamaStep")}
    assert models == {
        "ClaudeStep": {
            "provider": "anthropic",
            "name": "claude-test",
            "params": {"temperature": 0.5},
            "retry_attempts": 3,
        },
        "LlamaStep": {
            "provider": "ollama",
            "name": "llama3.1",
            "params": {"client_kwargs": {"headers": {}}, "temperature": 0.0},
            "retry_attempts": 3,
        },
    }
    assert SECRET not in caplog.text and SECRET not in result.message
    assert servers["ollama"].requests[0]["options"] == {"temperature": 0.0}
    for name in ("anthropic", "ollama", "openai"):  # the key did reach each provider
        assert servers[name].headers[0]["authorization"] == f"Bearer {SECRET}"


def compatible_env(provider: str, server: OpenAIServer) -> dict[str, str]:
    """How each OpenAI-compatible provider is pointed at the loopback server, by env only."""
    root = server.base_url.removesuffix("/v1")
    return {
        "deepseek": {"DEEPSEEK_API_BASE": server.base_url, "DEEPSEEK_API_KEY": "ds-key"},
        "openrouter": {"OPENROUTER_BASE_URL": server.base_url, "OPENROUTER_API_KEY": "or-key"},
        "azure_openai": {
            "AZURE_OPENAI_ENDPOINT": root,
            "AZURE_OPENAI_API_KEY": "az-key",
            "OPENAI_API_VERSION": "2024-10-21",
        },
    }[provider]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
@pytest.mark.parametrize("provider", ["deepseek", "openrouter", "azure_openai"])
async def test_openai_compatible_providers_round_trip_a_tool_call(
    provider: str, streamed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = ScriptedChatModel(script=[tool_call("get_weather", city="Lima"), "Sunny in Lima."])
    with OpenAIServer(brain) as server:
        for name, value in compatible_env(provider, server).items():
            monkeypatch.setenv(name, value)
        engine = FlowEngine(flows=[single_model_flow(f"{provider}:model-x")], store=MemoryStore())
        if streamed:
            events = [e async for e in engine.stream("ChatFlow", "Weather in Lima?")]
            result = events[-1].result
        else:
            result = await engine.run("ChatFlow", "Weather in Lima?")
    assert result is not None and result.success, result
    assert result.message == "Sunny in Lima."
    first, second = server.requests
    assert [t["function"]["name"] for t in first["tools"]] == ["get_weather"]
    assert second["messages"][-1]["content"] == "sunny in Lima"
    assert [body.get("stream", False) for body in server.requests] == [streamed, streamed]


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "stream"])
async def test_google_genai_round_trips_a_tool_call(
    streamed: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    brain = ScriptedChatModel(script=[tool_call("get_weather", city="Lima"), "Sunny in Lima."])
    with GeminiServer(brain) as server:
        monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
        monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
        flow = single_model_flow("google_genai:gemini-2.5-flash")
        engine = FlowEngine(flows=[flow], store=MemoryStore())
        if streamed:
            events = [e async for e in engine.stream("ChatFlow", "Weather in Lima?")]
            result = events[-1].result
        else:
            result = await engine.run("ChatFlow", "Weather in Lima?")
    assert result is not None and result.success, result
    assert result.message == "Sunny in Lima."
    assert result.usage["model"]["input_tokens"] > 0
    first, second = server.requests
    declarations = first["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in declarations] == ["get_weather"]
    assert second["contents"][-1]["parts"] == [
        {"functionResponse": {"name": "get_weather", "response": {"output": "sunny in Lima"}}}
    ]
    assert server.headers[0]["x-goog-api-key"] == "g-key"


EXTRA_PARAMS = {"azure_openai": {"api_version": "2024-10-21"}}
# U7: on their own endpoints (no base URL set) these providers check the model name.
MODEL_NAMES = {"deepseek": "deepseek-chat", "openrouter": "vendor/some-model"}


@pytest.mark.parametrize(
    "provider",
    ["openai", "azure_openai", "anthropic", "google_genai", "ollama", "deepseek", "openrouter"],
)
async def test_every_provider_keeps_keys_out_of_documents_and_logs(
    provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A step's model with a key in its params: built or deferred at start, stored without it."""
    caplog.set_level(logging.DEBUG)
    key = "client_kwargs" if provider == "ollama" else "api_key"
    secret: Any = {"headers": {"Authorization": SECRET}} if provider == "ollama" else SECRET
    name = MODEL_NAMES.get(provider, "some-model")
    spec = ModelSpec(provider, name, {key: secret, **EXTRA_PARAMS.get(provider, {})})

    class KeyFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=["Hello."])

        def define_steps(self) -> list[Step]:
            return [GptStep(self), LlamaStep(self).use_model(spec)]

    engine = FlowEngine(flows=[KeyFlow], store=MemoryStore())
    result = await engine.run("KeyFlow", "hi")
    assert result.success, result.message
    doc = await engine.get_session(result.session_id)
    assert SECRET not in repr(doc) and SECRET not in caplog.text and SECRET not in repr(spec)
    assert doc["steps"]["LlamaStep"]["model"]["params"] == (
        {"client_kwargs": {"headers": {}}}
        if provider == "ollama"
        else EXTRA_PARAMS.get(provider, {})
    )


PACKAGES = [
    ("anthropic", "langchain_anthropic", "langchain-anthropic", "anthropic"),
    ("google_genai", "langchain_google_genai", "langchain-google-genai", "google-genai"),
    ("ollama", "langchain_ollama", "langchain-ollama", "ollama"),
    ("deepseek", "langchain_deepseek", "langchain-deepseek", "deepseek"),
]


def single_model_flow(model: Any) -> type[Flow]:
    class ChatFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [GptStep(self)]

    return ChatFlow


@pytest.mark.parametrize(("provider", "module", "package", "extra"), PACKAGES)
def test_f5_missing_integration_names_the_package_and_the_install_command(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str, package: str, extra: str
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # what `import` sees when it is not installed
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[single_model_flow(f"{provider}:some-model")], store=MemoryStore())
    assert str(info.value) == (
        f"ChatFlow.config_model(): the '{provider}' model provider needs the {package} package, "
        f"which is not installed. Install it with: pip install 'picoflow[{extra}]' "
        f"(or: pip install {package})"
    )


def test_every_install_hint_names_an_extra_that_pyproject_defines() -> None:
    """The extras the error messages recommend exist and install the named package."""
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
    extras = extras["optional-dependencies"]

    def names(requirements: list[str]) -> set[str]:
        return {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0] for r in requirements}

    for provider in BUILTIN_PROVIDERS.values():
        if provider.extra is not None:
            assert provider.package in names(extras[provider.extra]), provider.name
            assert provider.package in names(extras["providers"]), provider.name
            assert provider.package in names(extras["dev"]), provider.name


def test_f5_unknown_model_param_is_refused_at_start_with_a_suggestion() -> None:
    flow = single_model_flow(ModelSpec("ollama", "llama3.1", {"temprature": 0.2}))
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[flow], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): 'ollama:llama3.1': ChatOllama has no parameter 'temprature'. "
        "Did you mean 'temperature'?"
    )


def test_f5_unknown_param_of_an_openai_class_points_to_model_kwargs() -> None:
    flow = single_model_flow(ModelSpec("openai", "gpt-4o", {"reasoning_effrt": "low"}))
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[flow], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): 'openai:gpt-4o': ChatOpenAI has no parameter "
        "'reasoning_effrt'. Did you mean 'reasoning_effort'? Pass provider-specific request "
        "fields inside model_kwargs instead."
    )


def test_f5_invalid_param_value_is_refused_at_start_without_echoing_secrets() -> None:
    spec = ModelSpec("anthropic", "claude-test", {"temperature": "hot", "api_key": SECRET})
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[single_model_flow(spec)], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): 'anthropic:claude-test' has invalid model params: "
        "temperature: Input should be a valid number, unable to parse string as a number. "
        "Fix them in the ModelSpec params (ChatAnthropic rejects them)."
    )
    assert SECRET not in repr(spec)
    assert repr(spec) == (
        "ModelSpec(provider='anthropic', name='claude-test', "
        "params={'temperature': 'hot', 'api_key': '***'}, retry_attempts=3)"
    )


def test_token_limits_are_kept_and_token_credentials_removed() -> None:
    spec = ModelSpec(
        "openai",
        "gpt-4o",
        {"max_tokens": 512, "azure_ad_token": "t", "accessToken": "t", "token": "t"},
    )
    assert spec.describe()["params"] == {"max_tokens": 512}


def test_credentials_inside_lists_are_removed_too() -> None:
    spec = ModelSpec("openai", "gpt-4o", {"extra": [{"token": "t", "n": 1}, "plain"]})
    assert spec.describe()["params"] == {"extra": [{"n": 1}, "plain"]}
    assert "'token': '***'" in repr(spec)


def test_f5_model_name_in_params_is_refused() -> None:
    spec = ModelSpec("openai", "gpt-4o", {"model": "gpt-4o-mini"})
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[single_model_flow(spec)], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): 'openai:gpt-4o': params may not set 'model'; the model name "
        "is the part after the colon (or ModelSpec's name)."
    )


def test_known_providers_are_listed_for_an_unknown_one() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[single_model_flow("mistral:large")], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): unknown model provider 'mistral' in 'mistral:large'. Known "
        "providers: anthropic, azure_openai, deepseek, google_genai, ollama, openai, openrouter. "
        "Register it with FlowEngine(providers={'mistral': factory})."
    )


def test_a_misspelt_provider_gets_a_suggestion() -> None:
    with pytest.raises(FlowDefinitionError) as info:
        FlowEngine(flows=[single_model_flow("antropic:claude-sonnet-4-5")], store=MemoryStore())
    assert str(info.value) == (
        "ChatFlow.config_model(): unknown model provider 'antropic' in "
        "'antropic:claude-sonnet-4-5'. Did you mean 'anthropic'? Known providers: anthropic, "
        "azure_openai, deepseek, google_genai, ollama, openai, openrouter. Register it with "
        "FlowEngine(providers={'antropic': factory})."
    )


def build(provider: str, name: str, params: dict[str, Any] | None = None, retry: int = 3) -> Any:
    registry = ProviderRegistry()
    spec = ModelSpec(provider, name, params or {}, retry)
    registry.check(spec, "here")
    return registry.resolve(spec)


def test_anthropic_honours_base_url_env_and_param(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:4001")
    model = build("anthropic", "claude-sonnet-4-5", retry=5)
    assert type(model).__name__ == "ChatAnthropic"
    # V9: picoflow's policy does the retry_attempts retries; the client's own are off
    assert (model.anthropic_api_url, model.max_retries, model.model) == (
        "http://127.0.0.1:4001",
        0,
        "claude-sonnet-4-5",
    )
    model = build("anthropic", "claude-sonnet-4-5", {"base_url": "http://127.0.0.1:4002"})
    assert model.anthropic_api_url == "http://127.0.0.1:4002"


def test_ollama_honours_ollama_host_and_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:4003")
    model = build("ollama", "llama3.1:8b")
    assert type(model).__name__ == "ChatOllama" and model.model == "llama3.1:8b"
    assert str(model._async_client._client.base_url) == "http://127.0.0.1:4003"
    model = build("ollama", "llama3.1:8b", {"base_url": "http://127.0.0.1:4004"})
    assert str(model._async_client._client.base_url) == "http://127.0.0.1:4004"


def test_openai_compatible_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "ds-key")
    deepseek = build("deepseek", "deepseek-chat")
    assert type(deepseek).__name__ == "ChatDeepSeek" and deepseek.model_name == "deepseek-chat"
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    router = build("openrouter", "anthropic/claude-sonnet-4.5")
    assert type(router).__name__ == "ChatOpenAI"
    assert str(router.root_client.base_url) == "https://openrouter.ai/api/v1/"
    assert router.openai_api_key.get_secret_value() == "or-key"
    monkeypatch.setenv("OPENROUTER_BASE_URL", "http://127.0.0.1:4005/v1")
    assert str(build("openrouter", "x/y").root_client.base_url) == "http://127.0.0.1:4005/v1/"
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", "az-key")
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "http://127.0.0.1:4006")
    azure = build("azure_openai", "my-deployment", {"api_version": "2024-10-21"})
    assert type(azure).__name__ == "AzureChatOpenAI" and azure.model_name == "my-deployment"


def test_google_genai_builds_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_API_KEY", "g-key")
    model = build("google_genai", "gemini-2.5-flash", {"temperature": 0.1}, retry=2)
    assert type(model).__name__ == "ChatGoogleGenerativeAI"
    assert (model.model, model.temperature, model.max_retries) == ("gemini-2.5-flash", 0.1, 0)


def test_openrouter_never_falls_back_to_the_openai_key() -> None:
    registry = ProviderRegistry()
    spec = ModelSpec("openrouter", "x/y")
    registry.check(spec, "here")  # a missing key is not a definition error ...
    with pytest.raises(ValueError) as info:  # ... but the first use names it
        registry.resolve(spec)
    assert str(info.value) == (
        "the 'openrouter' provider needs an API key: set OPENROUTER_API_KEY or pass "
        "params={'api_key': ...}."
    )


def test_model_built_at_start_is_the_one_the_turns_use(monkeypatch: pytest.MonkeyPatch) -> None:
    registry = ProviderRegistry()
    spec = ModelSpec("anthropic", "claude-test", {"temperature": 0.5})
    registry.check(spec, "here")
    same = ModelSpec("anthropic", "claude-test", {"temperature": 0.5})
    assert registry.resolve(spec) is registry.resolve(same)


def test_missing_credentials_do_not_stop_the_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A key is needed when the model is called, not to start an engine that may not call it."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    engine = FlowEngine(flows=[single_model_flow("deepseek:deepseek-chat")], store=MemoryStore())
    assert engine.flow_names() == ["ChatFlow"]


def test_custom_factory_overrides_a_builtin_name() -> None:
    scripted = ScriptedChatModel(script=["hi"])
    registry = ProviderRegistry({"anthropic": lambda spec: scripted})
    spec = ModelSpec("anthropic", "anything", {"not_a_param": 1})
    registry.check(spec, "here")  # a custom factory's params are its own business
    assert registry.resolve(spec) is scripted


def test_importing_picoflow_loads_no_optional_integration_and_no_importer() -> None:
    """Integrations load when a flow names their provider; the PicoFlow importer never does."""
    code = (
        "import sys, picoflow, picoflow.stores; "
        "print(sorted(m for m in ('langchain_anthropic', 'langchain_ollama', "
        "'langchain_google_genai', 'langchain_deepseek', 'picoflow.import_picoflow') "
        "if m in sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert completed.stdout.strip() == "[]"
