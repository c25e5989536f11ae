"""MedicalFlow, ported point by point from PicoFlow's demo (pico-demo-flows.md section 2).

    SymptomsStep ──capture_symptoms──▶ BookingStep ──book_appointment──▶ EndStep
         └──────────end_chat──────────────┴──────────end_chat──────────────┘

What it exercises: a fixed initial step; per-step model params without a model switch
(PicoFlow's ``useModelParams``: SymptomsStep runs the flow's model at temperature 0.5); state
carried to the destination (``doctors`` is saved on BookingStep) and read by its prompt; the
framework's default opener when BookingStep is entered; tool feedback across steps (the booking
confirmation is the tool result in BookingStep's namespace); a bare ``EndStep`` that says its
built-in closing line.

One behaviour of the original is kept on purpose, because a faithful port keeps it (see
docs/ported-demos.md for the one-line fix): BookingStep's prompt reads ``symptoms`` from its
own state, where nothing saves it, so the prompt says "symptoms: ." with nothing in between.
Issue 35 changed two: the closing model is told what was booked (PicoFlow's goodbye never said
it), and the patient may ask for a person from either step (`ask_for_a_person`).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar

from pydantic import Field

from picoflow import EndStep, Flow, ModelLike, ModelSpec, Step, go, handoff, tool, turn_window

OFFLINE_MODEL = ModelSpec("offline", "medical")
SYMPTOMS_PARAMS: dict[str, Any] = {"temperature": 0.5}  # useModelParams<'gpt-4o'>({...})

DOCTORS: list[dict[str, Any]] = [
    {"name": "Dr. Smith", "specialty": "General Practice",
     "availableTimes": ["10:00 AM", "2:00 PM"]},
    {"name": "Dr. Jones", "specialty": "Specialist", "availableTimes": ["11:00 AM", "3:00 PM"]},
]  # fmt: skip
"""PicoFlow's doctors table, exactly, in its order (section 2.3)."""
HANDOFF_REPLY = (
    "Of course. I've asked a member of the clinic's staff to join; they will answer you here. "
    "Nothing has been booked or changed."
)
"""What the patient reads when a person is asked for (issue 35 item 6)."""


def closing_prompt(doctor: str, slot: str) -> str:
    """EndStep's prompt after a booking: the goodbye names the doctor and the time (issue 35).

    PicoFlow's table gives times and no days, so no day is named: saying one would be a guess.
    """
    specialty = next((d["specialty"] for d in DOCTORS if d["name"] == doctor), "")
    who = f"{doctor} ({specialty})" if specialty else doctor
    return f"Confirm the booking with {who} at {slot} and say goodbye."


class ClinicStep(Step):
    """What both conversational steps share: PicoFlow lists `end_chat` in each step's tools."""

    @tool
    def end_chat(
        self,
        prompt: Annotated[str, Field(description="a closing instruction; not used here")] = "",
    ) -> Any:
        """End the conversation when the user wants to stop."""
        return go(EndStep)  # bare: no _prompt, so EndStep says its built-in closing line

    @tool
    def ask_for_a_person(self, reason: str) -> Any:
        """Hand the conversation to the clinic's staff when the patient asks for a person."""
        return handoff(f"The patient asked for a person: {reason}", reply=HANDOFF_REPLY)


class SymptomsStep(ClinicStep):
    """The initial step: the reason for the visit."""

    def get_prompt(self) -> str:
        return (
            "You are a helpful medical receptionist. Ask the user for their symptoms and the "
            "reason for their visit. Once the reason for the visit is clear, use "
            "capture_symptoms."
        )

    @tool
    def capture_symptoms(
        self,
        symptoms: Annotated[str, Field(description="the reported symptoms or reason for visit")],
    ) -> Any:
        """Capture the user's symptoms to find a suitable doctor."""
        self.save_state({"symptoms": symptoms})
        return go(BookingStep).with_state({"doctors": DOCTORS})  # saved on BookingStep


class BookingStep(ClinicStep):
    """A doctor and one of that doctor's slots."""

    def get_prompt(self) -> str:
        symptoms = self.get_state("symptoms") or ""  # kept from the original: never set here
        doctors = json.dumps(self.get_state("doctors"), separators=(",", ":"))
        return (
            f"You are a medical receptionist. You have the user's symptoms: {symptoms}. "
            f"The available doctors are: {doctors}. Help the user choose a doctor and one of "
            "that doctor's available time slots. Once the user has decided, use "
            "book_appointment."
        )

    @tool
    def book_appointment(
        self,
        doctorName: Annotated[str, Field(description="name of the selected doctor")],
        timeSlot: Annotated[str, Field(description="the chosen time slot")],
    ) -> Any:
        """Book an appointment with the selected doctor at the chosen time."""
        self.save_state({"doctorName": doctorName, "timeSlot": timeSlot, "booked": True})
        return (
            go(EndStep)
            .with_tool_feedback(f"Successfully booked with {doctorName} at {timeSlot}. Thank you!")
            .with_prompt(closing_prompt(doctorName, timeSlot))
        )


class MedicalFlow(Flow):
    """PicoFlow's appointment intake: symptoms, then a doctor and a slot, then goodbye."""

    chat_model: ClassVar[ModelLike | None] = None

    def __init__(self) -> None:
        super().__init__()
        # Issue 25: every namespace is bounded whatever the user does. The stage's data lives in
        # state, so a user who lingers keeps the last turns of the conversation only (M11);
        # PicoFlow's own run of this flow never reaches the window.
        for namespace in ("SymptomsStep", "BookingStep", "end"):
            self.get_memory().set_policy(namespace, turn_window(max_turns=12, keep_turns=6))

    @classmethod
    def using(cls, model: ModelLike) -> type[MedicalFlow]:
        """This flow bound to ``model``; it keeps the persisted flow name "MedicalFlow"."""
        return type(cls.name, (cls,), {"name": cls.name, "chat_model": model})

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def define_steps(self) -> list[Step]:
        symptoms = SymptomsStep(self)
        model = self.config_model()
        if isinstance(model, ModelSpec):  # the same model with other params (useModelParams)
            symptoms.use_model(ModelSpec(model.provider, model.name, SYMPTOMS_PARAMS))
        return [symptoms, BookingStep(self), EndStep(self).use_memory("end")]
