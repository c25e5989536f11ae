"""The judge (X3): a model asked whether a reply does what the turn's words say it should.

Deterministic checks decide first; the judge adds what no pattern can check ("asks for the
dates", "apologises and offers the list"). It reads PicoFlow's `expectedResponse` when a turn has
one, otherwise its `label`, and answers with JSON: `{"pass": bool, "score": 0..1, "reason": str}`.
A turn passes the judge when `pass` is true and the score reaches the turn's `minScore` (else the
scenario's `judgeMinScore`, else 0.75, PicoFlow's default).
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from picoflow.scenarios._report import JudgeVerdict
from picoflow.scenarios._schema import Scenario, Turn

__all__ = ["Judge", "JUDGE_PROMPT", "DEFAULT_MIN_SCORE"]

DEFAULT_MIN_SCORE = 0.75
JUDGE_PROMPT = (
    "You are a strict but fair evaluator of a conversational assistant's reply. Compare the "
    "actual reply with the expected behaviour. Ignore wording, formatting and harmless "
    "politeness; fail a reply that asks for the wrong thing, skips what is expected, or "
    'contradicts it. Answer with JSON only: {"pass": true or false, "score": a number from 0 '
    'to 1, "reason": one sentence}.'
)


class Judge:
    """Asks `model` about each turn that has words to judge."""

    def __init__(self, model: BaseChatModel) -> None:
        self.model = model

    async def verdict(self, scenario: Scenario, turn: Turn, reply: str) -> JudgeVerdict | None:
        """The judge's verdict on `reply`, or None for a turn with nothing to judge."""
        expected = turn.expected_response or turn.label
        if not expected:
            return None
        question = json.dumps(
            {"userInput": turn.input, "expectedBehaviour": expected, "actualReply": reply},
            ensure_ascii=False,
        )
        answer = await self.model.ainvoke([SystemMessage(JUDGE_PROMPT), HumanMessage(question)])
        minimum = _minimum(scenario, turn)
        return _parse(str(answer.text), minimum)


def _minimum(scenario: Scenario, turn: Turn) -> float:
    if turn.min_score is not None:
        return turn.min_score
    if scenario.judge_min_score is not None:
        return scenario.judge_min_score
    return DEFAULT_MIN_SCORE


def _parse(text: str, minimum: float) -> JudgeVerdict:
    """Read the judge's JSON (a code fence around it is fine); anything else fails the turn."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        data: Any = json.loads(body)
        passed, score = bool(data["pass"]), float(data.get("score", 1.0 if data["pass"] else 0.0))
        reason = str(data.get("reason", ""))
    except (ValueError, TypeError, KeyError, AttributeError):
        shown = f"the judge did not answer with the JSON asked for: {text!r}"
        return JudgeVerdict(False, 0.0, shown)
    if passed and score < minimum:
        return JudgeVerdict(False, score, f"score {score:g} is below {minimum:g}: {reason}")
    return JudgeVerdict(passed, score, reason)
