"""The demo's people in the loop: HotelFlow asks an operator to approve a booking over the
limit in its config (K1, K3); MedicalFlow hands the patient to a person on request (K6).
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))  # server_flows

from server_flows import hotel_model  # noqa: E402

from demo.hotel.flow import PROVIDERS, HotelFlow  # noqa: E402
from demo.medical.flow import HANDOFF_REPLY, MedicalFlow  # noqa: E402
from picoflow import FlowEngine  # noqa: E402
from picoflow.stores import MemoryStore  # noqa: E402
from picoflow.testing import ScriptedChatModel, tool_call  # noqa: E402


async def test_k1_hotelflow_waits_for_an_operator_over_the_approval_limit() -> None:
    flow = HotelFlow.using(hotel_model(date.today()))
    engine = FlowEngine(flows=[flow], store=MemoryStore(), providers=PROVIDERS)
    first = await engine.run("HotelFlow", "Hi", config={"approval_limit": 1})
    session_id = first.session_id or ""
    await engine.run("HotelFlow", "Two nights, please", session_id)

    asked = await engine.run("HotelFlow", "Book number 1", session_id)

    assert (asked.step, [a["tool"] for a in asked.pending_approvals]) == (
        "PresentStep",
        ["chosen_hotel"],
    )
    done = await engine.resolve_approval(
        session_id, asked.pending_approvals[0]["id"], "approve", by="ops"
    )
    assert (done.message, done.step, done.completed) == (
        "Your stay is booked. Thank you, goodbye!",
        "EndStep",
        True,
    )


async def test_k1_hotelflow_books_at_once_without_a_limit() -> None:
    flow = HotelFlow.using(hotel_model(date.today()))
    engine = FlowEngine(flows=[flow], store=MemoryStore(), providers=PROVIDERS)
    first = await engine.run("HotelFlow", "Hi")
    await engine.run("HotelFlow", "Two nights, please", first.session_id)
    booked = await engine.run("HotelFlow", "Book number 1", first.session_id)
    assert (booked.pending_approvals, booked.completed) == ([], True)


async def test_k6_medicalflow_hands_the_patient_to_a_person() -> None:
    model = ScriptedChatModel(script=[tool_call("ask_for_a_person", reason="a nurse, please")])
    engine = FlowEngine([MedicalFlow.using(model)], store=MemoryStore())
    first = await engine.run("MedicalFlow", "Can I talk to a nurse?")
    assert first.message == HANDOFF_REPLY  # written for a patient (issue 35 item 6)
    [waiting] = await engine.waiting()
    assert waiting["operator"]["note"] == "The patient asked for a person: a nurse, please"
