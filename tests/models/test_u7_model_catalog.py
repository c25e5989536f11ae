"""U7: unknown model names of built-in providers, and params a model rejects, fail at engine start.

Names are checked against the provider's own endpoint only: with a base URL of your own
(an OpenAI-compatible server) any name is accepted. Params are checked whatever the endpoint.
"""

from __future__ import annotations

from typing import Any

import pytest

from picoflow import Flow, FlowDefinitionError, FlowEngine, ModelSpec, Step
from picoflow.stores import MemoryStore


class AskStep(Step):
    def get_prompt(self) -> str:
        return "Ask."


def flow_on(model: Any) -> type[Flow]:
    class ModelFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [AskStep(self)]

    return ModelFlow


@pytest.fixture
def own_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The providers' own endpoints: no base URL overrides (the test conftest sets loopbacks)."""
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "GOOGLE_GEMINI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)


def start(model: Any) -> None:
    FlowEngine([flow_on(model)], store=MemoryStore())


@pytest.mark.usefixtures("own_endpoints")
def test_u7_unknown_openai_model_name_fails_at_engine_start_with_a_suggestion() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        start("openai:gpt-4-o")
    assert str(caught.value) == (
        "ModelFlow.config_model(): 'openai:gpt-4-o' is not a model the openai provider serves. "
        "Did you mean 'gpt-4o'? Check the name, or give the endpoint that serves it "
        "(params={'base_url': ...})."
    )


@pytest.mark.usefixtures("own_endpoints")
@pytest.mark.parametrize(
    "model",
    ["anthropic:gpt-4o", "google_genai:claude-sonnet-4-5", "deepseek:chat", "openrouter:gpt-4o"],
)
def test_u7_unknown_model_names_of_other_builtin_providers_fail(model: str) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        start(model)
    provider = model.split(":")[0]
    assert f"'{model}' is not a model the {provider} provider serves." in str(caught.value)


@pytest.mark.usefixtures("own_endpoints")
@pytest.mark.parametrize(
    "model",
    [
        "openai:gpt-4o",
        "openai:gpt-4o-mini-2024-07-18",
        "openai:gpt-5",
        "openai:o3-mini",
        "anthropic:claude-sonnet-4-5",
        "google_genai:gemini-2.5-flash",
        "deepseek:deepseek-reasoner",
        "openrouter:anthropic/claude-sonnet-4.5",
        "ollama:any-local-model",
    ],
)
def test_u7_known_model_names_start(model: str) -> None:
    start(model)


def test_u7_any_name_is_accepted_on_an_endpoint_of_your_own() -> None:
    start("openai:llama-3.1-8b-instruct")  # conftest points OPENAI_BASE_URL at a loopback
    start(ModelSpec("openai", "my-model", {"base_url": "http://127.0.0.1:9/v1"}))


@pytest.mark.parametrize("name", ["o1", "o3-mini", "gpt-5", "gpt-5-mini", "o4-mini-2025-04-16"])
def test_u7_temperature_on_a_reasoning_model_fails_with_the_fix(name: str) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        start(ModelSpec("openai", name, {"temperature": 0.2}))
    assert str(caught.value) == (
        f"ModelFlow.config_model(): 'openai:{name}' is a reasoning model and does not accept "
        "'temperature'. Remove it from the params; to steer it, set "
        "params={'reasoning_effort': 'low' | 'medium' | 'high'}."
    )


def test_u7_a_step_model_is_checked_too() -> None:
    class StepModelFlow(Flow):
        def config_model(self) -> Any:
            return "openai:gpt-4o"

        def define_steps(self) -> list[Step]:
            return [AskStep(self).use_model(ModelSpec("openai", "o3", {"top_p": 0.5}))]

    with pytest.raises(FlowDefinitionError) as caught:
        FlowEngine([StepModelFlow], store=MemoryStore())
    assert str(caught.value).startswith(
        "StepModelFlow.AskStep.use_model(): 'openai:o3' is a reasoning model and does not "
        "accept 'top_p'."
    )


def test_u7_sampling_params_stay_allowed_where_the_model_takes_them() -> None:
    start(ModelSpec("openai", "gpt-4o", {"temperature": 0.2}))
    start(ModelSpec("openai", "gpt-5-chat-latest", {"temperature": 0.2}))
    start(ModelSpec("openai", "o3", {"reasoning_effort": "low"}))
