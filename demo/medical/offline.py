"""The offline model of MedicalFlow: rules that answer from the messages and bound tools only."""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage, BaseMessage

from demo.basic.offline import relay
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, tool_call

_SYMPTOMS = re.compile(r"(?:i have|i've got|symptoms? (?:are|is))\s+(.+)", re.I)
_URGENT = re.compile(r"\b(chest pain|can't breathe|bleeding|unconscious)\b", re.I)
_SOON = re.compile(r"\b(soon|asap|this week|worse)\b", re.I)
_DOCTOR = re.compile(r"\b(patel|reyes)\b|\bdr\.?\s+(\w+)", re.I)
_SLOT = re.compile(
    r"\b(mon|tue|wed|thu|fri)\w*\s+(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)?",
    re.I,
)
_EARLIEST = re.compile(r"\b(?:first|earliest|soonest|next) (?:available|free|slot|one)\b", re.I)
_CONFIRM = re.compile(r"with (Dr\. [\w ]+) on (\w+ \d{1,2}:\d{2}) \(confirmation (\w+)\)")


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    last = messages[-1]
    if last.type == "tool":
        return relay(last.text)
    said = last.text
    if "capture_symptoms" in tools:
        return _symptoms(said)
    if "book_appointment" in tools:
        return _booking(said)
    confirmed = _CONFIRM.search(str(messages[0].content))
    if confirmed:
        doctor, slot, code = confirmed.groups()
        return f"You're booked with {doctor} on {slot}; your confirmation is {code}. Goodbye!"
    return "Thank you for contacting the clinic. Goodbye!"


def _symptoms(said: str) -> AIMessage | str:
    found = _SYMPTOMS.search(said)
    if not found:
        return "I'm sorry you're unwell. What symptoms do you have?"
    symptoms = [s.strip() for s in re.split(r",| and ", found.group(1).rstrip(".")) if s.strip()]
    urgency = "urgent" if _URGENT.search(said) else "soon" if _SOON.search(said) else "routine"
    return tool_call("capture_symptoms", symptoms=symptoms, urgency=urgency)


def _booking(said: str) -> AIMessage | str:
    if _EARLIEST.search(said):  # the week's first free slot: Dr. Patel, Monday 09:00
        return tool_call("book_appointment", doctor="patel", slot="Mon 09:00")
    doctor, slot = _DOCTOR.search(said), _SLOT.search(said)
    if doctor and slot:
        day = slot.group(1)[:3].capitalize()
        hour, minute, half = int(slot.group(2)), slot.group(3) or "00", (slot.group(4) or "")
        if half.lower().startswith("p") and hour < 12:
            hour += 12
        name = doctor.group(1) or doctor.group(2)
        return tool_call("book_appointment", doctor=name, slot=f"{day} {hour:02d}:{minute}")
    return (
        "Dr. Maya Patel is free Mon 09:00, Mon 14:30 or Wed 11:00; Dr. Tom Reyes Tue 10:00 or "
        "Thu 16:00. Which would you like?"
    )


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:medical"`` (any params)."""
    if spec.name != "medical":
        raise ValueError(
            f"The MedicalFlow offline provider has one model, 'offline:medical'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
