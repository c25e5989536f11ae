"""D2: decision providers — registration, options, validation, retries, the error chain.

Answers are checked against the exact question map before `on_decision` sees them; only
transient provider errors are retried, each attempt under its own deadline; a failure goes to
the step's `on_decision_error`, then the flow's, and otherwise fails the turn with nothing
saved.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.decision_flows import RouterStep, support_engine, support_flow

from picoflow import (
    DecisionError,
    DecisionOptions,
    DecisionStep,
    DecisionValidationError,
    Flow,
    FlowDefinitionError,
    FlowEngine,
    NoulQuestion,
    Step,
    direct,
)
from picoflow.decisions import DecisionResult, LangChainDecisionProvider
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider, tool_call, transient_error

OK = {"route": "other", "urgent": 0.0}


def _choice(choice: Any, probabilities: Any, confidence: Any = 0.9) -> dict[str, Any]:
    return {"type": "choice", "choice": choice, "probabilities": probabilities,
            "confidence": confidence}  # fmt: skip


THIRDS = {"billing": 0.5, "ready": 0.25, "other": 0.25}


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        (
            {"route": _choice("refunds", THIRDS), "urgent": 0.1},
            ", question 'route': the choice 'refunds' is not a declared label (billing, ready, "
            "other).",
        ),
        (
            {
                "route": _choice("billing", {"billing": 0.5, "ready": 0.2, "other": 0.2}),
                "urgent": 0.1,
            },
            ", question 'route': the probabilities sum to 0.9, not 1.",
        ),  # fmt: skip
        (
            {"route": _choice("billing", {"billing": 1.0}), "urgent": 0.1},
            ", question 'route': the probabilities are for billing; give one for each of billing, "
            "ready, other.",
        ),
        ({"route": "billing"}, ", question 'urgent': the provider gave no answer."),
        ({**OK, "mood": 0.5}, ": the provider answered questions that were not asked: mood"),
        (
            {"route": "billing", "urgent": 1.5},
            ", question 'urgent': the noul 1.5 is outside 0 to 1",
        ),
        (
            {"route": {"type": "noul", "noul": 1}, "urgent": 0.1},
            ", question 'route': a choice question got a 'noul' answer.",
        ),  # fmt: skip
    ],
)
async def test_d2_answers_that_do_not_fit_the_map_fail_the_turn_naming_step_and_question(
    answers: dict[str, Any], message: str
) -> None:
    provider = ScriptedDecisionProvider([answers])
    engine = support_engine(provider)
    result = await engine.run("SupportFlow", "my invoice")
    assert (result.success, result.error) == (False, "DecisionValidationError")
    assert result.message.startswith(f"Decision step RouterStep{message}")
    assert len(provider.requests) == 1  # a validation error is never retried


async def test_d2_a_score_out_of_range_and_a_wrong_shaped_result_are_provider_errors() -> None:
    from support.decision_flows import ReadinessStep

    class ScoreFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [ReadinessStep(self)]

    provider = ScriptedDecisionProvider([{"complete": 2.5}, ["not", "answers"]])
    engine = FlowEngine([ScoreFlow], store=MemoryStore(), decision_providers=[provider])
    first = await engine.run("ScoreFlow", "check")
    assert first.message == (
        "Decision step ReadinessStep, question 'complete': the score 2.5 is outside 0 to 2 "
        "(the level indexes)."
    )

    class Raw(ScriptedDecisionProvider):
        async def decide(self, request: Any, *, timeout: float) -> Any:
            return ["not", "a result"]

    engine = FlowEngine([ScoreFlow], store=MemoryStore(), decision_providers=[Raw([])])
    second = await engine.run("ScoreFlow", "check")
    assert (second.success, second.error) == (False, "DecisionError")
    assert second.message.startswith(
        "Decision step ReadinessStep: the decision provider returned ['not', 'a result']; return "
        "DecisionResult(answers=...)"
    )


async def test_d2_a_failed_decision_fails_the_turn_and_saves_nothing() -> None:
    provider = ScriptedDecisionProvider([OK, {"route": "nowhere", "urgent": 0.0}])
    engine = support_engine(provider)
    first = await engine.run("SupportFlow", "hello")
    before = await engine.get_session(first.session_id or "")
    second = await engine.run("SupportFlow", "again", first.session_id)
    assert not second.success
    after = await engine.get_session(first.session_id or "")
    assert before is not None and after is not None
    assert after["memory"] == before["memory"] and after["steps"] == before["steps"]
    assert after["decision_usage"] == before["decision_usage"]


async def test_d2_transient_errors_are_retried_within_max_retries_and_others_are_not() -> None:
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    class Retrying(RouterStep):
        def __init__(self, flow: Any) -> None:
            super().__init__(flow)
            self.use_decision(max_retries=2)

    class RetryFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [Retrying(self)]

    errors = [transient_error("rate_limit"), transient_error("server_error")]
    provider = ScriptedDecisionProvider([*errors, OK])
    engine = FlowEngine(
        [RetryFlow], store=MemoryStore(), decision_providers=[provider], sleep=sleep
    )
    result = await engine.run("RetryFlow", "hi")
    assert result.success, result.message
    assert len(provider.requests) == 3 and len(waits) == 2
    assert result.decision_usage["calls"] == 1  # failed attempts are not counted (D3)

    provider = ScriptedDecisionProvider([ValueError("bad request"), OK])
    engine = FlowEngine(
        [RetryFlow], store=MemoryStore(), decision_providers=[provider], sleep=sleep
    )
    failed = await engine.run("RetryFlow", "hi")
    assert (failed.success, failed.error, len(provider.requests)) == (False, "DecisionError", 1)
    assert failed.message == (
        "Decision step Retrying: the decision provider 'scripted' failed (1 attempt): "
        "ValueError: bad request"
    )


async def test_d2_each_attempt_has_its_own_deadline() -> None:
    async def hang(request: Any) -> Any:
        await asyncio.Event().wait()  # never answers: only the deadline ends the attempt

    class Slow(RouterStep):
        def __init__(self, flow: Any) -> None:
            super().__init__(flow)
            self.use_decision(timeout=0.01, max_retries=1)

    class SlowFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [Slow(self)]

    async def no_wait(seconds: float) -> None:
        return None

    provider = ScriptedDecisionProvider(policy=hang)
    engine = FlowEngine(
        [SlowFlow], store=MemoryStore(), decision_providers=[provider], sleep=no_wait
    )
    result = await engine.run("SlowFlow", "hi")
    assert len(provider.requests) == 2  # the timeout is transient: retried once
    assert result.message == (
        "Decision step Slow: the decision provider 'scripted' failed (2 attempts): "
        "TimeoutError: no answer within 0.01 s"
    )


async def test_d2_the_error_chain_is_step_then_flow_then_a_failed_turn() -> None:
    heard: list[str] = []

    class Recovering(RouterStep):
        def on_decision_error(self, context: Any) -> Any:
            heard.append(f"step:{type(context.error).__name__}")
            return None

    class ChainFlow(Flow):
        recover = True

        def define_steps(self) -> list[Step]:
            return [Recovering(self)]

        def on_decision_error(self, step: Step, context: Any) -> Any:
            heard.append(f"flow:{step.name}:{context.provider}")
            return direct("We are having trouble; please try again.") if self.recover else None

    provider = ScriptedDecisionProvider([ConnectionError("down")])
    engine = FlowEngine([ChainFlow], store=MemoryStore(), decision_providers=[provider])
    result = await engine.run("ChainFlow", "hi")
    assert (result.success, result.message) == (True, "We are having trouble; please try again.")
    assert heard == ["step:ConnectionError", "flow:Recovering:scripted"]
    assert result.decision_usage["calls"] == 0

    ChainFlow.recover = False
    provider = ScriptedDecisionProvider([ConnectionError("down")])
    engine = FlowEngine([ChainFlow], store=MemoryStore(), decision_providers=[provider])
    failed = await engine.run("ChainFlow", "hi")
    assert (failed.success, failed.error) == (False, "DecisionError")
    assert failed.message == (
        "Decision step Recovering: the decision provider 'scripted' failed (1 attempt): "
        "ConnectionError: down"
    )


def test_d2_decision_error_names_step_question_and_provider() -> None:
    error = DecisionValidationError("RouterStep", "the noul 2 is outside 0 to 1.",
                                    question="urgent", provider="scripted")  # fmt: skip
    assert (
        str(error) == "Decision step RouterStep, question 'urgent': the noul 2 is outside 0 to 1."
    )
    assert isinstance(error, DecisionError)
    assert repr(error) == (
        "DecisionValidationError(step='RouterStep', question='urgent', provider='scripted')"
    )


async def test_d2_options_resolve_defaults_then_flow_then_step() -> None:
    class Tuned(RouterStep):
        def __init__(self, flow: Any) -> None:
            super().__init__(flow)
            self.use_decision(model="step-model")

    class OptionsFlow(Flow):
        def config_decision(self) -> Any:
            return DecisionOptions(provider="second", model="flow-model", timeout=5)

        def define_steps(self) -> list[Step]:
            return [Tuned(self)]

    first, second = ScriptedDecisionProvider([]), ScriptedDecisionProvider([OK], id="second")
    engine = FlowEngine([OptionsFlow], store=MemoryStore(), decision_providers=[first, second])
    result = await engine.run("OptionsFlow", "hi")
    assert result.success, result.message
    (asked,) = second.requests
    assert (asked.model, asked.timeout) == ("step-model", 5.0)


def test_d2_provider_mistakes_fail_at_engine_start() -> None:
    flow = support_flow()
    with pytest.raises(FlowDefinitionError, match=r"SupportFlow.RouterStep names no decision "
                       r"provider and 0 are registered \(none\)"):  # fmt: skip
        FlowEngine([flow], store=MemoryStore())
    two = [ScriptedDecisionProvider([], id="a"), ScriptedDecisionProvider([], id="b")]
    with pytest.raises(FlowDefinitionError, match=r"names no decision provider and 2 are "):
        FlowEngine([flow], store=MemoryStore(), decision_providers=two)
    same = [ScriptedDecisionProvider([]), ScriptedDecisionProvider([])]
    with pytest.raises(ValueError, match="Two decision providers have the id 'scripted'"):
        FlowEngine([flow], store=MemoryStore(), decision_providers=same)
    with pytest.raises(TypeError, match="is not a decision provider"):
        FlowEngine([flow], store=MemoryStore(), decision_providers=[object()])
    with pytest.raises(ValueError, match=r"RouterStep.use_decision: timeout must be a number"):
        RouterStep(flow()).use_decision(timeout=0)


class _Asked(DecisionStep):
    def define_questions(self) -> Any:
        return {"urgent": NoulQuestion("Is it urgent?"), **RouterStep.define_questions(self)}

    def on_decision(self, answers: Any, context: Any) -> Any:
        return f"{answers['route'].choice} {answers['urgent'].noul} by {context.model}"


async def test_d2_a_langchain_chat_model_decides_through_structured_output() -> None:
    args = {
        "urgent": {"noul": 0.8},
        "route": {"choice": "billing", "confidence": 0.9,
                  "probabilities": [{"label": "billing", "probability": 3},
                                    {"label": "other", "probability": 1}]},
    }  # fmt: skip
    chat = ScriptedChatModel(script=[tool_call("DecisionAnswers", args)])

    class LangChainFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [_Asked(self)]

    engine = FlowEngine([LangChainFlow], store=MemoryStore(), decision_providers={"lc": chat})
    result = await engine.run("LangChainFlow", "my invoice, today please")
    assert result.success, result.message
    assert result.message == "billing 0.8 by ScriptedChatModel"
    (request,) = chat.requests
    assert request.tool_names == ["DecisionAnswers"]
    assert "my invoice, today please" in str(request.messages[-1].content)


async def test_d2_a_langchain_provider_normalises_the_models_probabilities() -> None:
    from picoflow.decisions import DecisionRequest

    args = {"route": {"choice": "ready", "confidence": 1.0, "probabilities": [
        {"label": "billing", "probability": 1}, {"label": "ready", "probability": 3}]}}  # fmt: skip
    provider = LangChainDecisionProvider(
        ScriptedChatModel(script=[tool_call("DecisionAnswers", args)])
    )
    questions = {"route": {"type": "choice", "criteria": {"billing": "", "ready": "", "x": ""},
                           "instructions": []}}  # fmt: skip
    result = await provider.decide(DecisionRequest("S", questions, {}, None, 1.0), timeout=1.0)
    assert isinstance(result, DecisionResult)
    assert result.answers["route"]["probabilities"] == {"billing": 0.25, "ready": 0.75, "x": 0.0}


async def test_d2_any_provider_string_the_engine_knows_decides() -> None:
    args = {"urgent": {"noul": 0.1}, "route": {"choice": "other", "confidence": 0.6,
            "probabilities": [{"label": "other", "probability": 1}]}}  # fmt: skip
    built: list[Any] = []

    def factory(spec: Any) -> ScriptedChatModel:
        built.append(spec.name)
        return ScriptedChatModel(script=[tool_call("DecisionAnswers", args)])

    class StringFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [_Asked(self)]

    engine = FlowEngine(
        [StringFlow],
        store=MemoryStore(),
        providers={"house": factory},
        decision_providers={"lc": "house:decider-1"},
    )
    result = await engine.run("StringFlow", "hello")
    assert (result.success, result.message) == (True, "other 0.1 by house:decider-1")
    assert built == ["decider-1"]
    with pytest.raises(FlowDefinitionError, match=r"decision provider lc: unknown model provider "
                       r"'nowhere'"):  # fmt: skip
        FlowEngine([StringFlow], store=MemoryStore(), decision_providers={"lc": "nowhere:x"})


async def test_d2_a_step_that_names_a_model_decides_with_no_provider_registered() -> None:
    """With no provider registered, `use_decision(model=...)` is decided by that chat model,
    built by the engine's model providers (the default "langchain" provider)."""
    args = {"urgent": {"noul": 0.2}, "route": {"choice": "other", "confidence": 0.7,
            "probabilities": [{"label": "other", "probability": 1}]}}  # fmt: skip
    built: list[str] = []

    def factory(spec: Any) -> ScriptedChatModel:
        built.append(spec.name)
        return ScriptedChatModel(script=[tool_call("DecisionAnswers", args)])

    class Named(_Asked):
        def __init__(self, flow: Flow) -> None:
            super().__init__(flow)
            self.use_decision(model="house:judge-2")

    class NamedFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [Named(self)]

    engine = FlowEngine([NamedFlow], store=MemoryStore(), providers={"house": factory})
    result = await engine.run("NamedFlow", "hello")
    assert (result.success, result.message) == (True, "other 0.2 by house:judge-2")
    assert built == ["judge-2"]
    with pytest.raises(FlowDefinitionError, match="names no decision provider and 0 are"):
        FlowEngine([support_flow()], store=MemoryStore())  # no model named: still refused
