"""ReferralStep's offline model: the recorded reason codes, named plainly, then acknowledged.

It explains only the codes in REASON_CODES (never a premium, never a "decline") and calls
`finish_home_quote_referral` once the customer acknowledges, or wants to stop.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import faq, words
from demo.insurance.offline.transcript import events, facts
from demo.reading import corrections
from picoflow.testing import tool_call

REASONS = {
    "UNSUPPORTED_STATE": "the property is in a state this demo does not quote",
    "HIGH_DWELLING_LIMIT": "the dwelling amount is above what the automated rules quote",
    "ROOF_AGE_REVIEW": "the roof's age needs an agent's review",
    "HISTORIC_HOME_REVIEW": "the home's age needs an agent's review",
    "CLAIMS_FREQUENCY_REVIEW": "the number of recent claims needs an agent's review",
    "LARGE_CLAIM_REVIEW": "a large recent claim needs an agent's review",
}
ASK = "Could you acknowledge that you've read this?"
_ACK = re.compile(
    r"\b(?:ok(?:ay)?|understood|understand|got\s+it|i\s+see|fine|sure|yes|yeah|yep|makes\s+sense|"
    r"acknowledged?|noted|thanks?|thank\s+you|alright|all\s+right|fair\s+enough|i\s+get\s+it)\b",
    re.IGNORECASE,
)


def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
    """The referral model's reply."""
    known = facts(str(messages[0].text))
    history = events(messages)
    last = history[-1] if history else None
    if last is None or last.kind != "human":
        return explain(known)
    said = corrections.settle(last.text)
    if words.has_sensitive(said):
        return f"{words.SENSITIVE_REPLY} {ASK}"
    if corrections.withdrawn(last.text):
        return f"Take your time. {ASK}"
    if words.is_question(said):
        return f"{_answer(said, known)} {ASK}"
    if _ACK.search(said) or words.is_yes(said):
        return tool_call("finish_home_quote_referral", acknowledged=True)
    if words.wants_to_stop(said):
        return tool_call("finish_home_quote_referral", acknowledged=False)
    return f"I understand. {_codes(known)} {ASK}"


def _codes(known: dict[str, Any]) -> str:
    codes = [str(code) for code in known.get("REASON_CODES") or []]
    listed = "; ".join(f"{code}: {REASONS.get(code, 'it needs an agent review')}" for code in codes)
    return f"The recorded reasons are {listed}." if codes else "No reason code was recorded."


def explain(known: dict[str, Any]) -> str:
    """Why this demo cannot quote the application, from the recorded codes only."""
    return (
        "I'm sorry: this demo can't give an automated quote for this application. "
        f"{_codes(known)} This is not a decline: an agent would need to review the application "
        f"before any quote could be offered. {ASK}"
    )


def _answer(text: str, known: dict[str, Any]) -> str:
    lowered = text.lower()
    if re.search(r"\b(?:why|reason|mean|what)\b", lowered):
        return _codes(known)
    if re.search(r"\b(?:price|premium|cost|how much|estimate)\b", lowered):
        return "I can't give a premium for an application that needs an agent's review."
    return faq.common_answer(text, known) or "An agent would need to review the application."
