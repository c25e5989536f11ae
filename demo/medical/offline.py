"""The offline model of MedicalFlow: answers from the messages and bound tools only, as an LLM.

SymptomsStep's model captures the complaint in the patient's words. BookingStep's model reads
the doctors from its prompt (as PicoFlow's model did, from the JSON there) and replays the
patient's messages of its namespace in order, so a doctor and a slot may come in one message or
several, by name, position or reference, and a later one corrects an earlier one. It books
only a slot the chosen doctor has; a question is answered and never books.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from demo.medical.reading import Reading, read, symptoms_in, wants_a_person, wants_to_end
from demo.reading import corrections
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, tool_call

_DOCTORS_IN_PROMPT = re.compile(r"doctors are: (\[.*\])\. Help", re.S)
_ABOUT_SPECIALTY = re.compile(r"specialist|general|practi|\bgp\b|difference|kind of|type of")
_GREETING = re.compile(
    r"^(?:hi|hello|hey|good (?:morning|afternoon|evening)|continue)?[\s!.]*$", re.I
)
CLOSING = "Thank you for contacting the clinic. Take care, and goodbye!"
_BOOKED = re.compile(r"Confirm the booking with (?P<who>.+?) at (?P<slot>\d{1,2}:\d\d [AP]M)")
GREETING = "Hello! I'm the clinic's receptionist. What symptoms or reason brings you in today?"


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    last = messages[-1]
    if last.type == "tool":  # an error result (R6): say it, the patient decides
        return f"Sorry, that did not work: {last.text}"
    if isinstance(last, HumanMessage) and wants_a_person(last.text):
        return tool_call("ask_for_a_person", reason=last.text.strip() or "asked for a person")
    if "capture_symptoms" in tools:
        return _symptoms(last.text if isinstance(last, HumanMessage) else "")
    if "book_appointment" in tools:
        doctors = _doctors(str(messages[0].content))
        said = [m.text for m in messages[1:] if isinstance(m, HumanMessage)]
        return Booking(doctors).reply(corrections.expand(said))
    return closing(str(messages[0].content))


def closing(prompt: str) -> str:
    """The goodbye; after a booking it names the doctor and the time (issue 35 item 5)."""
    booked = _BOOKED.search(prompt)
    if booked is None:
        return CLOSING
    return f"You're booked with {booked['who']} at {booked['slot']}. {CLOSING}"


def _symptoms(said: str) -> AIMessage | str:
    found = symptoms_in(said)
    if found:
        return tool_call("capture_symptoms", symptoms=found)
    if wants_to_end(said):
        return tool_call("end_chat")
    if _GREETING.match(said.strip()):
        return GREETING
    return "I can help you book a doctor. First, what symptoms or reason for the visit do you have?"


def _doctors(prompt: str) -> list[dict[str, Any]]:
    found = _DOCTORS_IN_PROMPT.search(prompt)
    try:
        doctors = json.loads(found.group(1)) if found else []
    except ValueError:
        return []
    return doctors if isinstance(doctors, list) else []


@dataclass
class Booking:
    """The booking as the patient's messages so far have shaped it."""

    doctors: list[dict[str, Any]]
    doctor: int | None = None
    slot: str | None = None
    focus: int | None = None  # the doctor last talked about, for "them" and "the other one"
    proposal: tuple[int, str] | None = None  # what "yes" would book
    pending: int | None = None  # a slot position chosen before any doctor ("the later one")
    problem: str | None = None
    withheld: tuple[int, str] | None = None  # a choice taken back ("... hmm, hold on")

    def reply(self, said: list[str]) -> AIMessage | str:
        """Replay every message, then answer the last one."""
        if not self.doctors:
            return "Sorry, I have no doctors to offer right now."
        reading = Reading()
        for text in said:
            reading = read(text, self.doctors)
            self.problem = None
            if corrections.withdrawn(text):  # "hold on, let me check my calendar": two parts
                self._withhold()
                continue
            self.withheld = None
            offered = self.proposal  # a read-back: only the very next message may take it
            if reading.question:
                self._note_question(reading)
            else:
                self._apply(reading)
            if reading.day and self.doctor is not None and self.slot is not None:
                self.proposal, self.slot = (self.doctor, self.slot), None  # a yes books it
            elif self.proposal is offered:
                self.proposal = None
        return self._answer(reading, opener=len(said) == 1)

    # -- reading a message ----------------------------------------------------------------

    def _apply(self, reading: Reading) -> None:
        if reading.yes and self.proposal and not (reading.doctors or reading.times):
            self.doctor, self.slot = self.proposal
        doctor = self._doctor_named(reading)
        if doctor is not None:
            self.doctor = self.focus = doctor
        if reading.unknown:
            self.problem = f"We don't have a Dr. {reading.unknown[-1]} here."
            self.doctor = None
        self._take_time(reading)
        if self.doctor is not None and self.slot is None and self.pending is not None:
            self.slot = self._slot_at(self.doctor, self.pending)  # "the later one" // "Jones"
        if self.slot is not None:
            self.pending = None
        if self.slot is not None and self.doctor is None:
            owner = self._owner(self.slot)
            if reading.anyone or self.focus == owner:
                self.doctor = owner
            else:
                self.proposal = (owner, self.slot)
        if self.doctor is not None and self.slot is not None:
            if self.slot not in self._times(self.doctor):
                name = self.doctors[self.doctor]["name"]
                self.problem = f"{name} is not free at {self.slot}."
                self.slot = None

    def _withhold(self) -> None:
        """A choice taken back: nothing is booked, and no "yes" books it either."""
        if self.doctor is not None and self.slot is not None:
            self.withheld = (self.doctor, self.slot)
        elif self.withheld is None and self.proposal is not None:
            self.withheld = self.proposal  # "2pm? // hmm, hold on": the read-back is withdrawn
        self.slot = self.pending = self.proposal = None
        self.doctor = None

    def _note_question(self, reading: Reading) -> None:
        doctor = self._doctor_named(reading)
        if doctor is not None:
            self.focus = doctor
        time = reading.times[-1].value if reading.times else None
        if isinstance(time, str) and not time.startswith("?"):
            self.proposal = (self._owner(time), time)

    def _doctor_named(self, reading: Reading) -> int | None:
        if reading.doctors:
            value = reading.doctors[-1].value
            if isinstance(value, int):
                return value
            position = value[1]
            if position is None:  # "the other doctor"
                known = self.doctor if self.doctor is not None else self.focus
                return None if known is None else 1 - known if len(self.doctors) == 2 else None
            return range(len(self.doctors))[position]
        if reading.pronoun and self.focus is not None:
            return self.focus
        return None

    def _take_time(self, reading: Reading) -> None:
        if not reading.times:
            return
        value = reading.times[-1].value
        if isinstance(value, str):
            if value.startswith("?"):
                self.problem = f"No doctor is free at {value[1:]}."
                self.slot = None
            else:
                self.slot = value
            return
        kind, position = value[0], value[1]
        if kind == "one" and self.doctor is None:  # "the first one": a doctor
            self.doctor = self.focus = range(len(self.doctors))[position or 0]
            return
        if self.doctor is None and self.focus is not None:  # "the morning one" after a question
            self.doctor = self.focus
        if self.doctor is not None:
            self.slot = self._times(self.doctor)[position or 0]
        elif len(value) > 2 and value[2]:  # "the earliest appointment": of all doctors
            every = sorted((_minutes(t), t) for d in self.doctors for t in d["availableTimes"])
            self.slot = every[position or 0][1]
            self.doctor = self._owner(self.slot)
        else:  # "the later one" with no doctor yet: kept until one is named
            self.pending = position or 0

    # -- answering ------------------------------------------------------------------------

    def _answer(self, reading: Reading, opener: bool) -> AIMessage | str:
        if reading.end and not reading.question:
            return tool_call("end_chat")
        if reading.question:
            return self._answer_question(reading)
        if self.withheld is not None:
            doctor, slot = self.withheld
            return (
                f"No problem: I haven't booked anything. {self.doctors[doctor]['name']} at {slot} "
                "is still free; tell me when you would like to book it."
            )
        if self.doctor is not None and self.slot is not None:
            name = self.doctors[self.doctor]["name"]
            return tool_call("book_appointment", doctorName=name, timeSlot=self.slot)
        if reading.day and self.proposal is not None and self.slot is None:
            doctor, slot = self.proposal  # "jones at 11 this thursday": no day can be promised
            return (
                "I don't have the doctors' days, only their times. "
                f"Shall I book {self.doctors[doctor]['name']} at {slot}?"
            )
        if self.problem:
            return f"{self.problem} {self._choices()}"
        if self.doctor is not None:
            return f"{self._describe(self.doctor)}. Which time would you like?"
        if self.slot is not None:
            owner = self._owner(self.slot)
            return f"{self.slot} is with {self.doctors[owner]['name']}. Shall I book it?"
        if self.pending is not None and reading.times:
            return self._which_doctor(self.pending)
        return self._unclear(reading, opener) + self._choices()

    def _answer_question(self, reading: Reading) -> str:
        doctor = self._doctor_named(reading)
        if doctor is None and not reading.doctors:
            doctor = self.doctor
        if _ABOUT_SPECIALTY.search(reading.text):
            return " ".join(f"{self._specialty(i)}." for i in range(len(self.doctors)))
        if self.proposal and reading.times and doctor is None:
            owner, slot = self.proposal
            return f"At {slot} you can see {self.doctors[owner]['name']}. Shall I book it?"
        if doctor is not None:
            return f"{self._describe(doctor)}. Which time would you like?"
        return self._unclear(reading, opener=False) + self._choices()

    def _unclear(self, reading: Reading, opener: bool) -> str:
        """What the message left out, said before the choices, so they are not a bare repeat."""
        if reading.day:
            return "I don't have the doctors' days, only their times. "
        if not opener and reading.names_nothing() and not _GREETING.match(reading.text):
            return "I didn't catch which doctor or slot you would like. "
        return ""

    def _which_doctor(self, position: int) -> str:
        """A slot chosen by position, no doctor yet: each doctor's slot at that position."""
        label = {0: "earlier", -1: "later", 1: "second", 2: "third"}.get(position, "chosen")
        if all(position == len(self._times(i)) - 1 for i in range(len(self.doctors))):
            label = "later"
        options = " or ".join(
            f"{slot} with {self.doctors[i]['name']}"
            for i in range(len(self.doctors))
            if (slot := self._slot_at(i, position)) is not None
        )
        return f"Which doctor? The {label} slot is {options}."

    def _slot_at(self, index: int, position: int) -> str | None:
        times = self._times(index)
        return times[position] if -len(times) <= position < len(times) else None

    def _choices(self) -> str:
        listed = "; ".join(self._describe(i) for i in range(len(self.doctors)))
        return f"{listed}. Which doctor and time would you like?"

    def _describe(self, index: int) -> str:
        doctor = self.doctors[index]
        times = " or ".join(doctor["availableTimes"])
        return f"{doctor['name']} ({doctor['specialty']}) is available at {times}"

    def _specialty(self, index: int) -> str:
        doctor, specialty = self.doctors[index], self.doctors[index]["specialty"]
        kind = specialty if specialty.endswith("ist") else f"{specialty} doctor"
        return f"{doctor['name']} is our {kind} ({' or '.join(doctor['availableTimes'])})"

    def _times(self, index: int) -> list[str]:
        return list(self.doctors[index]["availableTimes"])

    def _owner(self, slot: str) -> int:
        return next(i for i, d in enumerate(self.doctors) if slot in d["availableTimes"])


def _minutes(slot: str) -> int:
    clock, half = slot.split()
    hour, minute = (int(part) for part in clock.split(":"))
    return (hour % 12 + (12 if half == "PM" else 0)) * 60 + minute


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:medical"`` (any params)."""
    if spec.name != "medical":
        raise ValueError(
            f"The MedicalFlow offline provider has one model, 'offline:medical'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
