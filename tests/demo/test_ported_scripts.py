"""The tour scripts of the ported demos replay to a completed session with the offline models."""

from __future__ import annotations

from pathlib import Path

import pytest

from demo.ported import PORTED_FLOWS, offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {
    "BasicFlow": ROOT / "demo" / "basic" / "scripts" / "tour.txt",
    "MedicalFlow": ROOT / "demo" / "medical" / "scripts" / "tour.txt",
    "TravelFlow": ROOT / "demo" / "travel" / "scripts" / "tour.txt",
    "DecisionHotelFlow": ROOT / "demo" / "decision_hotel" / "scripts" / "tour.txt",
    "DecisionSupportFlow": ROOT / "demo" / "decision_support" / "scripts" / "tour.txt",
    "EmployeeBenefitsFlow": ROOT / "demo" / "benefits" / "scripts" / "tour.txt",
    "HomeInsuranceQuoteFlow": ROOT / "demo" / "insurance" / "scripts" / "tour.txt",
}


def lines(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8").splitlines()
    return [line for line in text if line.strip() and not line.startswith("#")]


@pytest.mark.parametrize("flow", sorted(SCRIPTS))
async def test_each_tour_script_ends_the_session(flow: str) -> None:
    engine = FlowEngine(PORTED_FLOWS, store=MemoryStore(), providers={"offline": offline_provider})
    session_id = None
    results = []
    for line in lines(SCRIPTS[flow]):
        result = await engine.run(flow, line, session_id=session_id)
        assert result.success, result.message
        results.append(result)
        session_id = result.session_id
    assert [r.completed for r in results] == [False] * (len(results) - 1) + [True]
    assert len({r.session_id for r in results}) == 1


def test_the_offline_provider_names_its_models() -> None:
    from picoflow import ModelSpec

    with pytest.raises(ValueError) as caught:
        offline_provider(ModelSpec("offline", "nope"))
    assert str(caught.value) == (
        "No offline demo model 'offline:nope'; there are offline:hotel, offline:basic, "
        "offline:medical, offline:travel, offline:decision_hotel, offline:decision_support, "
        "offline:benefits, offline:insurance (and their '-<role>' models)."
    )
