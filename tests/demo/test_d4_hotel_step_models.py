"""D4: HotelFlow gives its steps PicoFlow's per-step models on OpenAI.

Offline (no `OPENAI_API_KEY`) and with a model passed in, every step keeps the flow's model,
so the scripted tests and the offline demo are unchanged.
"""

from __future__ import annotations

import pytest

from demo.hotel.flow import HotelFlow
from picoflow import FlowEngine, ModelSpec
from picoflow.stores import MemoryStore


def test_d4_hotelflow_on_openai_sets_picoflows_step_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    flow = HotelFlow()
    models = {name: step.get_model_selection() for name, step in flow.steps.items()}
    reasoning = ModelSpec("openai", "gpt-5.1", {"reasoning": {"effort": "low"}})
    assert models == {
        "ExploreStep": reasoning,
        "PresentStep": ModelSpec("openai", "gpt-4o-mini", {"temperature": 0.5}),
        "CompareStep": reasoning,
        "EndStep": ModelSpec("openai", "gpt-4o-mini"),
    }
    assert flow.steps["ExploreStep"].get_model() == "gpt-5.1"
    FlowEngine([HotelFlow], store=MemoryStore())  # the catalog accepts the models and params


def test_d4_hotelflow_offline_keeps_one_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    flow = HotelFlow()
    assert {step.get_model() for step in flow.steps.values()} == {"hotel"}
