"""DecisionSupportFlow's adapter to the corpus kit (``support.corpus_kit``), for
``decision_support_*38.txt``.

Each section names a session state, reached by a short conversation (``STATES``, as the
held-out file's header defines them) and copied for every case. A case is ``category | turns |
expectation``; the expectation's clauses are joined by `` & `` and must all hold after the last
turn, judged on the stored session and the last reply, in the held-out file's vocabulary:

* ``route R`` — IntakeDecisionStep's saved ``route`` is R; not completed; the cursor is at
  IntakeDecisionStep;
* ``billing OUTCOME ID`` — IntakeDecisionStep's ``route`` is ``billing``; BillingPolicyStep's
  state has ``outcome`` OUTCOME, ``invoiceId`` ID (``null``: no id) and ``refundIssued`` false;
  not completed;
* ``answer TEXT`` — not completed; the cursor is at IntakeDecisionStep; the last reply contains
  TEXT (any case);
* ``none`` — not completed; the cursor is at IntakeDecisionStep;
* ``end`` — completed; the last reply contains the intake's closing text.

Completing the session is the one action a line can take (D5: only an explicit "I'm finished"
may end it), so ``acted`` is a completed session and ``end`` the only choice.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.corpus_kit import Case, Outcome, Replay, Replayer

from demo.decision_support.data import COMPLETED
from demo.decision_support.flow import DecisionSupportFlow
from demo.decision_support.offline import decision_provider
from picoflow import FlowEngine
from picoflow.stores import MemoryStore

HERE = Path(__file__).parent
HELDOUT = HERE / "decision_support_heldout38.txt"
TUNING = HERE / "decision_support_tuning38.txt"
WRITTEN_ON = {"today": "2026-12-07"}
"""The day both sets were written; no date matters in this flow, the harness fixes it anyway."""

CHOICES = ("end",)
"""The effect that may complete a session: an explicit end of the conversation."""

STATES: dict[str, list[str]] = {
    "new": [],
    "answered": ["where do I create an API key?"],
    "billing": ["I think I was charged twice on INV-200"],
    "technical": ["our webhooks fail with 401 in production"],  # the tuning set's own
}
"""How each state of the corpus is reached (the held-out file's header; "technical" is the
tuning set's)."""


class DecisionSupportReplayer(Replayer):
    """Judges the session after a case's last turn, and that turn's reply."""

    flow = "DecisionSupportFlow"
    states = STATES
    config = WRITTEN_ON

    def engine(self, store: MemoryStore) -> FlowEngine:
        return FlowEngine(
            [DecisionSupportFlow], store=store, decision_providers=[decision_provider()]
        )

    async def judge(self, replay: Replay) -> Outcome:
        return judge(replay.case, replay.after, replay.last.reply)


def _state(doc: dict[str, Any], step: str) -> dict[str, Any]:
    found = doc["steps"].get(step, {}).get("state", {})
    return found if isinstance(found, dict) else {}


def clause_holds(clause: str, doc: dict[str, Any], reply: str) -> bool:
    """Whether one clause of an expectation holds on the session `doc` and the last `reply`."""
    kind, _, rest = clause.strip().partition(" ")
    completed = doc.get("run_status") == "completed"
    parked = doc.get("current_step") == "IntakeDecisionStep"
    route = _state(doc, "IntakeDecisionStep").get("route")
    if kind == "route":
        return route == rest.strip() and not completed and parked
    if kind == "billing":
        outcome, _, invoice = rest.strip().partition(" ")
        wanted = None if invoice.strip() == "null" else invoice.strip()
        billing = _state(doc, "BillingPolicyStep")
        return (
            route == "billing"
            and billing.get("outcome") == outcome
            and billing.get("invoiceId") == wanted
            and billing.get("refundIssued") is False
            and not completed
        )
    if kind == "answer":
        return not completed and parked and rest.strip().lower() in reply.lower()
    if kind == "none":
        return not completed and parked
    if kind == "end":
        return completed and COMPLETED in reply
    raise ValueError(f"Unknown expectation {kind!r} in {clause!r}")


def judge(case: Case, doc: dict[str, Any], reply: str) -> Outcome:
    """Whether the conversation had the expected effect (every clause)."""
    clauses = case.expected.split(" & ")
    ok = all(clause_holds(clause, doc, reply) for clause in clauses)
    intake = _state(doc, "IntakeDecisionStep")
    billing = _state(doc, "BillingPolicyStep")
    seen = (
        f"route={intake.get('route')} outcome={billing.get('outcome')} "
        f"invoiceId={billing.get('invoiceId')} step={doc.get('current_step')} "
        f"status={doc.get('run_status')} reply={reply!r}"
    )
    return Outcome(case, ok, seen, doc.get("run_status") == "completed")
