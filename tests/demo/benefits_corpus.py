"""EmployeeBenefitsFlow's adapter to the corpus kit (``support.corpus_kit``), ``benefits_*38.txt``.

The vocabulary is the one ``benefits_heldout38.txt``'s header defines (its author wrote it from
the research doc, before the demo existed); the judge implements it clause by clause and reads
nothing into it. An expectation is clauses joined by `` & ``, all of which must hold after the
last turn:

* ``at STEP`` — the cursor is in STEP; not completed; no ``CommitEnrollmentStep.enrollmentRecord``;
* ``field STEP.PATH=VALUE`` — STEP's state has PATH equal to VALUE (read as JSON when it is
  JSON: ``2027``, ``true``, ``null``; else the text); not completed;
* ``plan ID`` — ``MedicalPlanStep.selectedPlan`` is ID (or a plan object whose ID is ID); not
  completed;
* ``ineligible CODE`` — ``EligibilityStep.decision.eligible`` is false and its reason codes
  contain CODE; the cursor is in IneligibleBenefitsStep; nothing enrolled; not completed;
* ``enrolled STATUS`` — completed, the cursor in TerminateSessionStep, and the record's status
  is STATUS;
* ``answer TEXT`` — not completed; nothing enrolled; the last reply contains TEXT (any case, as
  the medical corpus reads it);
* ``none`` — the cursor is still in the state's step; no new or changed ``selectedPlan``,
  ``election``, ``household``, ``preferences``, ``confirmedAt`` or ``enrollmentRecord``; not
  completed;
* ``end`` — completed (the cursor in TerminateSessionStep) with no enrollment record.

"Today" is 2026-12-07 for every line (the header's date), fixed as the sessions'
``config.today``. A case *acted* when it completed the session or saved any of the watched
values (the eligibility request included); only the kinds in `CHOICES` may act.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pydash
from support.corpus_kit import Case, Doc, Outcome, Replay, Replayer

from demo.benefits.flow import EmployeeBenefitsFlow
from demo.benefits.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "benefits_heldout38.txt"
TUNING = HERE / "benefits_tuning38.txt"
TODAY = {"today": "2026-12-07"}

_MARRIED = "E-1042, plan year 2027, qualifying life event: I got married on 2026-11-28"
_ALONE = "just me, employee only"
_CARE = (
    "preventive care only, no prescriptions, in-network only is fine, my priority is the lowest "
    "payroll cost"
)
STATES: dict[str, list[str]] = {
    "new": [],
    "household": [_MARRIED],
    "preferences": [_MARRIED, _ALONE],
    "plans": [_MARRIED, _ALONE, _CARE],
    "account": [_MARRIED, _ALONE, _CARE, "I'll take HDHP_HSA"],
    "review": [
        _MARRIED,
        _ALONE,
        _CARE,
        "I'll take HDHP_HSA",
        "HSA, $1000 a year",
        "basic dental, waive vision, no supplemental life, no short-term or long-term disability",
        "waive dependent care with $0",
    ],
}
"""How each state of the held-out header is reached, turn for turn."""

CHOICES = ("at", "field", "plan", "ineligible", "enrolled", "end")
"""The expectations that allow a commitment (a capture, a selection, a submission, an end)."""

WATCHED = (
    "request",
    "decision",
    "household",
    "preferences",
    "selectedPlan",
    "election",
    "confirmedAt",
    "enrollmentRecord",
)
"""The saved values a commitment writes; the header's `none` names all but the first two."""
NONE_KEYS = WATCHED[2:]


