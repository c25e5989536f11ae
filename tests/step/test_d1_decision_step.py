"""D1: DecisionStep — questions, facts and the conversation, routing on the answers in the turn.

A decision step never calls a chat model: its questions go to a decision provider with the
step's facts, `request` and `prior_requests`, and `on_decision` routes on the validated answers
like any step response. Mistakes that can be known when the engine starts fail there (F5).
"""

from __future__ import annotations

from typing import Any

import pytest
from support.decision_flows import (
    BillingStep,
    ReadinessStep,
    RouterStep,
    support_engine,
    support_flow,
)

from picoflow import (
    ChoiceAnswer,
    ChoiceQuestion,
    DecisionStep,
    Flow,
    FlowDefinitionError,
    FlowEngine,
    NoulQuestion,
    ScoreQuestion,
    Step,
    go,
    tool,
)
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider


async def test_d1_the_router_decides_and_the_destination_answers_in_the_same_turn() -> None:
    provider = ScriptedDecisionProvider([{"route": "billing", "urgent": 0.9}])
    model = ScriptedChatModel(script=["Your invoice is corrected."])
    engine = support_engine(provider, support_flow(model))
    result = await engine.run("SupportFlow", "my invoice is wrong", config={"plan": "pro"})
    assert result.success, result.message
    assert (result.message, result.step) == ("Your invoice is corrected.", "BillingStep")
    (asked,) = provider.requests
    assert asked.step == "RouterStep"
    assert asked.state == {"plan": "pro", "request": "my invoice is wrong", "prior_requests": []}
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None
    state = doc["steps"]["RouterStep"]["state"]
    assert (state["route"], state["urgent"]) == ("billing", True)
    assert len(model.requests) == 1  # the router made no chat-model call


async def test_d1_each_question_gets_the_prompt_first_then_its_own_instructions() -> None:
    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.1}])
    engine = support_engine(provider)
    await engine.run("SupportFlow", "hello")
    questions = provider.requests[0].questions
    assert questions["route"] == {
        "type": "choice",
        "instructions": ["Route the customer's request."],
        "criteria": {"billing": "invoices and payments", "ready": "asks to check the case",
                     "other": "else"},
    }  # fmt: skip
    assert questions["urgent"] == {
        "type": "noul",
        "instructions": ["Route the customer's request.", "Is the request urgent?"],
        "criteria": {"true": "must act today"},
    }


async def test_d1_a_text_answer_is_the_reply_and_the_request_history_is_oldest_first() -> None:
    said = [f"message {n}" for n in range(1, 7)]
    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.0}] * len(said))
    engine = support_engine(provider)
    session = None
    for text in said:
        result = await engine.run("SupportFlow", text, session)
        session = result.session_id
        assert (result.message, result.step) == ("I can help with billing questions only.",
                                                 "RouterStep")  # fmt: skip
    last = provider.requests[-1].state
    assert last["request"] == "message 6"
    assert last["prior_requests"] == ["message 2", "message 3", "message 4", "message 5"]


async def test_d1_a_step_class_moves_to_another_decision_step_that_decides_in_the_turn() -> None:
    provider = ScriptedDecisionProvider(
        {"RouterStep": [{"route": "ready", "urgent": 0.0}], "ReadinessStep": [{"complete": 2}]}
    )
    engine = support_engine(provider)
    result = await engine.run("SupportFlow", "please check my case")
    assert result.success, result.message
    assert result.message == "Your case is complete; we will be in touch."
    assert (result.step, result.completed) == ("ReadinessStep", True)
    assert [r.step for r in provider.requests] == ["RouterStep", "ReadinessStep"]
    assert provider.requests[1].state["request"] == "please check my case"  # shared namespace


async def test_d1_direct_from_on_decision_is_the_reply_and_is_kept_in_memory() -> None:
    provider = ScriptedDecisionProvider(
        {"RouterStep": [{"route": "ready", "urgent": 0.0}], "ReadinessStep": [{"complete": 0.4}]}
    )
    engine = support_engine(provider)
    result = await engine.run("SupportFlow", "check it")
    assert (result.message, result.step) == ("Please tell me more about the case.", "ReadinessStep")
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None
    texts = [m["data"]["content"] for m in doc["memory"]["desk"]["messages"][1:]]
    assert texts == ["check it", "Please tell me more about the case."]


