"""The answers a decision provider gives, and their check against the exact question map (D2).

A provider may answer with these records or with plain dicts of the same fields (the shape a
JSON API returns: `{"type": "choice", "choice", "probabilities", "confidence"}`). Either way
`validated_answers` turns them into records only if they fit the map exactly: one answer per
question and no other, of the question's kind, with the declared labels or levels, every
probability in [0, 1] and every distribution summing to 1. Anything else is a
`DecisionValidationError` naming the step and the question; `on_decision` never sees it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from picoflow.decisions._questions import ChoiceQuestion, Question, ScoreQuestion
from picoflow.errors import DecisionValidationError

__all__ = [
    "ChoiceAnswer",
    "ScoreAnswer",
    "NoulAnswer",
    "Answer",
    "DecisionAnswers",
    "validated_answers",
    "TOLERANCE",
]

TOLERANCE = 1e-6  # how far a distribution's sum may be from 1 (float rounding, not sloppiness)


@dataclass(frozen=True, slots=True)
class ChoiceAnswer:
    """The answer to a `ChoiceQuestion`: `choice` is one declared label."""

    choice: str
    probabilities: dict[str, float]
    confidence: float
    kind: ClassVar[str] = "choice"

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON (for state, traces and scenario reports)."""
        return {
            "type": "choice",
            "choice": self.choice,
            "probabilities": dict(self.probabilities),
            "confidence": self.confidence,
        }


@dataclass(frozen=True, slots=True)
class ScoreAnswer:
    """The answer to a `ScoreQuestion`: `score` from 0 to the last level's index.

    `legend` maps each level index to its description; `probabilities` each index to its
    probability.
    """

    score: float
    legend: dict[int, Any]
    probabilities: dict[int, float]
    confidence: float
    kind: ClassVar[str] = "score"

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON; level indexes become string keys, as JSON requires."""
        return {
            "type": "score",
            "score": self.score,
            "legend": {str(i): text for i, text in self.legend.items()},
            "probabilities": {str(i): p for i, p in self.probabilities.items()},
            "confidence": self.confidence,
        }


@dataclass(frozen=True, slots=True)
class NoulAnswer:
    """The answer to a `NoulQuestion`: the probability that the statement holds."""

    noul: float
    kind: ClassVar[str] = "noul"

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON."""
        return {"type": "noul", "noul": self.noul}


Answer: TypeAlias = ChoiceAnswer | ScoreAnswer | NoulAnswer
DecisionAnswers: TypeAlias = dict[str, Answer]


class _Wrong(Exception):
    """One answer does not fit its question; the text says how."""


def validated_answers(
    step: str, questions: Mapping[str, Question], answers: Any, provider: str | None = None
) -> DecisionAnswers:
    """The provider's answers as records, or a DecisionValidationError saying what is wrong."""
    if not isinstance(answers, Mapping):
        raise DecisionValidationError(
            step,
            f"the provider returned {type(answers).__name__} answers; a decision's answers are "
            "a dict of question key to answer.",
            provider=provider,
        )
    unknown = sorted(str(key) for key in answers if key not in questions)
    if unknown:
        raise DecisionValidationError(
            step,
            f"the provider answered questions that were not asked: {', '.join(unknown)} "
            f"(asked: {', '.join(questions)}).",
            provider=provider,
        )
    checked: DecisionAnswers = {}
    for key, question in questions.items():
        if key not in answers:
            raise DecisionValidationError(
                step, "the provider gave no answer.", question=key, provider=provider
            )
        try:
            checked[key] = _answer(question, answers[key])
        except _Wrong as exc:
            raise DecisionValidationError(step, str(exc), question=key, provider=provider) from None
    return checked


def _answer(question: Question, raw: Any) -> Answer:
    fields = raw.to_json() if isinstance(raw, (ChoiceAnswer, ScoreAnswer, NoulAnswer)) else raw
    if not isinstance(fields, Mapping):
        raise _Wrong(f"the answer is a {type(raw).__name__}, not an answer object.")
    kind = fields.get("type", question.kind)
    if kind != question.kind:
        raise _Wrong(f"a {question.kind} question got a {kind!r} answer.")
    if isinstance(question, ChoiceQuestion):
        return _choice(question, fields)
    if isinstance(question, ScoreQuestion):
        return _score(question, fields)
    return NoulAnswer(_probability(fields.get("noul"), "noul"))


def _choice(question: ChoiceQuestion, fields: Mapping[str, Any]) -> ChoiceAnswer:
    labels = list(question.criteria)
    choice = fields.get("choice")
    if choice not in labels:
        raise _Wrong(f"the choice {choice!r} is not a declared label ({', '.join(labels)}).")
    probabilities = _distribution(fields.get("probabilities"), labels, str)
    return ChoiceAnswer(choice, probabilities, _probability(fields.get("confidence"), "confidence"))


def _score(question: ScoreQuestion, fields: Mapping[str, Any]) -> ScoreAnswer:
    levels = list(question.criteria)
    top = len(levels) - 1
    score = _number(fields.get("score"), "score")
    if not 0 <= score <= top:
        raise _Wrong(f"the score {score!r} is outside 0 to {top} (the level indexes).")
    expected = dict(enumerate(levels))
    legend = fields.get("legend")
    if legend is not None and _by_index(legend, "legend") != expected:
        raise _Wrong(f"the legend {legend!r} is not the declared levels {expected!r}.")
    probabilities = _distribution(fields.get("probabilities"), list(range(len(levels))), int)
    confidence = _probability(fields.get("confidence"), "confidence")
    return ScoreAnswer(score, expected, probabilities, confidence)


def _distribution(raw: Any, keys: list[Any], key_type: type) -> dict[Any, float]:
    """A probability for every declared key and no other, summing to 1."""
    if not isinstance(raw, Mapping):
        raise _Wrong("the answer has no probabilities (a dict of label or level to probability).")
    given = _by_index(raw, "probabilities") if key_type is int else dict(raw)
    if set(given) != set(keys):
        shown = ", ".join(str(k) for k in keys)
        got = ", ".join(str(k) for k in given) or "none"
        raise _Wrong(f"the probabilities are for {got}; give one for each of {shown}.")
    out = {key: _probability(given[key], f"probability of {key!r}") for key in keys}
    total = math.fsum(out.values())
    if abs(total - 1.0) > TOLERANCE:
        raise _Wrong(f"the probabilities sum to {total:g}, not 1.")
    return out


def _by_index(raw: Any, what: str) -> dict[int, Any]:
    """A dict keyed by level index; JSON gives the indexes as strings ("0", "1")."""
    if not isinstance(raw, Mapping):
        raise _Wrong(f"the {what} must be a dict keyed by level index.")
    out: dict[int, Any] = {}
    for key, value in raw.items():
        if isinstance(key, str) and key.isdigit():
            key = int(key)
        if not isinstance(key, int) or isinstance(key, bool):
            raise _Wrong(f"the {what} key {key!r} is not a level index.")
        out[key] = value
    return out


def _probability(value: Any, what: str) -> float:
    number = _number(value, what)
    if not 0.0 <= number <= 1.0:
        raise _Wrong(f"the {what} {number!r} is outside 0 to 1.")
    return number


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Wrong(f"the {what} is {value!r}, not a number.")
    return float(value)
