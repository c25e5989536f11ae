"""MedicalFlow, ported from PicoFlow's demo: symptoms -> booking -> end.

    SymptomsStep ──capture_symptoms──▶ BookingStep ──book_appointment──▶ EndStep

SymptomsStep uses the flow's model with its own temperature (PicoFlow's ``useModelParams``:
the same model, other params). Two fixes over the original: BookingStep gets the symptoms with
the transition instead of reading its own empty state, and the booking's confirmation reaches
the closing reply (the original put it in a tool result the closing model never saw).
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from picoflow import EndStep, Flow, ModelLike, ModelSpec, Step, go, handoff, stay, tool

OFFLINE_MODEL = ModelSpec("offline", "medical")

DOCTORS: list[dict[str, Any]] = [
    {
        "name": "Dr. Maya Patel",
        "specialty": "general practice",
        "slots": ["Mon 09:00", "Mon 14:30", "Wed 11:00"],
    },
    {
        "name": "Dr. Tom Reyes",
        "specialty": "ear, nose and throat",
        "slots": ["Tue 10:00", "Thu 16:00"],
    },
]


class SymptomsStep(Step):
    def get_prompt(self) -> str:
        return (
            "You are a clinic's booking assistant. Ask what the patient's symptoms are and how "
            "urgent they feel, then call capture_symptoms. Give no medical advice."
        )

    @tool
    def capture_symptoms(
        self,
        symptoms: Annotated[list[str], Field(description="each symptom in a few words")],
        urgency: Literal["routine", "soon", "urgent"] = "routine",
    ) -> Any:
        """Record the patient's symptoms and how urgent they are."""
        if urgency == "urgent":
            return stay(
                "Urgent symptoms are not booked here. Tell the patient to call emergency "
                "services or go to the nearest emergency room."
            )
        self.save_state({"symptoms": symptoms, "urgency": urgency})
        return go(BookingStep).with_state({"doctors": DOCTORS, "symptoms": symptoms})

    @tool
    def ask_for_a_person(self, reason: str) -> Any:
        """Hand the conversation to the clinic's staff when the patient asks for a person."""
        return handoff(f"The patient asked for a person: {reason}")


class BookingStep(Step):
    def get_prompt(self) -> str:
        doctors = "; ".join(
            f"{d['name']} ({d['specialty']}): {', '.join(d['slots'])}"
            for d in self.get_state("doctors") or []
        )
        symptoms = ", ".join(self.get_state("symptoms") or [])
        return (
            f"The patient reports: {symptoms}. Offer these doctors and free slots: {doctors}. "
            "When the patient picks one, call book_appointment."
        )

    @tool
    def book_appointment(self, doctor: str, slot: str) -> Any:
        """Book the chosen doctor at the chosen slot."""
        chosen = next((d for d in DOCTORS if doctor.lower() in d["name"].lower()), None)
        if chosen is None:
            names = " or ".join(d["name"] for d in DOCTORS)
            return stay(f"There is no doctor called {doctor!r}; you can see {names}.")
        if slot not in chosen["slots"]:
            return stay(
                f"{chosen['name']} is not free at {slot!r}; free slots: "
                f"{', '.join(chosen['slots'])}."
            )
        code = hashlib.sha256(f"{chosen['name']}|{slot}".encode()).hexdigest()[:6].upper()
        booking = {"doctor": chosen["name"], "slot": slot, "confirmation": code}
        self.save_state({"booking": booking})
        return (
            go(EndStep)
            .with_tool_feedback(f"Booked, confirmation {code}.")
            .with_prompt(
                f"Confirm the appointment with {chosen['name']} on {slot} (confirmation "
                f"{code}) in one friendly sentence and say goodbye."
            )
        )


class MedicalFlow(Flow):
    """A clinic booking assistant: symptoms, a doctor and a slot, a confirmation."""

    chat_model: ClassVar[ModelLike | None] = None

    @classmethod
    def using(cls, model: ModelLike) -> type[MedicalFlow]:
        """This flow bound to ``model``; it keeps the persisted flow name "MedicalFlow"."""
        return type(cls.name, (cls,), {"name": cls.name, "chat_model": model})

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def define_steps(self) -> list[Step]:
        model = self.config_model()
        symptoms = SymptomsStep(self)
        if isinstance(model, ModelSpec):  # the same model, a calmer temperature
            symptoms.use_model(ModelSpec(model.provider, model.name, {"temperature": 0.5}))
        return [symptoms, BookingStep(self), EndStep(self).use_memory("end")]
