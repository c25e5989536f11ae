"""The three question kinds a decision step asks (D1), and the check of a question map.

A question is plain data: its criteria (the labels of a choice, the ordered levels of a score,
the two ends of a yes/no) and optional instructions, all JSON, because they go to a provider as
they are. Nothing is checked when a question is built: the map is checked as a whole, where
the step and the question's key are known, so an error can name both (at `FlowEngine(...)`
when `define_questions()` can be called then, else in the turn).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

from picoflow._internal.state import to_json

__all__ = [
    "ChoiceQuestion",
    "ScoreQuestion",
    "NoulQuestion",
    "Question",
    "QuestionProblem",
    "question_problem",
    "question_payload",
]


@dataclass(frozen=True, slots=True)
class ChoiceQuestion:
    """Pick one of several labels: `criteria` maps each label to what it means (D1).

    The answer is a `ChoiceAnswer`: the chosen label, a probability for every label (summing
    to 1) and a confidence. Give at least two labels.
    """

    criteria: Mapping[str, Any]
    instructions: Any = None
    kind: ClassVar[str] = "choice"


@dataclass(frozen=True, slots=True)
class ScoreQuestion:
    """Place the input on an ordered scale: `criteria` describes each level, lowest first (D1).

    The answer is a `ScoreAnswer`: a score from 0 to the last level's index (fractional
    allowed), a probability per level and a confidence. Give at least two levels.
    """

    criteria: Sequence[Any]
    instructions: Any = None
    kind: ClassVar[str] = "score"


@dataclass(frozen=True, slots=True)
class NoulQuestion:
    """A yes/no probability: how likely the statement holds (D1).

    `true` and `false` optionally describe the two ends. The answer is a `NoulAnswer`: one
    probability from 0 to 1, and no confidence.
    """

    instructions: Any = None
    true: Any = None
    false: Any = None
    kind: ClassVar[str] = "noul"


Question: TypeAlias = ChoiceQuestion | ScoreQuestion | NoulQuestion
QUESTION_KINDS = (ChoiceQuestion, ScoreQuestion, NoulQuestion)


@dataclass(frozen=True, slots=True)
class QuestionProblem:
    """What is wrong with a question map: the question at fault (None: the map) and why."""

    question: str | None
    text: str


def question_problem(questions: Any) -> QuestionProblem | None:
    """The first problem of what `define_questions()` returned, or None for a usable map."""
    if not isinstance(questions, Mapping):
        return QuestionProblem(
            None,
            f"define_questions() returned a {type(questions).__name__}; return a dict of "
            "question key to ChoiceQuestion, ScoreQuestion or NoulQuestion.",
        )
    if not questions:
        return QuestionProblem(
            None, "define_questions() returned no questions; a decision needs at least one."
        )
    for key, question in questions.items():
        if not isinstance(key, str) or not key.strip():
            return QuestionProblem(
                None, f"the question key {key!r} is not a non-empty string; name each question."
            )
        problem = _problem_of(question)
        if problem is not None:
            return QuestionProblem(key, problem)
    return None


def _problem_of(question: Any) -> str | None:
    if not isinstance(question, QUESTION_KINDS):
        return (
            f"{question!r} is not a question; use ChoiceQuestion(criteria), "
            "ScoreQuestion(levels) or NoulQuestion()."
        )
    if isinstance(question, ChoiceQuestion):
        return _choice_problem(question)
    if isinstance(question, ScoreQuestion):
        return _score_problem(question)
    return _json_problem(
        {"instructions": question.instructions, "true": question.true, "false": question.false}
    )


def _choice_problem(question: ChoiceQuestion) -> str | None:
    criteria = question.criteria
    if not isinstance(criteria, Mapping):
        return "a choice's criteria must be a dict of label to what the label means."
    if len(criteria) < 2:
        labels = ", ".join(repr(label) for label in criteria) or "none"
        return f"a choice needs at least two labels, got {len(criteria)} ({labels})."
    for label in criteria:
        if not isinstance(label, str) or not label.strip():
            return f"the label {label!r} is not a non-empty string."
    return _json_problem({"criteria": dict(criteria), "instructions": question.instructions})


def _score_problem(question: ScoreQuestion) -> str | None:
    levels = question.criteria
    if isinstance(levels, (str, bytes, Mapping)) or not isinstance(levels, Sequence):
        return "a score's criteria must be a list of level descriptions, lowest first."
    if len(levels) < 2:
        return f"a score needs at least two levels, got {len(levels)}."
    return _json_problem({"criteria": list(levels), "instructions": question.instructions})


def _json_problem(parts: dict[str, Any]) -> str | None:
    try:
        to_json(parts, "question")
    except (TypeError, ValueError) as exc:
        return f"it holds something that is not JSON ({exc})."
    return None


def question_payload(question: Question, prompt: str) -> dict[str, Any]:
    """The question as a provider receives it: kind, criteria, and the merged instructions.

    The instructions are a list: the step's `get_prompt()` first, then the question's own (a
    part that is None or empty is left out).
    """
    instructions = [part for part in (prompt, question.instructions) if part not in (None, "")]
    payload: dict[str, Any] = {"type": question.kind, "instructions": instructions}
    if isinstance(question, ChoiceQuestion):
        payload["criteria"] = dict(question.criteria)
    elif isinstance(question, ScoreQuestion):
        payload["criteria"] = list(question.criteria)
    else:
        ends = {"true": question.true, "false": question.false}
        payload["criteria"] = {end: text for end, text in ends.items() if text is not None}
    checked: dict[str, Any] = to_json(payload, "question")
    return checked