async def test_d1_on_decision_sees_typed_answers_and_the_context() -> None:
    seen: list[Any] = []

    class Probe(RouterStep):
        def on_decision(self, answers: Any, context: Any) -> Any:
            seen.append((answers, context))
            return "noted"

    class ProbeFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [Probe(self)]

    provider = ScriptedDecisionProvider([{"route": "billing", "urgent": 0.25}])
    engine = FlowEngine([ProbeFlow], store=MemoryStore(), decision_providers=[provider])
    assert (await engine.run("ProbeFlow", "invoice")).message == "noted"
    ((answers, context),) = seen
    assert answers["route"] == ChoiceAnswer(
        "billing", {"billing": 1.0, "ready": 0.0, "other": 0.0}, 1.0
    )
    assert answers["urgent"].noul == 0.25
    assert (context.step, context.request, context.prior_requests) == ("Probe", "invoice", [])
    assert (context.provider, context.model, context.facts) == (
        "scripted",
        "scripted-decider",
        {"plan": "basic"},
    )
    assert context.usage == {"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}


async def test_d1_a_decision_step_saves_only_what_on_decision_saves() -> None:
    provider = ScriptedDecisionProvider([{"route": "billing", "urgent": 0.0}])
    engine = support_engine(provider)
    result = await engine.run("SupportFlow", "invoice")
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None
    state = doc["steps"]["RouterStep"]["state"]
    assert set(state) == {"route", "urgent", "_saveOn"}  # no request, prior_requests, facts


def _flow_with(step: type[Step], *others: type[Step]) -> type[Flow]:
    class CheckedFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=["hi"])

        def define_steps(self) -> list[Step]:
            return [step(self), *(other(self) for other in others)]

    return CheckedFlow


def _engine(flow: type[Flow], providers: Any = None) -> FlowEngine:
    given = [ScriptedDecisionProvider([])] if providers is None else providers
    return FlowEngine([flow], store=MemoryStore(), decision_providers=given)


def _questions(questions: Any) -> type[Step]:
    class Asking(DecisionStep):
        def define_questions(self) -> Any:
            return questions

        def on_decision(self, answers: Any, context: Any) -> Any:
            return "ok"

    return Asking


@pytest.mark.parametrize(
    ("questions", "message"),
    [
        ({}, "CheckedFlow.Asking: define_questions() returned no questions"),
        (
            {"route": ChoiceQuestion({"only": "one label"})},
            "CheckedFlow.Asking, question 'route': a choice needs at least two labels, got 1",
        ),
        (
            {"level": ScoreQuestion(["just one"])},
            "CheckedFlow.Asking, question 'level': a score needs at least two levels, got 1.",
        ),
        (
            {"yes": NoulQuestion(instructions={1, 2})},
            "CheckedFlow.Asking, question 'yes': it holds something that is not JSON",
        ),
        (["route"], "CheckedFlow.Asking: define_questions() returned a list"),
    ],
)
def test_d1_a_bad_question_map_fails_at_engine_start_naming_step_and_question(
    questions: Any, message: str
) -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        _engine(_flow_with(_questions(questions)))
    assert str(caught.value).startswith(message)


def test_d1_tools_a_model_or_an_output_schema_on_a_decision_step_fail_at_engine_start() -> None:
    class WithTool(_questions({"a": NoulQuestion()})):  # type: ignore[misc]
        @tool
        def lookup(self, what: str) -> str:
            """Look something up."""
            return what

    with pytest.raises(FlowDefinitionError, match=r"CheckedFlow.WithTool is a DecisionStep, which "
                       r"never calls a chat model, but it has tools \(lookup\)"):  # fmt: skip
        _engine(_flow_with(WithTool))

    class WithModel(_questions({"a": NoulQuestion()})):  # type: ignore[misc]
        def __init__(self, flow: Any) -> None:
            super().__init__(flow)
            self.use_model("openai:gpt-4o")

    with pytest.raises(FlowDefinitionError, match=r"has a model \(use_model\)"):
        _engine(_flow_with(WithModel))


