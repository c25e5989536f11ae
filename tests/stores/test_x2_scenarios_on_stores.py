"""X2: the same scenario runs green on every store (MemoryStore, SQLite, MongoDB)."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.hotel.flow import HotelFlow
from picoflow import FlowEngine
from picoflow.scenarios import export_session, run_scenario
from picoflow.stores import Store

BOOKING = Path(__file__).resolve().parents[2] / "demo/hotel/scenarios/booking.scenario.json"


async def test_x2_the_booking_scenario_on_every_store(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # HotelFlow's offline model
    engine = FlowEngine([HotelFlow], store=store)
    report = await run_scenario(engine, BOOKING)
    assert report.passed, report.failures
    doc = await store.load(str(report.session_id))
    assert doc is not None and doc["run_status"] == "completed"
    exported = await export_session(store, str(report.session_id))  # X5 reads every store
    assert [t["input"] for t in exported["turns"]] == [t.input for t in report.turns]