class BenefitsReplayer(Replayer):
    """Judges the session after a case's last turn, and that turn's reply."""

    flow = "EmployeeBenefitsFlow"
    states = STATES
    config = TODAY

    def __init__(self) -> None:
        super().__init__()
        self._shared: tuple[MemoryStore, FlowEngine] | None = None
        self._cases = 0

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine(
            [EmployeeBenefitsFlow], store=store, providers={"offline": offline_provider}
        )

    async def stage(self, state: str) -> tuple[MemoryStore, FlowEngine, Doc | None, Any]:
        """One store and engine for every case, each case on its own copy of the state's session
        (a session id of its own): as isolated as a fresh store per case (nothing but the
        session is read or written), without building an engine a hundred times."""
        if self._shared is None:
            store = MemoryStore()
            self._shared = (store, self.engine(store))
        store, engine = self._shared
        before = await self.snapshot(state)
        if before is not None:
            self._cases += 1
            before["id"] = f"{before['id'][:40]}-case{self._cases:04d}"
            await store.create(copy.deepcopy(before))
        return store, engine, before, None

    async def judge(self, replay: Replay) -> Outcome:
        return judge(replay.case, replay.before, replay.after, replay.last.reply)


def state_of(doc: Doc | None, step: str) -> dict[str, Any]:
    """A step's saved state in `doc` ({} when there is none)."""
    if doc is None:
        return {}
    return dict(doc["steps"].get(step, {}).get("state") or {})


def saved(doc: Doc | None, keys: tuple[str, ...]) -> dict[tuple[str, str], Any]:
    """Every watched value of `doc`, by step and key."""
    found: dict[tuple[str, str], Any] = {}
    for step in (doc or {}).get("steps", {}):
        state = state_of(doc, step)
        for key in keys:
            if key in state:
                found[(step, key)] = state[key]
    return found


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _clause(clause: str, before: Doc | None, after: Doc, reply: str) -> bool:
    kind, _, rest = clause.strip().partition(" ")
    rest = rest.strip()
    completed = after.get("run_status") == "completed"
    record = state_of(after, "CommitEnrollmentStep").get("enrollmentRecord")
    cursor = after.get("current_step")
    if kind == "at":
        return cursor == rest and not completed and record is None
    if kind == "field":
        path, _, value = rest.partition("=")
        step, _, key = path.strip().partition(".")
        return pydash.get(state_of(after, step), key) == _value(value.strip()) and not completed
    if kind == "plan":
        chosen = state_of(after, "MedicalPlanStep").get("selectedPlan")
        plan_id = chosen.get("planId", chosen.get("id")) if isinstance(chosen, dict) else chosen
        return plan_id == rest and not completed
    if kind == "ineligible":
        decision = state_of(after, "EligibilityStep").get("decision") or {}
        codes = decision.get("reasonCodes") or []
        right = decision.get("eligible") is False and rest in codes
        return right and cursor == "IneligibleBenefitsStep" and record is None and not completed
    if kind == "enrolled":
        status = (record or {}).get("status")
        return completed and cursor == "TerminateSessionStep" and status == rest
    if kind == "answer":
        return not completed and record is None and rest.lower() in reply.lower()
    if kind == "none":
        home = before["current_step"] if before is not None else "EligibilityStep"
        unchanged = saved(before, NONE_KEYS) == saved(after, NONE_KEYS)
        return cursor == home and unchanged and not completed
    if kind == "end":
        return completed and cursor == "TerminateSessionStep" and record is None
    raise ValueError(f"Unknown expectation {kind!r}")


def judge(case: Case, before: Doc | None, after: Doc, reply: str) -> Outcome:
    """Whether every clause of the expectation holds after the case's last turn."""
    clauses = [clause for clause in case.expected.split(" & ") if clause.strip()]
    ok = all(_clause(clause, before, after, reply) for clause in clauses)
    acted = after.get("run_status") == "completed" or saved(before, WATCHED) != saved(
        after, WATCHED
    )
    earlier, now = saved(before, WATCHED), saved(after, WATCHED)
    changed = sorted(key for key, value in now.items() if earlier.get(key) != value)
    seen = (
        f"step={after.get('current_step')} status={after.get('run_status')} changed={changed} "
        f"reply={reply[:160]!r}"
    )
    return Outcome(case, ok, seen, acted)
