"""D2: `ScriptedDecisionProvider` answers from its script and records what it was asked."""

from __future__ import annotations

import pytest

from picoflow.decisions import ChoiceAnswer, DecisionRequest, DecisionResult, NoulAnswer
from picoflow.testing import ScriptedDecisionProvider, transient_error

QUESTIONS = {
    "route": {"type": "choice", "criteria": {"a": "", "b": ""}, "instructions": []},
    "level": {"type": "score", "criteria": ["low", "mid", "high"], "instructions": []},
    "yes": {"type": "noul", "criteria": {}, "instructions": []},
}


def _request(step: str = "Router") -> DecisionRequest:
    return DecisionRequest(step, QUESTIONS, {"request": "hi", "prior_requests": []}, None, 1.0)


async def test_d2_shorthand_answers_are_completed_from_the_questions_asked() -> None:
    provider = ScriptedDecisionProvider([{"route": "b", "level": 1.4, "yes": 0.3}])
    result = await provider.decide(_request(), timeout=1.0)
    assert isinstance(result, DecisionResult)
    assert result.answers["route"] == ChoiceAnswer("b", {"a": 0.0, "b": 1.0}, 1.0)
    assert result.answers["level"] == {"type": "score", "score": 1.4, "confidence": 1.0,
                                       "probabilities": {0: 0.0, 1: 1.0, 2: 0.0}}  # fmt: skip
    assert result.answers["yes"] == NoulAnswer(0.3)
    assert (result.model, result.usage) == ("scripted-decider", {"input_tokens": 20,
                                                                 "output_tokens": 5})  # fmt: skip
    assert provider.requests == [_request()]


async def test_d2_per_step_scripts_errors_and_a_used_up_script() -> None:
    provider = ScriptedDecisionProvider({"Router": [transient_error("timeout")], "Judge": []})
    with pytest.raises(Exception, match="Request timed out"):
        await provider.decide(_request(), timeout=1.0)
    assert provider.should_retry(TimeoutError()) is True
    with pytest.raises(AssertionError, match=r"script is used up: Judge asked for decision 1"):
        await provider.decide(_request("Judge"), timeout=1.0)
    with pytest.raises(ValueError, match="takes a script or a policy"):
        ScriptedDecisionProvider()
