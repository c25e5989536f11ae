"""MedicalFlow's adapter to the corpus kit (``support.corpus_kit``) for ``medical_*.txt``.

Each section names a session state, reached by a short conversation (``STATES``) and copied for
every case. A case is ``category | turns | expected effect``; the turns, separated by `` // ``,
are what a patient types next, one turn each. The effect is judged on the session after the
last turn:

* ``symptoms WORD[,WORD]`` — the symptoms were captured (each word in them, any case), the
  session is at the booking and nothing is booked;
* ``book DOCTOR @ SLOT`` — booked with exactly that doctor and slot, and the session completed;
* ``answer TEXT`` — nothing booked, not completed, and the last reply contains TEXT;
* ``none`` — nothing booked, not completed;
* ``end`` — the session completed without a booking;
* ``handoff`` — a person was asked for: the session is in operator mode, nothing booked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.corpus_kit import Case, Outcome, Replay, Replayer

from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "medical_heldout.txt"
TUNING = HERE / "medical_tuning.txt"
TUNING_35 = HERE / "medical_tuning35.txt"  # issue 35: withdrawn choices, corrections, days

CHOICES = ("book", "end")
"""The effects that may complete a session: a slot chosen (or a yes to one read back), a goodbye."""

STATES: dict[str, list[str]] = {
    "new": [],
    "booking": ["Hi", "I have a sore throat"],
}
"""How each state of the corpus is reached."""


class MedicalReplayer(Replayer):
    """Judges the session after a case's last turn, and that turn's reply."""

    flow = "MedicalFlow"
    states = STATES

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine([MedicalFlow], store=store, providers={"offline": offline_provider})

    async def judge(self, replay: Replay) -> Outcome:
        return judge(replay.case, replay.after, [turn.reply for turn in replay.turns])


def symptoms_of(doc: dict[str, Any]) -> str:
    found = doc["steps"].get("SymptomsStep", {}).get("state", {}).get("symptoms")
    return " ".join(found) if isinstance(found, list) else str(found or "")


def booking_of(doc: dict[str, Any]) -> tuple[str, str] | None:
    state = doc["steps"].get("BookingStep", {}).get("state", {})
    if state.get("booked"):
        return state.get("doctorName"), state.get("timeSlot")
    old = state.get("booking")  # the port before issue 19 stored {"doctor", "slot", ...}
    return (old["doctor"], old["slot"]) if isinstance(old, dict) else None


def judge(case: Case, doc: dict[str, Any], replies: list[str]) -> Outcome:
    """Whether the conversation had the expected effect."""
    kind, _, rest = case.expected.partition(" ")
    booking, completed = booking_of(doc), doc.get("run_status") == "completed"
    seen = f"booking={booking} completed={completed} symptoms={symptoms_of(doc)!r} "
    seen += f"reply={replies[-1]!r}"
    if kind == "symptoms":
        words = [w.strip().lower() for w in rest.split(",")]
        captured = symptoms_of(doc).lower()
        at_booking = doc.get("current_step") == "BookingStep"
        ok = all(w in captured for w in words) and at_booking and booking is None
    elif kind == "book":
        doctor, _, slot = (part.strip() for part in rest.partition("@"))
        ok = booking == (doctor, slot) and completed
    elif kind == "answer":
        ok = booking is None and not completed and rest.lower() in replies[-1].lower()
    elif kind == "none":
        ok = booking is None and not completed
    elif kind == "end":
        ok = booking is None and completed
    elif kind == "handoff":
        ok = booking is None and not completed and doc.get("operator") is not None
    else:
        raise ValueError(f"Unknown expected effect {kind!r} on line {case.line}")
    return Outcome(case, ok, seen, booking is not None or completed)
