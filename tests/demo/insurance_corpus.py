"""HomeInsuranceQuoteFlow's adapter to the corpus kit (``support.corpus_kit``) for
``insurance_*38.txt``.

The states and the expectation vocabulary are the ones ``insurance_heldout38.txt``'s header
defines, implemented as written there (clauses joined by `` & `` must all hold after the last
turn):

* ``at STEP`` — the cursor is in STEP; not completed.
* ``field STEP.PATH=VALUE`` — STEP's saved state has PATH equal to VALUE (JSON scalars; a list
  ``[a,b]`` is compared as a set); not completed.
* ``referral CODES`` — the cursor is in ReferralStep, its ``reasonCodes`` equal CODES (in
  order), no eligible quote; not completed.
* ``selected ID`` — PresentQuoteStep's ``selectedOption`` is ID (or an option whose id is ID),
  the cursor is in ContactStep; not completed.
* ``answer TEXT`` — not completed; the last reply contains TEXT (any case).
* ``none`` — the cursor is still in the state's step; no application section, confirmation,
  quote, selection or contact was added or changed; not completed.
* ``end`` — completed, and no follow-up retained (no contact, or consent false and every
  contact field null).
* ``consent EMAIL`` — completed; consent true with that email.

A case "acted" when it confirmed the application (``confirmedAt`` new), selected an option,
recorded a contact, or completed the session: what the header allows only on an explicit
confirmation, option, yes with details, or stop. `CHOICES` are the expectations that may act.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydash
from support.corpus_kit import Case, Doc, Outcome, Replay, Replayer

from demo.insurance.flow import HomeInsuranceQuoteFlow
from demo.insurance.offline import offline_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "insurance_heldout38.txt"
TUNING = HERE / "insurance_tuning38.txt"
WRITTEN_ON = {"today": "2026-12-07"}

CHOICES = ("at", "referral", "selected", "consent", "end")
"""The expectations under which a case may confirm, select, record a contact or end."""

_PROPERTY = ["Oregon, ZIP 97201", "we own it, it's our primary residence, start 2027-01-01"]
_RISK = [
    *_PROPERTY,
    "single family, built in 1995",
    "2000 square feet, 2 stories, wood frame",
    "composition roof, 8 years old",
    "plumbing, electrical and HVAC have never been updated",
]
_COVERAGE = [
    *_RISK,
    "no claims in the last five years",
    "no pool, no trampoline, no wood stove",
    "smoke alarms yes, no burglar alarm, no monitoring, no sprinklers",
]
_REVIEW = [
    *_COVERAGE,
    "$400,000 rebuild cost, $1,000 deductible, $300,000 liability, no endorsements",
]
_QUOTE = [*_REVIEW, "yes, everything is correct"]
STATES: dict[str, list[str]] = {
    "new": [],
    "property": _PROPERTY,
    "risk": _RISK,
    "coverage": _COVERAGE,
    "review": _REVIEW,
    "quote": _QUOTE,
    "contact": [*_QUOTE, "I'll select ENHANCED"],
}
"""How each state of the corpus is reached (the header's turn lists)."""

STEPS = {
    "new": "QualificationStep",
    "property": "PropertyStep",
    "risk": "RiskStep",
    "coverage": "CoverageStep",
    "review": "ReviewStep",
    "quote": "PresentQuoteStep",
    "contact": "ContactStep",
}
"""Where each state leaves the cursor, as the header says."""

WATCHED = [
    ("QualificationStep", "qualification"),
    ("PropertyStep", "property"),
    ("RiskStep", "risk"),
    ("CoverageStep", "coverage"),
    ("ReviewStep", "confirmedAt"),
    ("RateQuoteStep", "quoteResult"),
    ("PresentQuoteStep", "selectedOption"),
    ("ContactStep", "contact"),
]
"""The saved values `none` requires unchanged."""


class InsuranceReplayer(Replayer):
    """Judges the session after a case's last turn, and that turn's reply."""

    flow = "HomeInsuranceQuoteFlow"
    states = STATES
    config = WRITTEN_ON

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine(
            [HomeInsuranceQuoteFlow], store=store, providers={"offline": offline_provider}
        )

    async def judge(self, replay: Replay) -> Outcome:
        return judge(replay.case, replay.before, replay.after, replay.last.reply)


def state_of(doc: Doc | None, step: str, path: str | None = None) -> Any:
    """A step's saved state (a dotted path in it), or None."""
    if doc is None:
        return None
    state = doc["steps"].get(step, {}).get("state", {})
    return state if path is None else pydash.get(state, path)


def acted(before: Doc | None, after: Doc) -> bool:
    """Confirmed, selected, recorded a contact or completed in the case."""
    changed = any(
        state_of(before, step, key) != state_of(after, step, key)
        and state_of(after, step, key) is not None
        for step, key in (
            ("ReviewStep", "confirmedAt"),
            ("PresentQuoteStep", "selectedOption"),
            ("ContactStep", "contact"),
        )
    )
    return changed or after.get("run_status") == "completed"


def parse_value(text: str) -> Any:
    """A clause's VALUE: JSON, a ``[a,b]`` list of such values, or the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    if text.startswith("[") and text.endswith("]"):
        return [parse_value(item.strip()) for item in text[1:-1].split(",") if item.strip()]
    return text


def _same(found: Any, wanted: Any) -> bool:
    if isinstance(wanted, list):
        if not isinstance(found, list):
            return False
        return {json.dumps(v, sort_keys=True) for v in found} == {
            json.dumps(v, sort_keys=True) for v in wanted
        }
    if isinstance(wanted, bool) or isinstance(found, bool):
        return found is wanted
    if isinstance(wanted, (int, float)) and isinstance(found, (int, float)):
        return float(found) == float(wanted)
    if isinstance(found, str) != isinstance(wanted, str):  # "zip=97201": the text is the value
        return str(found) == str(wanted)
    return bool(found == wanted)


def _holds(clause: str, case: Case, before: Doc | None, after: Doc, reply: str) -> bool:
    kind, _, rest = clause.strip().partition(" ")
    rest = rest.strip()
    completed = after.get("run_status") == "completed"
    cursor = after.get("current_step")
    if kind == "at":
        return cursor == rest and not completed
    if kind == "field":
        dotted, _, value = rest.partition("=")
        step, _, path = dotted.strip().partition(".")
        return _same(state_of(after, step, path), parse_value(value.strip())) and not completed
    if kind == "referral":
        codes = [code.strip() for code in rest.split(",") if code.strip()]
        quote = state_of(after, "RateQuoteStep", "quoteResult")
        eligible = isinstance(quote, dict) and quote.get("decision") == "eligible"
        found = state_of(after, "ReferralStep", "reasonCodes")
        return cursor == "ReferralStep" and found == codes and not eligible and not completed
    if kind == "selected":
        chosen = state_of(after, "PresentQuoteStep", "selectedOption")
        chosen_id = chosen.get("id") if isinstance(chosen, dict) else chosen
        return chosen_id == rest and cursor == "ContactStep" and not completed
    if kind == "answer":
        return not completed and rest.lower() in reply.lower()
    if kind == "none":
        unchanged = all(
            state_of(before, step, key) == state_of(after, step, key) for step, key in WATCHED
        )
        return cursor == STEPS[case.state] and unchanged and not completed
    if kind == "end":
        contact = state_of(after, "ContactStep", "contact")
        kept = isinstance(contact, dict) and (
            contact.get("consentToContact")
            or any(
                contact.get(k) is not None for k in ("name", "email", "phone", "propertyAddress")
            )
        )
        return completed and not kept
    if kind == "consent":
        contact = state_of(after, "ContactStep", "contact") or {}
        return (
            completed and contact.get("consentToContact") is True and contact.get("email") == rest
        )
    raise ValueError(f"Unknown expectation {kind!r} on line {case.line}")


def judge(case: Case, before: Doc | None, after: Doc, reply: str) -> Outcome:
    """Whether every clause of the case's expectation holds after its last turn."""
    ok = all(_holds(clause, case, before, after, reply) for clause in case.expected.split(" & "))
    watched = {f"{step}.{key}": state_of(after, step, key) for step, key in WATCHED[:4]}
    seen = (
        f"at={after.get('current_step')} status={after.get('run_status')} "
        f"reasons={state_of(after, 'ReferralStep', 'reasonCodes')} "
        f"selected={(state_of(after, 'PresentQuoteStep', 'selectedOption') or {}).get('id')} "
        f"contact={state_of(after, 'ContactStep', 'contact')} {watched} reply={reply[:300]!r}"
    )
    return Outcome(case, ok, seen, acted(before, after))
