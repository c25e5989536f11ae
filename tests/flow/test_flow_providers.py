"""Flow.providers: a flow brings the model providers its models need (X2, F5)."""

from __future__ import annotations

from typing import Any

import pytest

from picoflow import Flow, FlowDefinitionError, FlowEngine, ModelSpec, Step
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel


class ChatStep(Step):
    pass


def local(spec: ModelSpec) -> ScriptedChatModel:
    return ScriptedChatModel(script=[f"local {spec.name}"])


def other_local(spec: ModelSpec) -> ScriptedChatModel:
    return ScriptedChatModel(script=[f"other {spec.name}"])


class LocalFlow(Flow):
    providers = {"local": local}

    def config_model(self) -> Any:
        return "local:small"

    def define_steps(self) -> list[Step]:
        return [ChatStep(self)]


class OtherFlow(LocalFlow):
    name = "OtherFlow"
    providers = {"local": other_local}


async def test_x2_a_flow_declares_the_providers_its_models_need() -> None:
    engine = FlowEngine([LocalFlow], store=MemoryStore())
    result = await engine.run("LocalFlow", "hi")
    assert (result.success, result.message) == (True, "local small")


async def test_x2_engine_providers_win_over_a_flows() -> None:
    engine = FlowEngine([LocalFlow], store=MemoryStore(), providers={"local": other_local})
    assert (await engine.run("LocalFlow", "hi")).message == "other small"


def test_x2_two_flows_with_clashing_providers_are_refused() -> None:
    with pytest.raises(FlowDefinitionError) as refused:
        FlowEngine([LocalFlow, OtherFlow], store=MemoryStore())
    assert str(refused.value) == (
        "Flows 'LocalFlow' and 'OtherFlow' both declare a model provider 'local', with "
        "different factories; one engine has one provider per name. Pass the one to use with "
        "FlowEngine(providers={'local': factory}), or run the flows on separate engines."
    )
    FlowEngine([LocalFlow, OtherFlow], store=MemoryStore(), providers={"local": local})


def test_x2_hotel_flow_brings_its_offline_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    from demo.hotel.flow import HotelFlow

    monkeypatch.delenv("OPENAI_API_KEY")
    assert FlowEngine([HotelFlow], store=MemoryStore()).flow_names() == ["HotelFlow"]
