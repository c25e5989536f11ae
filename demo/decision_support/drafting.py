"""The offline drafting model of DecisionSupportFlow: answers written from the prompt's evidence.

It reads what a drafting step sends, as an LLM does: the mode (clarify, quick answer,
technical specialist, billing answer, revision), the request and the earlier ones, the
evidence and the billing policy result, all from the system prompt's JSON. It says only what
the evidence says, marks a hypothesis as one, asks for what is missing, and never claims an
action: nothing is refunded, cancelled or changed in this chat.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from demo.decision_support.reading import INVOICE, Reading, follow_up, read

_LINE = re.compile(r"^(Request|Evidence|Billing policy result|Review feedback): (.*)$", re.M)
_MODE = re.compile(r"^Mode: ([a-z ]+)\.", re.M)
_FEATURES = "API keys, the API client and its timeouts, webhooks, CSV exports or an invoice"


@dataclass(frozen=True)
class Brief:
    """What a drafting prompt says: the mode and its four JSON parts."""

    mode: str
    request: str
    earlier: list[str]
    evidence: dict[str, Any]
    billing: dict[str, Any]
    feedback: dict[str, Any]

    @property
    def reading(self) -> Reading:
        """The latest request, read with the earlier ones for a follow-up."""
        return follow_up(read(self.request), self.earlier)

    def doc(self, topic: str) -> str:
        """The evidence's documentation sentence(s) for `topic` ("" if there are none)."""
        return str((self.evidence.get("docs") or {}).get(topic) or "")


def brief_of(prompt: str) -> Brief:
    """The brief in a drafting step's system prompt (missing parts empty)."""
    parts: dict[str, Any] = {}
    for name, value in _LINE.findall(prompt):
        try:
            parts[name] = json.loads(value)
        except ValueError:
            parts[name] = {}
    mode = _MODE.search(prompt)
    asked = parts.get("Request") or {}
    return Brief(
        mode=mode.group(1) if mode else "quick answer",
        request=str(asked.get("request") or ""),
        earlier=[str(text) for text in asked.get("priorRequests") or []],
        evidence=parts.get("Evidence") or {},
        billing=parts.get("Billing policy result") or {},
        feedback=parts.get("Review feedback") or {},
    )


def draft(prompt: str) -> str:
    """The draft answer the prompt asks for."""
    brief = brief_of(prompt)
    mode = brief.mode
    if mode == "revision":
        mode = _mode_of_source(str(brief.feedback.get("source") or ""))
    if mode == "clarify":
        return clarify(brief)
    if mode == "billing answer":
        return billing_answer(brief)
    if mode == "technical specialist":
        return specialist(brief)
    return quick(brief)


def _mode_of_source(source: str) -> str:
    """A revision answers as the step that drafted the rejected answer would, done right."""
    return {
        "ClarifyStep": "clarify",
        "BillingAnswerStep": "billing answer",
        "TechnicalSpecialistStep": "technical specialist",
    }.get(source, "quick answer")


# -- clarify ------------------------------------------------------------------------------------


def clarify(brief: Brief) -> str:
    """One concise question: which feature or invoice, and what was observed."""
    reading = brief.reading
    if reading.thanks or reading.closing:
        return "Glad to help. Is there anything else about Northstar Cloud I can help you with?"
    if reading.taken_back:
        return (
            "No problem, nothing has been changed. Which feature or invoice would you like help "
            "with, and what did you notice?"
        )
    if reading.billing:
        return (
            "Which invoice is this about (its number starts with INV-), and what looks wrong "
            "with it?"
        )
    if reading.failure:
        return (
            f"Which Northstar Cloud feature shows the problem ({_FEATURES}), and what exactly do "
            "you see, for example the error message?"
        )
    return (
        f"I can help with Northstar Cloud {_FEATURES}. Which of these is your question about, "
        "and what did you observe?"
    )


# -- quick answers ------------------------------------------------------------------------------


def quick(brief: Brief) -> str:
    """A concise answer documented in the evidence, one sentence group per topic asked."""
    reading = brief.reading
    said = [brief.doc(topic) for topic in reading.topics if brief.doc(topic)]
    if not said:
        return clarify(brief)
    if "timeout" in reading.topics and not reading.own_failure and len(said) == 1:
        said.append("If a call times out, note its request ID before you retry.")
    return " ".join(said)


# -- the specialist -----------------------------------------------------------------------------

