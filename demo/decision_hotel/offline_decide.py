"""The offline decision model ``offline:decision_hotel-decide``: answers from the request alone.

picoflow sends a decision step's questions and state to a chat model through structured
output (one ``DecisionAnswers`` tool call; `picoflow.decisions.LangChainDecisionProvider`).
This model reads that JSON as an LLM would — the question keys tell the router from the two
judges — and decides from the facts and the guest's requests only:

* the router compares what the request says with the saved criteria: a value not yet
  reflected goes to its owner with the request (``apply_request``), nothing new goes to the
  first unresolved criterion (``prompt_next``), and search, review and exit only when asked;
* the readiness judge replays the requests it is given, oldest first, and names a criterion
  only when the latest explicit value contradicts the saved one (a lone "200" answering a
  question is no evidence: missing evidence is not a contradiction);
* the presentation judge checks every numbered line of the draft against ``hotelFound``.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.decision_hotel.conversation import stated_date
from demo.decision_hotel.criteria import usd
from demo.decision_hotel.decide_evidence import changed, partly_new, replay_contradictions
from demo.decision_hotel.reading import (
    is_small_talk,
    off_topic,
    read,
    wants_exit,
    wants_review,
    wants_search,
)
from picoflow.testing import tool_call

CONFIDENT = 0.9
_LINE = re.compile(r"^\s*(\d+)[.)]\s+(.+?)\s+[—–-]+\s+total\s+(\$[\d,]+\.\d{2})\s*$", re.M)
_AMOUNT = re.compile(r"\$[\d,]+(?:\.\d{2})?")
_VAGUE_CHANGE = re.compile(
    r"^\W*(?:can (?:i|we|you)\s+)?(?:change|update|revise|modify|edit|fix|redo)\s+"
    r"(?:it|that|this|something"
    r"|some(?:thing)? (?:of|in) (?:it|them|that))?\W*$",
    re.IGNORECASE,
)
"""A wish to change something that names nothing: which criterion is ambiguous."""
_CLAIMS = re.compile(
    r"\b(?:is|are|has been|have been|now)\s+booked\b|\bconfirmation\b|\breserved\b"
    r"|\brooms? (?:are |is )?(?:still )?available\b|\bonly \d+ rooms? left\b",
    re.IGNORECASE,
)


def decide(messages: list[BaseMessage], tools: list[str]) -> AIMessage:
    """The ``DecisionAnswers`` call for the decision request in the last message."""
    body = json.loads(str(messages[-1].content))
    questions, state = body["questions"], body["state"]
    keys = set(questions)
    if keys == {"destination", "request_delivery"}:
        today = stated_date(" ".join(questions["destination"]["instructions"]))
        destination, delivery = route(state, today)
        answers = {
            "destination": choice(destination, questions["destination"]),
            "request_delivery": choice(delivery, questions["request_delivery"]),
        }
    elif keys == {"outcome", "faithful"}:
        today = stated_date(" ".join(questions["outcome"]["instructions"]))
        outcome, faithful = readiness(state, today)
        answers = {"outcome": choice(outcome, questions["outcome"]), "faithful": {"noul": faithful}}
    else:
        answers = presentation(state, questions)
    return tool_call("DecisionAnswers", answers)


def choice(label: str, question: dict[str, Any]) -> dict[str, Any]:
    """A confident choice of `label` among the question's labels."""
    labels = list(question["criteria"])
    rest = (1 - CONFIDENT) / max(1, len(labels) - 1)
    probabilities = [
        {"label": name, "probability": CONFIDENT if name == label else rest} for name in labels
    ]
    return {"choice": label, "confidence": CONFIDENT, "probabilities": probabilities}


def score(level: int, question: dict[str, Any]) -> dict[str, Any]:
    """A confident score at `level` of the question's levels."""
    levels = range(len(question["criteria"]))
    rest = (1 - CONFIDENT) / max(1, len(levels) - 1)
    probabilities = [{"level": i, "probability": CONFIDENT if i == level else rest} for i in levels]
    return {"score": level, "confidence": CONFIDENT, "probabilities": probabilities}


def route(state: dict[str, Any], today: date) -> tuple[str, str]:
    """The router's destination and request delivery for the newest request."""
    text, criteria = str(state.get("request") or ""), state["criteria"]
    unresolved: list[str] = list(state.get("unresolved") or [])
    if state.get("notice"):
        return "unclear", "none"  # the notice is shown whatever is answered
    if off_topic(text):
        return "unclear", "none"
    said = read(text, today)
    new = changed(said, criteria)
    if wants_search(text) and not new:
        return "search", "none"
    if wants_exit(text) and not new:
        return "exit", "none"
    if wants_review(text) and not new:
        return "review", "none"
    if new:
        return new[0], "apply_request"
    partial = partly_new(said, criteria)
    if partial:
        return partial[0], "apply_request"  # its owner asks what the request left out
    if _VAGUE_CHANGE.search(text) and not is_small_talk(text):
        return "unclear", "none"
    if unresolved:
        return unresolved[0], "prompt_next"
    return "review", "none"


def readiness(state: dict[str, Any], today: date) -> tuple[str, float]:
    """The readiness judge's outcome and how faithful the saved criteria are."""
    issues = state.get("deterministicIssues") or []
    if issues:
        return str(issues[0]["field"]), 0.1
    requests = [*(state.get("prior_requests") or []), str(state.get("request") or "")]
    contradicted = replay_contradictions(requests, state["criteria"], today)
    if not contradicted:
        return "ready", 0.95
    return (contradicted[0], 0.2) if len(contradicted) == 1 else ("unclear", 0.2)


def presentation(state: dict[str, Any], questions: dict[str, Any]) -> dict[str, Any]:
    """Grounded, complete and clear: the draft's numbered lines against ``hotelFound``."""
    draft, hotels = str(state.get("draft") or ""), list(state.get("hotelFound") or [])
    listed = [(int(n), name.strip(), price) for n, name, price in _LINE.findall(draft)]
    totals = {h["hotelName"]: usd(h["total"]) for h in hotels}
    known = {usd(h["total"]) for h in hotels}
    grounded = (
        all(totals.get(name) == price for _, name, price in listed)
        and all(amount in known for amount in _AMOUNT.findall(draft))
        and not _CLAIMS.search(draft)
    )
    every = {name for _, name, _ in listed} == set(totals) and bool(listed)
    actions = re.search(r"\bbook\b", draft, re.I) and re.search(
        r"\b(?:revise|change)\b", draft, re.I
    )
    complete = 0 if not listed else 2 if every and actions else 1
    numbered = [n for n, _, _ in listed] == list(range(1, len(listed) + 1))
    clear = 0 if not listed else 2 if numbered else 1
    return {
        "grounded": {"noul": 0.95 if grounded else 0.05},
        "completeness": score(complete, questions["completeness"]),
        "clarity": score(clear, questions["clarity"]),
    }
