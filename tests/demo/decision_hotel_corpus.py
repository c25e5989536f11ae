"""DecisionHotelFlow's adapter to the corpus kit (``support.corpus_kit``), ``decision_hotel_*``.

The states and the expectation vocabulary are the held-out set's header
(``decision_hotel_heldout38.txt``, written from the research doc by a helper who had not seen
the demo); this judge implements them as written. Clauses are joined by `` & `` and must all
hold after the last turn:

* ``at STEP`` — the cursor is in STEP; nothing booked; not completed;
* ``field STEP.KEY=VALUE`` — STEP's saved KEY equals VALUE (a number, ``null``, a string, or
  ``[a,b]`` compared as a set, ``[]`` the explicit empty list); nothing booked; not completed;
* ``answer TEXT`` — nothing booked, not completed, the last reply contains TEXT (any case, as
  the other demos' judges read "contains");
* ``none`` — nothing booked, not completed, the five collectors' states as the state left them,
  and the cursor not newly in PresentStep (no new search);
* ``booked #N`` — completed; the booked hotel is the N-th of ``hotelFound``; a six-digit
  confirmation; the reply contains "is booked with confirmation #". The header says
  ``selectedHotel`` *equals the hotelName*; the doc saves the hotel itself (``selectedHotel ∈
  hotelFound``, §3.4), so the name compared is the saved hotel's ``hotelName``;
* ``end`` — completed without a booking; the reply contains "Thanks for considering Hilton
  hotels in Portland.".

Every session fixes ``config.today`` to 2026-12-07, the day the lines were written.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from support.corpus_kit import Case, Doc, Outcome, Replay, Replayer, Turn, talk

from demo.decision_hotel.flow import DecisionHotelFlow
from demo.decision_hotel.offline import decision_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "decision_hotel_heldout38.txt"
TUNING = HERE / "decision_hotel_tuning38.txt"
WRITTEN_ON = {"today": "2026-12-07"}
CHOICES = ("booked", "end")
"""The effects that may complete a session: a listed hotel booked, a goodbye."""
COLLECTORS = ("DateRangeStep", "BudgetStep", "RoomTypeStep", "AmenityStep", "DistanceStep")
BOOKED = "is booked with confirmation #"
ENDED = "Thanks for considering Hilton hotels in Portland."

ALL_AT_ONCE = "dec 18 to 21, between $100 and $200, one bed, free wifi, distance doesn't matter"
"""Every criterion in one message (the tests' way to the review)."""
_OPEN = "I'd like to book a hotel in Portland"
_DATES = "check in 2026-12-18, check out 2026-12-21"
STATES: dict[str, list[str]] = {
    "new": [],
    "dates": [_OPEN],
    "budget": [_OPEN, _DATES],
    "amenities": [_OPEN, _DATES, "between $100 and $200 a night", "one bed"],
    "distance": [_OPEN, _DATES, "between $100 and $200 a night", "one bed", "free WiFi"],
    "ready": [
        _OPEN, _DATES, "between $100 and $200 a night", "one bed", "free WiFi",
        "distance doesn't matter",
    ],
    "results": [
        _OPEN, _DATES, "no budget limit", "one bed", "no amenity preference",
        "distance doesn't matter", "search",
    ],
}  # fmt: skip
"""How each state of the header is reached, turn by turn."""


def engine_on(store: MemoryStore) -> FlowEngine:
    """The demo's engine: offline models, the search in process, the offline decisions."""
    return FlowEngine(
        [DecisionHotelFlow.in_process()],
        store=store,
        decision_providers=[decision_provider()],
    )


class DecisionHotelReplayer(Replayer):
    """Judges the session after a case's last turn, and that turn's reply."""

    flow = "DecisionHotelFlow"
    states = STATES
    config = WRITTEN_ON

    def __init__(self) -> None:
        super().__init__()
        self.saved_on_a_miss: list[Case] = []
        """Missed lines that saved a criterion anyway: a value the guest did not give."""

    def engine(self, store: MemoryStore) -> FlowEngine:
        return engine_on(store)

    async def judge(self, replay: Replay) -> Outcome:
        outcome = judge(replay.case, replay.before, replay.after, replay.last.reply)
        if not outcome.ok and _saved(replay.before) != _saved(replay.after):
            self.saved_on_a_miss.append(replay.case)
        return outcome


def _saved(doc: Doc | None) -> dict[str, dict[str, Any]]:
    """The collectors' saved values (their bookkeeping keys left out)."""
    return {
        step: {k: v for k, v in state_of(doc, step).items() if not k.startswith("_")}
        for step in COLLECTORS
    }


def state_of(doc: Doc | None, step: str) -> dict[str, Any]:
    """A step's saved state in a session document ({} when it has none)."""
    if doc is None:
        return {}
    return dict((doc.get("steps", {}).get(step) or {}).get("state") or {})


def booked_name(doc: Doc) -> str | None:
    """The name of the hotel booked, or None."""
    selected = state_of(doc, "PresentStep").get("selectedHotel")
    if isinstance(selected, dict):
        return selected.get("hotelName")
    return selected if isinstance(selected, str) else None


def value_of(raw: str) -> Any:
    """An expectation's VALUE: null, a number, a [list] (as a set) or a string."""
    raw = raw.strip()
    if raw == "null":
        return None
    if raw.startswith("[") and raw.endswith("]"):
        return {item.strip().strip("'\"") for item in raw[1:-1].split(",") if item.strip()}
    if re.fullmatch(r"-?\d+(?:\.\d+)?", raw):
        return float(raw)
    return raw.strip("'\"")


def same(saved: Any, wanted: Any) -> bool:
    """A saved value against an expectation's."""
    if isinstance(wanted, set):
        return isinstance(saved, list) and set(saved) == wanted
    if isinstance(wanted, float):
        ok = isinstance(saved, (int, float)) and not isinstance(saved, bool)
        return ok and float(saved) == wanted
    return saved == wanted


def judge(case: Case, before: Doc | None, after: Doc, reply: str) -> Outcome:
    """Whether every clause of the case's expectation holds."""
    booked, completed = booked_name(after), after.get("run_status") == "completed"
    problems = [
        f"{clause!r}"
        for clause in (c.strip() for c in case.expected.split(" & "))
        if not holds(clause, before, after, reply, case)
    ]
    seen = (
        f"step={after.get('current_step')} completed={completed} booked={booked!r} "
        f"collectors={ {s: state_of(after, s) for s in COLLECTORS if state_of(after, s)} } "
        f"reply={reply[:160]!r}"
    )
    detail = f"failed {', '.join(problems)}; {seen}" if problems else seen
    return Outcome(case, not problems, detail, booked is not None or completed)


def holds(clause: str, before: Doc | None, after: Doc, reply: str, case: Case) -> bool:
    """One clause of the vocabulary."""
    kind, _, rest = clause.partition(" ")
    booked, completed = booked_name(after) is not None, after.get("run_status") == "completed"
    idle = not booked and not completed
    if kind == "at":
        return idle and after.get("current_step") == rest.strip()
    if kind == "field":
        where, _, raw = rest.partition("=")
        step, _, key = where.strip().partition(".")
        saved = state_of(after, step)
        return idle and key in saved and same(saved[key], value_of(raw))
    if kind == "answer":
        return idle and rest.strip().lower() in reply.lower()
    if kind == "none":
        kept = all(state_of(before, s) == state_of(after, s) for s in COLLECTORS)
        was_there = (before or {}).get("current_step") == "PresentStep"
        newly = after.get("current_step") == "PresentStep" and not was_there
        return idle and kept and not newly
    if kind == "booked":
        return _booked(rest, after, reply)
    if kind == "end":
        return completed and not booked and ENDED in reply
    raise ValueError(f"Unknown expectation {clause!r} on line {case.line}")


def _booked(rest: str, after: Doc, reply: str) -> bool:
    present = state_of(after, "PresentStep")
    found = present.get("hotelFound") or []
    number = int(rest.strip().lstrip("#"))
    if not 1 <= number <= len(found) or after.get("run_status") != "completed":
        return False
    confirmation = present.get("confirmationNumber")
    six = isinstance(confirmation, int) and 100000 <= confirmation <= 999999
    return booked_name(after) == found[number - 1]["hotelName"] and six and BOOKED in reply


async def chat(engine: FlowEngine, *lines: str, config: dict[str, Any] | None = None) -> list[Turn]:
    """Say `lines` in one new session (first turn with `config`, default today fixed)."""
    turns: list[Turn] = []
    session = None
    for text in lines:
        first = (WRITTEN_ON if config is None else config) if session is None else None
        turn = await talk(engine, "DecisionHotelFlow", text, session, first)
        assert turn.result is not None
        session = turn.result.session_id
        turns.append(turn)
    return turns
