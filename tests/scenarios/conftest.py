"""Fixtures of the scenario tests: CityFlow's engine, and HotelFlow on its offline model."""

from __future__ import annotations

import pytest
from scenario_flows import CityFlow

from picoflow import FlowEngine
from picoflow.stores import MemoryStore


@pytest.fixture
def city_engine() -> FlowEngine:
    return FlowEngine([CityFlow], store=MemoryStore())


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OpenAI key: HotelFlow picks its offline demo model, as on a fresh checkout."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
