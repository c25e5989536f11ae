"""What every DecisionHotelFlow step reads the same way: the day, the criteria, the issues."""

from __future__ import annotations

from datetime import date
from typing import Any

from demo.decision_hotel.criteria import Issue, read_criteria, validate_criteria
from demo.decision_hotel.today import current_date
from picoflow import Step
from picoflow.decisions import ChoiceAnswer, DecisionAnswers, NoulAnswer, ScoreAnswer

INTAKE = "intake"
PRESENT = "present"


def today_for(step: Step) -> date:
    """The session's today (``config.today``, ``HOTEL_FLOW_CURRENT_DATE`` or the clock)."""
    return current_date(step.get_context("config.today"))


def snapshot_for(step: Step) -> dict[str, Any]:
    """The criteria as the five collectors hold them now (``readCriteria``)."""
    flow = step.flow
    return read_criteria(lambda name: flow.get_step(name).get_state() or {})


def issues_for(step: Step) -> list[Issue]:
    """What validation refuses in the criteria now, in correction order."""
    return validate_criteria(snapshot_for(step), today_for(step))


def choice_of(answers: DecisionAnswers, key: str) -> str:
    """The label a validated choice answer chose."""
    answer = answers[key]
    assert isinstance(answer, ChoiceAnswer)  # the runner validated the kind (D2)
    return answer.choice


def noul_of(answers: DecisionAnswers, key: str) -> float:
    """The probability a validated noul answer gave."""
    answer = answers[key]
    assert isinstance(answer, NoulAnswer)
    return answer.noul


def score_of(answers: DecisionAnswers, key: str) -> ScoreAnswer:
    """A validated score answer (its score and confidence)."""
    answer = answers[key]
    assert isinstance(answer, ScoreAnswer)
    return answer


def answers_json(answers: DecisionAnswers) -> dict[str, Any]:
    """The validated answers as the JSON a step saves (``lastDecision``, ``review``)."""
    return {key: answer.to_json() for key, answer in answers.items()}
