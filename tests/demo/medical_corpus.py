"""Run MedicalFlow's corpora (``medical_heldout.txt``, ``medical_tuning.txt``) through the engine.

Each section names a session state, reached by a short conversation (``STATES``) and copied for
every case. A case is ``category | turns | expected effect``; the turns, separated by `` // ``,
are what a patient types next, one turn each. The effect is judged on the session after the
last turn:

* ``symptoms WORD[,WORD]`` — the symptoms were captured (each word in them, any case), the
  session is at the booking and nothing is booked;
* ``book DOCTOR @ SLOT`` — booked with exactly that doctor and slot, and the session completed;
* ``answer TEXT`` — nothing booked, not completed, and the last reply contains TEXT;
* ``none`` — nothing booked, not completed;
* ``end`` — the session completed without a booking.
"""

from __future__ import annotations

import copy
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from demo.medical.flow import MedicalFlow
from demo.medical.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "medical_heldout.txt"
TUNING = HERE / "medical_tuning.txt"

STATES: dict[str, list[str]] = {
    "new": [],
    "booking": ["Hi", "I have a sore throat"],
}
"""How each state of the corpus is reached."""


@dataclass(frozen=True)
class Case:
    source: str
    state: str
    category: str
    turns: tuple[str, ...]
    expected: str
    line: int


@dataclass
class Outcome:
    case: Case
    ok: bool
    detail: str


def read_corpus(path: Path) -> list[Case]:
    """The cases of a corpus file, in order."""
    cases, state = [], ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("== ") and line.endswith(" =="):
            state = line[3:-3].strip()
            continue
        category, said, expected = (part.strip() for part in line.split(" | "))
        turns = tuple(turn.strip() for turn in said.split(" // "))
        cases.append(Case(path.stem, state, category, turns, expected, number))
    return cases


def engine_on(store: MemoryStore) -> FlowEngine:
    return FlowEngine([MedicalFlow], store=store, providers={"offline": offline_provider})


class Runner:
    """Builds each state once, then runs every case on a fresh copy of it."""

    def __init__(self) -> None:
        self.snapshots: dict[str, dict[str, Any] | None] = {}

    async def snapshot(self, state: str) -> dict[str, Any] | None:
        if state not in self.snapshots:
            doc = None
            if STATES[state]:
                store = MemoryStore()
                engine = engine_on(store)
                session = None
                for text in STATES[state]:
                    result = await engine.run("MedicalFlow", text, session)
                    assert result.success, result.message
                    session = result.session_id
                assert session is not None
                loaded = await store.load(session)
                assert loaded is not None
                doc = {**loaded, "revision": 0}  # a new session in a fresh store
            self.snapshots[state] = doc
        return copy.deepcopy(self.snapshots[state])

    async def run(self, case: Case) -> Outcome:
        """Run one case on a copy of its state and judge the effect."""
        doc = await self.snapshot(case.state)
        store = MemoryStore()
        session = None
        if doc is not None:
            await store.create(doc)
            session = doc["id"]
        engine = engine_on(store)
        replies = []
        for text in case.turns:
            result = await engine.run("MedicalFlow", text, session)
            if not result.success:
                return Outcome(case, False, f"turn failed: {result.message}")
            replies.append(result.message)
            session = result.session_id
        after = await store.load(session) if session else None
        assert after is not None
        return judge(case, after, replies)


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
    else:
        raise ValueError(f"Unknown expected effect {kind!r} on line {case.line}")
    return Outcome(case, ok, seen)


def report(outcomes: list[Outcome]) -> str:
    """Accuracy per category, then the failures."""
    total, good = Counter[str](), Counter[str]()
    for outcome in outcomes:
        total[outcome.case.category] += 1
        good[outcome.case.category] += outcome.ok
    lines = [f"{'category':<12} {'ok':>4} {'all':>4} {'accuracy':>9}"]
    for category in sorted(total):
        share = good[category] / total[category]
        lines.append(f"{category:<12} {good[category]:>4} {total[category]:>4} {share:>9.1%}")
    overall = sum(good.values()) / max(1, sum(total.values()))
    right, cases = sum(good.values()), sum(total.values())
    lines.append(f"{'overall':<12} {right:>4} {cases:>4} {overall:>9.1%}")
    for outcome in outcomes:
        if not outcome.ok:
            case = outcome.case
            lines.append(
                f"FAIL {case.source}:{case.line} [{case.state}] {' // '.join(case.turns)!r}: "
                f"{outcome.detail}"
            )
    return "\n".join(lines)
