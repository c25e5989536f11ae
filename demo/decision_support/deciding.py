"""The offline decision model of DecisionSupportFlow: the intake's triage and the judge's review.

It answers what a decision model is sent (picoflow's `LangChainDecisionProvider`: the questions
and the state as JSON) by reading the words, never a table of known inputs. The intake reads
the latest request (earlier ones only when it names nothing of its own, its instructions say
so); the judge reads the draft against the evidence and the billing result it is given.
Answers are plain JSON in the structured-output shape: a choice's label with a probability per
label, a score with a probability per level, a yes/no probability.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from demo.decision_support.reading import INVOICE, TOPICS, Reading, follow_up, read

Answers = dict[str, dict[str, Any]]


def choice(label: str, labels: Sequence[str], confidence: float) -> dict[str, Any]:
    """A choice answer: `confidence` on `label`, the rest spread over the other labels."""
    rest = round((1.0 - confidence) / max(1, len(labels) - 1), 6)  # picoflow normalises the sum
    probabilities = [
        {"label": name, "probability": confidence if name == label else rest} for name in labels
    ]
    return {"choice": label, "confidence": confidence, "probabilities": probabilities}


def score(value: int, levels: int, confidence: float) -> dict[str, Any]:
    """A score answer on whole level `value`, most of the probability on it."""
    rest = round((1.0 - confidence) / max(1, levels - 1), 6)
    probabilities = [
        {"level": level, "probability": confidence if level == value else rest}
        for level in range(levels)
    ]
    return {"score": float(value), "confidence": confidence, "probabilities": probabilities}


def decide(questions: Mapping[str, Any], state: Mapping[str, Any]) -> Answers:
    """The answers to `questions` from `state`: the intake's, the judge's, or neutral ones."""
    keys = set(questions)
    if {"route", "complexity", "urgent"} <= keys:
        return triage(questions, state)
    if {"supported", "contradiction", "completeness", "clarity"} <= keys:
        return review(questions, state)
    return {key: _neutral(question) for key, question in questions.items()}


def _neutral(question: Mapping[str, Any]) -> dict[str, Any]:
    """An unsure answer to a question this model has no reading for."""
    if question["type"] == "noul":
        return {"noul": 0.5}
    if question["type"] == "score":
        return score(0, len(question["criteria"]), 0.4)
    labels = list(question["criteria"])
    return choice(labels[-1], labels, 0.4)


# -- the intake ---------------------------------------------------------------------------------


def triage(questions: Mapping[str, Any], state: Mapping[str, Any]) -> Answers:
    """Route, complexity and urgency of the latest request."""
    labels = list(questions["route"]["criteria"])
    earlier = [str(text) for text in state.get("prior_requests") or []]
    reading = follow_up(read(str(state.get("request") or "")), earlier)
    label, confidence = route_of(reading)
    levels = len(questions["complexity"]["criteria"])
    return {
        "route": choice(label, labels, confidence),
        "complexity": score(complexity_of(reading, label), levels, 0.85),
        "urgent": {"noul": urgency_of(reading)},
    }


def route_of(reading: Reading) -> tuple[str, float]:
    """The route and how sure of it; an unsure route goes to a clarifying question."""
    if reading.taken_back or not reading.text.strip():
        return "unclear", 0.8
    if reading.closing and not reading.has_a_request():
        return "complete", 0.92
    if reading.thanks:
        return "complete", 0.6  # "thanks": finished, or about to ask more? Ask.
    technical = reading.own_failure and (reading.topics or reading.anchored)
    documented = bool(reading.topics)
    if reading.billing:
        mixed = bool(reading.topics) and not reading.invoice and reading.own_failure
        return "billing", 0.6 if mixed else 0.9
    if technical:
        return "technical", 0.88
    if documented and _documentation(reading):
        return "documentation", 0.9
    if documented:
        return "technical", 0.8  # how webhooks or timeouts behave: a simple technical answer
    if reading.request_id and reading.earlier:
        return "technical", 0.8
    return "unclear", 0.8


def _documentation(reading: Reading) -> bool:
    """A how-to or location question about settings, API keys or reports."""
    return bool(set(reading.topics) & {"apiKey", "exports"}) or (
        reading.question and not reading.failure and "timeout" in reading.topics
    )


def complexity_of(reading: Reading, route: str) -> int:
    """0 a documented answer, 1 several facts combined, 2 a diagnosis."""
    if route == "technical" and reading.own_failure:
        return 2
    if len(reading.topics) > 1 or route == "technical":
        return 1
    return 0


def urgency_of(reading: Reading) -> float:
    """The probability that the request describes a blocked production operation right now."""
    if reading.production and reading.blocked and reading.own_failure:
        return 0.95
    if reading.urgent_words and reading.own_failure:
        return 0.7
    return 0.05


# -- the judge ----------------------------------------------------------------------------------

_DONE_ACTION = re.compile(
    r"\b(?:i|we)(?:'ve| have| just| already)*\s+(?:issued|processed|refunded|cancell?ed|changed"
    r"|updated|reset|granted|revoked|removed|deleted|credited|reversed|upgraded|downgraded"
    r"|escalated|requested|opened|filed|submitted|restored|fixed|re-?sent)\b"
    r"|\b(?:refund|cancellation|credit|reversal|review)\s+(?:has been|was|is being|will be|is)\s+"
    r"(?:issued|processed|approved|completed|requested|submitted|started|opened|done)\b"
    r"|\byour (?:subscription|access|account|plan|key)\s+(?:has been|was|is now)\s+"
    r"(?:cancell?ed|changed|updated|closed|restored|reset|upgraded|downgraded|rotated)\b"
    r"|\b(?:refunded|cancell?ed) (?:it|your \w+) for you\b",
    re.I,
)
_NEGATED = re.compile(r"\b(?:no|not|never|cannot|can'?t|won'?t|haven'?t|hasn'?t|nothing)\b", re.I)
_SECRET = re.compile(r"\b(?:sk|pk|rk)_(?:live|test)_\w+|\bsk-[A-Za-z0-9]{8,}|\bwhsec_\w+", re.I)
_QUANTITY = re.compile(r"(\d+(?:\.\d+)?)\s*(seconds?|secs?|minutes?|mins?|hours?|days?|USD|\$)")
_MENU = re.compile(r"(\w+)\s*>\s*(\w+)")
_ASKS_FOR_MORE = re.compile(
    r"\?|\bplease (?:send|tell|share|give|check|reply)|\b(?:send|tell) (?:me|us)\b", re.I
)
"""A draft that asks for the missing facts (a question, "please send the request ID")."""
_NEXT_STEP = re.compile(
    r"\?|\w+ > \w+|\b(?:go to|open|check|verify|send|reply|contact|create|use|try|retry"
    r"|compare|note|look|make sure|confirm|update|tell me|let me know|please|ask)\b",
    re.I,
)


def review(questions: Mapping[str, Any], state: Mapping[str, Any]) -> Answers:
    """The four judgements of a draft against the trusted evidence."""
    draft = str(state.get("draft") or "")
    trusted = _trusted_text(state)
    unsupported = _unsupported(draft, trusted, state)
    contradicted = _contradicted(draft, state)
    return {
        "supported": {"noul": 0.3 if unsupported else 0.95},
        "contradiction": {"noul": 0.9 if contradicted else 0.03},
        "completeness": score(_completeness(draft, state), 3, 0.9),
        "clarity": score(_clarity(draft), 3, 0.9),
    }


def _sentences(draft: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?])\s+|\n+", draft) if part.strip()]


def _trusted_text(state: Mapping[str, Any]) -> str:
    """Everything a draft may quote: the evidence, the billing result and the request itself."""
    said = [str(state.get("request") or ""), *map(str, state.get("prior_requests") or [])]
    evidence = json.dumps(state.get("evidence") or {}) + json.dumps(state.get("billing") or {})
    return " ".join([evidence, *said])


def _unsupported(draft: str, trusted: str, state: Mapping[str, Any]) -> bool:
    """Whether the draft states a number, a menu path or an invoice the evidence does not."""
    for number, _unit in _QUANTITY.findall(draft):
        if not re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", trusted):
            return True
    for first, second in _MENU.findall(draft):
        if f"{first.strip()} > {second.strip()}".lower() not in trusted.lower():
            return True
    return any(found.upper() not in trusted.upper() for found in INVOICE.findall(draft))


def _contradicted(draft: str, state: Mapping[str, Any]) -> bool:
    """An unperformed action claimed, a secret revealed, or the billing record contradicted."""
    for sentence in _sentences(draft):
        claimed = _DONE_ACTION.search(sentence)
        if claimed and not _NEGATED.search(sentence[: claimed.end()]):
            return True
    if _SECRET.search(draft):
        return True
    invoice = (state.get("billing") or {}).get("invoice")
    if isinstance(invoice, Mapping):
        says_duplicate = re.search(r"\bduplicate\b", draft, re.I) is not None
        denies = re.search(r"\bno duplicate|\bnot (?:a |recorded as a )?duplicate", draft, re.I)
        if invoice.get("duplicate") and denies:
            return True
        if not invoice.get("duplicate") and says_duplicate and not denies:
            return True
    return False


def _completeness(draft: str, state: Mapping[str, Any]) -> int:
    """2 answers the request or asks for what is missing, 1 part of it, 0 nothing."""
    if not draft.strip():
        return 0
    earlier = [str(text) for text in state.get("prior_requests") or []]
    reading = follow_up(read(str(state.get("request") or "")), earlier)
    if _ASKS_FOR_MORE.search(draft):
        return 2
    asked = list(reading.topics)
    covered = [topic for topic in asked if TOPICS[topic].search(draft)]
    if reading.billing and re.search(r"\binvoice|\bINV-|\brefund|\bbilling", draft, re.I):
        covered.append("billing")
        asked.append("billing")
    if not asked:
        return 1
    if len(set(covered)) == len(set(asked)):
        return 2
    return 1 if covered else 0


def _clarity(draft: str) -> int:
    """2 a clear answer with a next step, 1 understandable, 0 confusing."""
    if not draft.strip() or len(draft) > 2500:
        return 0
    return 2 if _NEXT_STEP.search(draft) else 1
