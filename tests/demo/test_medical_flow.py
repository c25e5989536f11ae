"""MedicalFlow (demo/medical): whole conversations through the real engine and the offline model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider, respond
from picoflow import FlowEngine
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[FlowEngine]:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "m.db")
    engine = FlowEngine([MedicalFlow], store=store, providers={"offline": offline_provider})
    yield engine
    await engine.aclose()


async def talk(engine: FlowEngine, *lines: str) -> tuple[list[Any], dict[str, Any]]:
    results, session_id = [], None
    for line in lines:
        result = await engine.run("MedicalFlow", line, session_id=session_id)
        assert result.success, result.message
        results.append(result)
        session_id = result.session_id
    doc = await engine.get_session(session_id)
    return results, doc


async def test_medical_flow_books_and_the_confirmation_reaches_the_closing_reply(
    engine: FlowEngine,
) -> None:
    results, doc = await talk(
        engine, "I have a sore throat and earache", "Dr. Reyes on Tuesday at 10:00"
    )
    assert [r.step for r in results] == ["BookingStep", "EndStep"]
    booking = doc["steps"]["BookingStep"]["state"]["booking"]
    assert booking["doctor"] == "Dr. Tom Reyes" and booking["slot"] == "Tue 10:00"
    assert results[-1].completed
    assert results[-1].message == (
        f"You're booked with Dr. Tom Reyes on Tue 10:00; your confirmation is "
        f"{booking['confirmation']}. Goodbye!"
    )
    assert doc["steps"]["BookingStep"]["state"]["symptoms"] == ["a sore throat", "earache"]
    assert doc["steps"]["SymptomsStep"]["model"] == {
        "provider": "offline",
        "name": "medical",
        "params": {"temperature": 0.5},
        "retry_attempts": 3,
    }


async def test_medical_flow_refuses_unknown_doctors_and_taken_slots(engine: FlowEngine) -> None:
    results, doc = await talk(
        engine,
        "Hello",
        "I have a cough",
        "Dr Smith on Mon 9:00",
        "Patel on Friday 9:00",
        "Patel on Monday 9:00",
    )
    assert [r.step for r in results] == [
        "SymptomsStep",
        "BookingStep",
        "BookingStep",
        "BookingStep",
        "EndStep",
    ]
    assert results[2].message == (
        "Sorry: There is no doctor called 'Smith'; you can see Dr. Maya Patel or Dr. Tom Reyes."
    )
    assert results[3].message == (
        "Sorry: Dr. Maya Patel is not free at 'Fri 09:00'; free slots: Mon 09:00, Mon 14:30, "
        "Wed 11:00."
    )
    assert doc["run_status"] == "completed"
    assert doc["steps"]["BookingStep"]["state"]["booking"]["slot"] == "Mon 09:00"


async def test_medical_flow_sends_urgent_symptoms_elsewhere(engine: FlowEngine) -> None:
    results, doc = await talk(engine, "I have chest pain")
    assert (results[0].step, results[0].completed) == ("SymptomsStep", False)
    assert results[0].message == (
        "Sorry: Urgent symptoms are not booked here. Tell the patient to call emergency "
        "services or go to the nearest emergency room."
    )
    assert "symptoms" not in doc["steps"]["SymptomsStep"]["state"]


async def test_medical_flow_symptoms_step_uses_the_same_model_with_its_own_params() -> None:
    built: list[Any] = []

    def factory(spec: Any) -> ScriptedChatModel:
        built.append(spec)
        return ScriptedChatModel(policy=respond)

    engine = FlowEngine([MedicalFlow], store=MemoryStore(), providers={"offline": factory})
    await engine.run("MedicalFlow", "I have a headache")
    assert [(s.name, s.params) for s in built] == [
        ("medical", {"temperature": 0.5}),
        ("medical", {}),
    ]


@pytest.mark.parametrize(
    ("said", "doctor", "slot"),
    [
        ("the first available, please", "Dr. Maya Patel", "Mon 09:00"),
        ("Dr Reyes thursday 4pm", "Dr. Tom Reyes", "Thu 16:00"),
        ("dr. patel on monday at 2:30 pm", "Dr. Maya Patel", "Mon 14:30"),
        ("Patel, Wednesday 11am", "Dr. Maya Patel", "Wed 11:00"),
    ],
)
async def test_medical_flow_reads_slots_as_people_write_them(
    engine: FlowEngine, said: str, doctor: str, slot: str
) -> None:
    results, doc = await talk(engine, "I have a cough", said)
    booking = doc["steps"]["BookingStep"]["state"]["booking"]
    assert (booking["doctor"], booking["slot"], results[-1].completed) == (doctor, slot, True)
