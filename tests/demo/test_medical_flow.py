"""MedicalFlow (demo/medical) against pico-demo-flows.md section 2, point by point.

Registration and initial step (2.1), the steps, their tools and argument schemas (2.2), the
doctors table (2.3), the transitions (2.4), the features it exercises (2.5) and the final
session state (2.6), all through the real engine and the offline model. The corpora in
test_medical_corpus.py cover the phrasing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from demo.medical.flow import DOCTORS, MedicalFlow
from demo.medical.offline import CLOSING, respond
from picoflow import EndStep, FlowEngine, ModelSpec
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel

PICOFLOW_DOCTORS = [
    {"name": "Dr. Smith", "specialty": "General Practice",
     "availableTimes": ["10:00 AM", "2:00 PM"]},
    {"name": "Dr. Jones", "specialty": "Specialist", "availableTimes": ["11:00 AM", "3:00 PM"]},
]  # fmt: skip


class Recorder:
    """A provider whose models answer with the offline policy and record what they were sent."""

    def __init__(self) -> None:
        self.models: list[tuple[ModelSpec, ScriptedChatModel]] = []

    def __call__(self, spec: ModelSpec) -> ScriptedChatModel:
        model = ScriptedChatModel(policy=respond)
        self.models.append((spec, model))
        return model

    def requests(self) -> list[Any]:
        return sorted(
            (r for _, m in self.models for r in m.requests), key=lambda r: r.messages[0].id or ""
        )


@pytest.fixture(params=["memory", "sqlite"])
async def engine(request: pytest.FixtureRequest, tmp_path: Any) -> AsyncIterator[FlowEngine]:
    store = MemoryStore() if request.param == "memory" else SQLiteStore(tmp_path / "m.db")
    engine = FlowEngine([MedicalFlow], store=store, providers={"offline": Recorder()})
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
    assert doc is not None
    return results, doc


def pattern(doc: dict[str, Any], namespace: str) -> list[str]:
    """A namespace as section 2.6 draws it: s, h, a, t (tool-call AI messages as "a:<tool>")."""
    letters = {"system": "s", "human": "h", "ai": "a", "tool": "t"}
    out = []
    for message in doc["memory"][namespace]["messages"]:
        calls = message["data"].get("tool_calls") or []
        letter = letters[message["type"]]
        out.append(f"{letter}:{calls[0]['name']}" if calls else letter)
    return out


def test_2_1_registration_order_namespaces_and_initial_step() -> None:
    flow = MedicalFlow()
    assert [(name, step.namespace) for name, step in flow.steps.items()] == [
        ("SymptomsStep", "SymptomsStep"),
        ("BookingStep", "BookingStep"),
        ("EndStep", "end"),
    ]
    assert flow.initial_step() is None  # the first registered step: SymptomsStep
    assert isinstance(flow.steps["EndStep"], EndStep)


def test_2_3_the_doctors_table_is_picoflows_exactly() -> None:
    assert DOCTORS == PICOFLOW_DOCTORS
    assert [list(doctor) for doctor in DOCTORS] == [["name", "specialty", "availableTimes"]] * 2


async def test_2_2_each_step_offers_picoflows_tools_with_its_argument_schemas() -> None:
    recorder = Recorder()
    engine = FlowEngine([MedicalFlow], store=MemoryStore(), providers={"offline": recorder})
    session = None
    for line in ["", "I have a sore throat", "Dr. Jones at 3pm"]:
        session = (await engine.run("MedicalFlow", line, session)).session_id
    bound = {}
    for request in recorder.requests():
        step = (request.messages[0].id or "").split("|")[0]
        bound[step] = {t["function"]["name"]: t["function"]["parameters"] for t in request.tools}
    # PicoFlow's tools, plus the one deliberate addition: issue 21's handoff to a person (K6),
    # offered by both steps since issue 35
    assert {step: sorted(tools) for step, tools in bound.items()} == {
        "SymptomsStep": ["ask_for_a_person", "capture_symptoms", "end_chat"],
        "BookingStep": ["ask_for_a_person", "book_appointment", "end_chat"],
        "EndStep": [],
    }
    symptoms = bound["SymptomsStep"]["capture_symptoms"]
    assert symptoms["required"] == ["symptoms"]
    assert symptoms["properties"]["symptoms"] == {
        "description": "the reported symptoms or reason for visit",
        "type": "string",
    }
    booking = bound["BookingStep"]["book_appointment"]
    assert booking["required"] == ["doctorName", "timeSlot"]
    assert booking["properties"] == {
        "doctorName": {"description": "name of the selected doctor", "type": "string"},
        "timeSlot": {"description": "the chosen time slot", "type": "string"},
    }
    assert bound["BookingStep"]["end_chat"].get("required", []) == []


async def test_2_1_symptoms_step_runs_the_flow_model_with_its_own_params() -> None:
    recorder = Recorder()
    engine = FlowEngine([MedicalFlow], store=MemoryStore(), providers={"offline": recorder})
    result = await engine.run("MedicalFlow", "I have a headache")
    assert [(spec.name, spec.params) for spec, _ in recorder.models] == [
        ("medical", {"temperature": 0.5}),  # SymptomsStep: useModelParams({temperature: 0.5})
        ("medical", {}),  # BookingStep: the flow's model as it is
    ]
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    assert doc["steps"]["SymptomsStep"]["model"]["params"] == {"temperature": 0.5}
    assert doc["steps"]["BookingStep"]["model"] is None  # PicoFlow: modelParams {}


async def test_2_6_final_state_after_a_complete_run(engine: FlowEngine) -> None:
    results, doc = await talk(engine, "", "I have a sore throat", "Dr. Jones please", "3pm")
    assert [r.step for r in results] == ["SymptomsStep", "BookingStep", "BookingStep", "EndStep"]
    assert [r.completed for r in results] == [False, False, False, True]
    assert (doc["run_status"], doc["flow"], doc["current_step"]) == (
        "completed",
        "MedicalFlow",
        "EndStep",
    )
    assert doc["sequence"] == ["SymptomsStep", "BookingStep", "EndStep"]
    assert list(doc["memory"]) == ["SymptomsStep", "BookingStep", "end"]
    assert pattern(doc, "SymptomsStep") == ["s", "h", "a", "h", "a:capture_symptoms", "t"]
    assert pattern(doc, "BookingStep") == ["s", "h", "a", "h", "a", "h", "a:book_appointment", "t"]
    assert pattern(doc, "end") == ["s", "h", "a"]
    booking_ns = doc["memory"]["BookingStep"]["messages"]
    assert booking_ns[1]["data"]["content"] == "Continue."  # the default opener (PicoFlow: Start)
    feedback = booking_ns[-1]["data"]["content"]
    assert feedback == "Successfully booked with Dr. Jones at 3:00 PM. Thank you!"
    end_ns = doc["memory"]["end"]["messages"]
    # issue 35 item 5: the closing model is told what was booked (PicoFlow's never was)
    assert end_ns[0]["data"]["content"] == (
        "Confirm the booking with Dr. Jones (Specialist) at 3:00 PM and say goodbye."
    )
    assert results[-1].message == f"You're booked with Dr. Jones (Specialist) at 3:00 PM. {CLOSING}"
    steps = {name: entry["state"] for name, entry in doc["steps"].items()}
    assert list(steps["SymptomsStep"]) == ["symptoms", "_saveOn"]
    assert steps["SymptomsStep"]["symptoms"] == "sore throat"
    assert list(steps["BookingStep"]) == ["doctors", "_saveOn", "doctorName", "timeSlot", "booked"]
    assert steps["BookingStep"]["doctors"] == PICOFLOW_DOCTORS
    assert (steps["BookingStep"]["doctorName"], steps["BookingStep"]["timeSlot"]) == (
        "Dr. Jones",
        "3:00 PM",
    )
    assert steps["BookingStep"]["booked"] is True
    assert steps["EndStep"]["_prompt"] == end_ns[0]["data"]["content"]


async def test_2_2_booking_prompt_keeps_the_original_empty_symptoms(engine: FlowEngine) -> None:
    _, doc = await talk(engine, "I have a migraine")
    prompt = doc["memory"]["BookingStep"]["messages"][0]["data"]["content"]
    compact = json.dumps(PICOFLOW_DOCTORS, separators=(",", ":"))
    assert "You have the user's symptoms: . " in prompt
    assert f"The available doctors are: {compact}." in prompt


@pytest.mark.parametrize(
    ("lines", "step"),
    [
        (["never mind, bye"], "SymptomsStep"),
        (["I have a cough", "cancel, I'll call back later. goodbye"], "BookingStep"),
    ],
)
async def test_2_4_end_chat_from_either_step_ends_without_a_booking(
    engine: FlowEngine, lines: list[str], step: str
) -> None:
    results, doc = await talk(engine, *lines)
    assert (results[-1].step, results[-1].completed, results[-1].message) == (
        "EndStep",
        True,
        CLOSING,
    )
    assert pattern(doc, step)[-2:] == ["a:end_chat", "t"]
    assert "booked" not in doc["steps"]["BookingStep"]["state"]
    assert doc["steps"]["EndStep"]["state"] == {}


@pytest.mark.parametrize(
    ("lines", "replies", "booked"),
    [
        (  # one fact at a time, a question before the answer, the slot by part of the day
            ["hi", "my knee is swollen", "who's the specialist?", "him, in the afternoon"],
            [
                "Hello! I'm the clinic's receptionist. What symptoms or reason brings you in "
                "today?",
                "Dr. Smith (General Practice) is available at 10:00 AM or 2:00 PM; Dr. Jones "
                "(Specialist) is available at 11:00 AM or 3:00 PM. Which doctor and time would "
                "you like?",
                "Dr. Smith is our General Practice doctor (10:00 AM or 2:00 PM). Dr. Jones is "
                "our Specialist (11:00 AM or 3:00 PM).",
            ],
            ("Dr. Jones", "3:00 PM"),
        ),
        (  # a slot the doctor does not have, then a correction by position
            ["I have a rash", "Dr. Smith at 11", "ok, his first slot then"],
            [
                "Dr. Smith (General Practice) is available at 10:00 AM or 2:00 PM; Dr. Jones "
                "(Specialist) is available at 11:00 AM or 3:00 PM. Which doctor and time would "
                "you like?",
                "Dr. Smith is not free at 11:00 AM. Dr. Smith (General Practice) is available "
                "at 10:00 AM or 2:00 PM; Dr. Jones (Specialist) is available at 11:00 AM or "
                "3:00 PM. Which doctor and time would you like?",
            ],
            ("Dr. Smith", "10:00 AM"),
        ),
        (  # typos, and the slot first: it names its doctor, who is proposed
            ["i hav a couhg", "2pm", "yes plz"],
            [
                "Dr. Smith (General Practice) is available at 10:00 AM or 2:00 PM; Dr. Jones "
                "(Specialist) is available at 11:00 AM or 3:00 PM. Which doctor and time would "
                "you like?",
                "2:00 PM is with Dr. Smith. Shall I book it?",
            ],
            ("Dr. Smith", "2:00 PM"),
        ),
    ],
)
async def test_2_4_conversations_book_the_doctor_and_slot_people_meant(
    engine: FlowEngine, lines: list[str], replies: list[str], booked: tuple[str, str]
) -> None:
    results, doc = await talk(engine, *lines)
    assert [r.message for r in results[:-1]] == replies
    state = doc["steps"]["BookingStep"]["state"]
    assert (state["doctorName"], state["timeSlot"], results[-1].completed) == (*booked, True)


CHOICES = (
    "Dr. Smith (General Practice) is available at 10:00 AM or 2:00 PM; Dr. Jones (Specialist) "
    "is available at 11:00 AM or 3:00 PM. Which doctor and time would you like?"
)


@pytest.mark.parametrize(
    ("said", "reply"),
    [
        (  # a slot by position with no doctor: the reply asks for the doctor, with both slots
            "the later one please",
            "Which doctor? The later slot is 2:00 PM with Dr. Smith or 3:00 PM with Dr. Jones.",
        ),
        (
            "the morning slot",
            "Which doctor? The earlier slot is 10:00 AM with Dr. Smith or 11:00 AM with Dr. Jones.",
        ),
        (  # a day: the doctors table has times only, which is said rather than ignored
            "who's free on thursday?",
            f"I don't have the doctors' days, only their times. {CHOICES}",
        ),
        ("asdf", f"I didn't catch which doctor or slot you would like. {CHOICES}"),
    ],
)
async def test_2_2_a_reply_says_what_it_did_not_understand(
    engine: FlowEngine, said: str, reply: str
) -> None:
    """PicoFlow's BookingStep model helps the patient pick a doctor and one of that doctor's
    slots: a message that leaves either open is answered with what is missing, not with the
    list alone (a stranger's report)."""
    results, doc = await talk(engine, "Hi", "I have a sore throat", said)
    assert results[-1].message == reply
    assert "booked" not in doc["steps"]["BookingStep"]["state"]


async def test_2_2_the_doctor_named_after_a_slot_by_position_books_that_slot(
    engine: FlowEngine,
) -> None:
    results, doc = await talk(engine, "Hi", "I have a sore throat", "the later one", "Dr. Jones")
    state = doc["steps"]["BookingStep"]["state"]
    assert (state["doctorName"], state["timeSlot"], results[-1].completed) == (
        "Dr. Jones",
        "3:00 PM",
        True,
    )
