"""The offline models of DecisionSupportFlow: one provider factory for the three it names.

``offline:decision_support`` and ``offline:decision_support-specialist`` are the drafting
models (PicoFlow's ``gpt-5.6-luna`` and ``gpt-5.1``): they write the draft the system prompt
asks for from the evidence in it (`demo.decision_support.drafting`). ``offline:
decision_support-decide`` is the decision model: picoflow's `LangChainDecisionProvider` binds
its ``DecisionAnswers`` structured output, and it answers that tool call with the intake's or
the judge's answers, read from the questions and the state it is sent
(`demo.decision_support.deciding`). No network, no key.
"""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, BaseMessage

from demo.decision_support.deciding import decide
from demo.decision_support.drafting import draft
from picoflow import ModelSpec
from picoflow.decisions import LangChainDecisionProvider
from picoflow.testing import ScriptedChatModel, tool_call

DRAFTING_MODELS = ("decision_support", "decision_support-specialist")
DECISION_MODEL = "decision_support-decide"
DECISION_TOOL = "DecisionAnswers"  # picoflow.decisions' structured-output schema name


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """A drafting step's reply: the draft its system prompt asks for."""
    return draft(str(messages[0].content))


def answer(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The decision model's reply: one ``DecisionAnswers`` call holding every answer."""
    try:
        body = json.loads(str(messages[-1].content))
    except ValueError:
        return "I can only answer decision questions sent as JSON."
    answers = decide(body.get("questions") or {}, body.get("state") or {})
    if DECISION_TOOL not in tools:
        return json.dumps(answers)
    return tool_call(DECISION_TOOL, answers)


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind the flow's three ``"offline:..."`` models (any params)."""
    if spec.name in DRAFTING_MODELS:
        return ScriptedChatModel(policy=respond)
    if spec.name == DECISION_MODEL:
        return ScriptedChatModel(policy=answer)
    names = ", ".join(f"offline:{name}" for name in (*DRAFTING_MODELS, DECISION_MODEL))
    raise ValueError(
        f"The DecisionSupportFlow offline provider has the models {names}; got "
        f"'offline:{spec.name}'."
    )


def decision_provider() -> LangChainDecisionProvider:
    """The decision provider an engine registers for this flow: decisions by the step's model.

    ``FlowEngine([DecisionSupportFlow], decision_providers=[decision_provider()])``: it builds
    the flow's ``config_decision()`` model (``offline:decision_support-decide``, or the model
    of ``DecisionSupportFlow.using(..., decision=...)``) through the engine's providers and
    asks it through structured output.
    """
    return LangChainDecisionProvider(id="offline")