def test_d1_a_decision_step_needs_define_questions_and_on_decision() -> None:
    class Half(DecisionStep):
        def define_questions(self) -> Any:
            return {"a": NoulQuestion()}

    with pytest.raises(FlowDefinitionError, match=r"CheckedFlow.Half is a DecisionStep but does "
                       r"not override on_decision\(\)"):  # fmt: skip
        _engine(_flow_with(Half))


def test_d1_a_decision_step_needs_no_model_of_the_flow() -> None:
    class NoModelFlow(Flow):
        def define_steps(self) -> list[Step]:
            return [RouterStep(self), ReadinessStep(self)]

    engine = FlowEngine(
        [NoModelFlow], store=MemoryStore(), decision_providers=[ScriptedDecisionProvider([])]
    )
    assert engine.flow_names() == ["NoModelFlow"]


async def test_d1_a_map_built_from_state_is_checked_in_the_turn_and_goes_to_on_decision_error() -> (
    None
):
    errors: list[Any] = []

    class FromState(DecisionStep):
        def define_questions(self) -> Any:
            labels = self.flow.get_context("config.labels")  # only a session has them
            return {"pick": ChoiceQuestion({label: label for label in labels})}

        def on_decision(self, answers: Any, context: Any) -> Any:
            return "decided"

        def on_decision_error(self, context: Any) -> Any:
            errors.append(context)
            return go(BillingStep)

    engine = _engine(_flow_with(FromState, BillingStep))  # nothing to check yet: it needs state
    result = await engine.run("CheckedFlow", "pick one", config={"labels": ["a"]})
    assert (result.success, result.step, result.message) == (True, "BillingStep", "hi")
    (context,) = errors
    assert context.step == "FromState"
    assert str(context.error) == (
        "Decision step FromState, question 'pick': a choice needs at least two labels, got 1 ('a')."
    )


async def test_d1_a_decision_step_run_nested_returns_its_reply_text() -> None:
    from picoflow.testing import tool_call

    class Asker(Step):
        @tool
        async def classify(self, text: str) -> str:
            """Ask the router, without moving the cursor."""
            return str(await self.run_step(RouterStep, text))

    class NestedFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=[tool_call("classify", text="a refund"), "Done."])

        def define_steps(self) -> list[Step]:
            return [Asker(self), RouterStep(self), BillingStep(self), ReadinessStep(self)]

    provider = ScriptedDecisionProvider([{"route": "other", "urgent": 0.0}])
    engine = FlowEngine([NestedFlow], store=MemoryStore(), decision_providers=[provider])
    result = await engine.run("NestedFlow", "classify this")
    assert (result.success, result.step, result.message) == (True, "Asker", "Done.")
    assert provider.requests[0].state["request"] == "a refund"
    doc = await engine.get_session(result.session_id or "")
    assert doc is not None
    tool_result = doc["memory"]["Asker"]["messages"][3]["data"]["content"]
    assert tool_result == "I can help with billing questions only."


@pytest.mark.parametrize(
    ("facts", "message"),
    [
        (
            {"when": object()},
            "Decision step Facts: the decision facts are not JSON: Cannot save "
            "Facts.get_decision_facts().when = <object object",
        ),
        (
            {"request": "forged"},
            "Decision step Facts: get_decision_facts() sets request, which the framework adds "
            "(the conversation); name the fact differently.",
        ),
        (["a list"], "Decision step Facts: get_decision_facts() returned a list; return a dict"),
    ],
)
async def test_d1_facts_that_are_not_a_json_object_fail_the_turn_after_on_decision_error(
    facts: Any, message: str
) -> None:
    heard: list[Any] = []

    class Facts(RouterStep):
        def get_decision_facts(self) -> Any:
            return facts

        def on_decision_error(self, context: Any) -> Any:
            heard.append(context.error)
            return None

    provider = ScriptedDecisionProvider([])
    engine = _engine(_flow_with(Facts, BillingStep, ReadinessStep), [provider])
    result = await engine.run("CheckedFlow", "hello")
    assert (result.success, result.error) == (False, "DecisionError")
    assert result.message.startswith(message)
    assert len(heard) == 1 and provider.requests == []  # the provider was never asked
