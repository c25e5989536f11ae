"""A small support desk with decision steps (D1-D3), shared by the decision tests.

`RouterStep` decides where a request belongs and routes in the same turn; `BillingStep` is an
ordinary chat step answering from a scripted model; `ReadinessStep` is a second decision step
the router may go to within the same turn. Each test builds its own provider and model.
"""

from __future__ import annotations

from typing import Any

from picoflow import (
    ChoiceQuestion,
    DecisionStep,
    EndStep,
    Flow,
    FlowEngine,
    NoulQuestion,
    ScoreQuestion,
    Step,
    direct,
    finish,
    go,
)
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, ScriptedDecisionProvider

ROUTES = {"billing": "invoices and payments", "ready": "asks to check the case", "other": "else"}


class RouterStep(DecisionStep):
    def get_prompt(self) -> str:
        return "Route the customer's request."

    def define_questions(self) -> dict[str, Any]:
        return {
            "route": ChoiceQuestion(ROUTES),
            "urgent": NoulQuestion("Is the request urgent?", true="must act today"),
        }

    def get_decision_facts(self) -> dict[str, Any]:
        return {"plan": self.flow.get_context("config.plan") or "basic"}

    def on_decision(self, answers: Any, context: Any) -> Any:
        route = answers["route"].choice
        self.save_state({"route": route, "urgent": answers["urgent"].noul >= 0.5})
        if route == "billing":
            return go(BillingStep)
        if route == "ready":
            return ReadinessStep
        return "I can help with billing questions only."


class BillingStep(Step):
    def get_prompt(self) -> str:
        return "Answer the billing question."


class ReadinessStep(DecisionStep):
    def define_questions(self) -> dict[str, Any]:
        levels = ["nothing known", "some details", "everything needed"]
        return {"complete": ScoreQuestion(levels, instructions="How complete is the case?")}

    def on_decision(self, answers: Any, context: Any) -> Any:
        if answers["complete"].score >= 1.5:
            return finish("Your case is complete; we will be in touch.")
        return direct("Please tell me more about the case.")


def support_flow(model: ScriptedChatModel | None = None) -> type[Flow]:
    """A fresh flow class (the model is test data); the router and billing share `desk`."""
    chat = model or ScriptedChatModel(script=["Your invoice is corrected."])

    class SupportFlow(Flow):
        def config_model(self) -> Any:
            return chat

        def define_steps(self) -> list[Step]:
            return [
                RouterStep(self).use_memory("desk"),
                BillingStep(self).use_memory("desk"),
                ReadinessStep(self).use_memory("desk"),
                EndStep(self).use_memory("end"),
            ]

    return SupportFlow


def support_engine(
    provider: ScriptedDecisionProvider, flow: type[Flow] | None = None, **options: Any
) -> FlowEngine:
    return FlowEngine(
        [flow or support_flow()], store=MemoryStore(), decision_providers=[provider], **options
    )
