"""Decisions (D1-D3): the questions a `DecisionStep` asks, the answers, and decision providers.

A decision step asks typed questions (a choice among labels, a score on ordered levels, a
yes/no probability) of a decision provider registered on the engine, and routes on the
validated answers in code. This package holds the data of that exchange and the provider seam;
`picoflow.DecisionStep` is the step, and `picoflow.testing.ScriptedDecisionProvider` answers
in tests. See docs/decisions.md.
"""

from __future__ import annotations

from picoflow.decisions._answers import (
    Answer,
    ChoiceAnswer,
    DecisionAnswers,
    NoulAnswer,
    ScoreAnswer,
)
from picoflow.decisions._langchain import LangChainDecisionProvider
from picoflow.decisions._provider import (
    DecisionContext,
    DecisionErrorContext,
    DecisionOptions,
    DecisionProvider,
    DecisionRequest,
    DecisionResult,
)
from picoflow.decisions._questions import ChoiceQuestion, NoulQuestion, Question, ScoreQuestion

__all__ = [
    "ChoiceQuestion",
    "ScoreQuestion",
    "NoulQuestion",
    "Question",
    "ChoiceAnswer",
    "ScoreAnswer",
    "NoulAnswer",
    "Answer",
    "DecisionAnswers",
    "DecisionOptions",
    "DecisionRequest",
    "DecisionResult",
    "DecisionProvider",
    "DecisionContext",
    "DecisionErrorContext",
    "LangChainDecisionProvider",
]