_HYPOTHESES = {
    "webhook": (
        "the signing secret your receiving server checks does not match this webhook's",
        "the receiving server rejects the deliveries or does not verify their signatures",
    ),
    "timeout": (
        "the operation takes longer than the client's 30-second default, or the service is "
        "degraded",
        "the operation takes longer than the client's default timeout",
    ),
    "apiKey": (
        "the key in use is not a valid key of your workspace",
        "the key in use is not a valid key of your workspace",
    ),
    "exports": (
        "the account exporting is not a workspace admin, if the export holds billing data",
        "the account exporting is not a workspace admin, if the export holds billing data",
    ),
}
_STEPS = {
    "webhook": [
        "Compare the signing secret configured on your receiving server with the webhook's "
        "signing secret in Northstar Cloud.",
        "Verify signatures on the receiving server, and check its logs for the 401 responses.",
        "Deliveries are retried for 24 hours, so a delivery that failed recently is retried "
        "once the server accepts it.",
    ],
    "timeout": [
        "Note the request ID of a call that timed out.",
        "Check the service status before retrying.",
        "Retry only idempotent operations; for any other call, first check whether it completed.",
    ],
    "apiKey": [
        "Open Settings > API keys and check that the key you use is listed there.",
        "If it is not, create a new key there and use it in your client.",
        "Never paste a secret key in chat.",
    ],
    "exports": [
        "Open Reports > Export.",
        "If the export holds billing data, ask a workspace admin to run it.",
    ],
}


def specialist(brief: Brief) -> str:
    """A diagnosis: documented facts, hypotheses marked as such, ordered steps, what to send."""
    reading = brief.reading
    topics = [topic for topic in reading.topics if brief.doc(topic)]
    ask = "Please send the request ID of a failing call and the exact error message you see"
    if not topics:
        return (
            "The documentation I have does not cover this problem, so I cannot diagnose it yet "
            f"and will not guess. {ask}, and tell me which feature you were using ({_FEATURES})."
        )
    facts = " ".join(brief.doc(topic) for topic in topics)
    lines = [f"What the documentation says: {facts}"]
    for topic in topics:
        specific, general = _HYPOTHESES[topic]
        known = "401" in reading.text or topic != "webhook"
        lines.append(
            f"Possible cause (a hypothesis, not confirmed): {specific if known else general}."
        )
    steps = [step for topic in topics for step in _STEPS[topic]]
    lines.append("Steps, in order:")
    lines.extend(f"{number}. {step}" for number, step in enumerate(steps, 1))
    lines.append(f"{ask}, so the cause can be confirmed.")
    return "\n".join(lines)


# -- billing ------------------------------------------------------------------------------------


def billing_answer(brief: Brief) -> str:
    """The billing policy result explained, and nothing more."""
    result, reading = brief.billing, brief.reading
    invoice_id, invoice = result.get("invoiceId"), result.get("invoice")
    outcome = result.get("outcome")
    limits = _limits(reading)
    if outcome == "human_review_required" and isinstance(invoice, dict):
        return limits + (
            f"Invoice {invoice_id} ({_amount(invoice)}, {invoice.get('status')}) is recorded as "
            "a duplicate charge, so it needs a human review. No refund has been issued and no "
            "account changes have been made. To have it reviewed, contact Northstar support "
            f"with the invoice number {invoice_id}."
        )
    if outcome == "no_duplicate_recorded" and isinstance(invoice, dict):
        return limits + (
            f"Invoice {invoice_id} is {_amount(invoice)} and {invoice.get('status')}. No "
            "duplicate charge is recorded for it. If you see a second charge on your "
            "statement, please send its date and amount, or the other invoice number."
        )
    if invoice_id:
        return limits + (
            f"I could not find invoice {invoice_id}. Please check the number on the invoice and "
            "send it again (it starts with INV-)."
        )
    named = [found.upper() for text in brief.earlier for found in INVOICE.findall(text)]
    if named:  # the policy reads the latest request only: say so, not "which invoice?"
        return limits + (
            "I check the invoice named in your latest message only. Please send its number "
            f"again in your next message (earlier you mentioned {named[-1]})."
        )
    return limits + "Which invoice is this about? Please send its number (it starts with INV-)."


def _limits(reading: Reading) -> str:
    """What this chat cannot do, said first when the customer asks for it."""
    wants = re.search(r"\brefund|\bmoney back|\bcancel|\bcredit\b", reading.text, re.I)
    if wants is None:
        return ""
    return (
        "I can't issue refunds or cancel subscriptions in this chat; I can explain an invoice "
        "and whether it needs a human review. "
    )


def _amount(invoice: dict[str, Any]) -> str:
    return f"{invoice.get('amount')} {invoice.get('currency')}"
