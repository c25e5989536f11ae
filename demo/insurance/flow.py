"""HomeInsuranceQuoteFlow, ported from PicoFlow's demo (research: section 6).

    QualificationStep ─▶ PropertyStep ─▶ RiskStep ─▶ CoverageStep ─▶ ReviewStep ◀───┐
          │ unsupported state                                   confirm │  │ correct │
          │                                                             │  ▼         │
          │                                                             │  owning stage
          ▼                                                             ▼  (same turn)
    ReferralStep ◀──── not eligible ──── RateQuoteStep (code) ◀── new deductible ──┐
                                              │ eligible                          │
                                              ▼                                   │
                                        PresentQuoteStep ─────────────────────────┘
                                              │ select
                                              ▼
                                        ContactStep ─▶ TerminateSessionStep (every end_* too)

A preliminary, non-binding home-insurance quote for a fictional carrier: the model collects
the facts; code owns eligibility, the referral reasons, the quote id, the premiums, option
validation and re-rating (``rating.py``, ``data/quote-config.json``). The three intake stages
share the namespace ``home-quote-intake`` with a rolling summary; the review, the options, the
contact and the referral start from an empty history each time they are entered. A session idle
for 30 minutes starts over. "Now" is the session's ``config.today``, else
``HOME_INSURANCE_FLOW_CURRENT_DATE``, else the clock.
"""

from __future__ import annotations

from typing import Any, ClassVar

from demo.insurance.base import TerminateSessionStep
from demo.insurance.clock import env_now
from demo.insurance.config import load_quote_config
from demo.insurance.intake import CoverageStep, PropertyStep, QualificationStep, RiskStep
from demo.insurance.offline import offline_provider
from demo.insurance.quoting import (
    ContactStep,
    PresentQuoteStep,
    RateQuoteStep,
    ReferralStep,
    ReviewStep,
)
from picoflow import Flow, ModelLike, ModelSpec, Step, session_idle_ms, turn_window

TIMEOUT_SECONDS = 120.0  # configLlmCallPolicy(): {timeoutMs: 120_000}
OFFLINE_MODEL = ModelSpec("offline", "insurance", retry_attempts=3, timeout=TIMEOUT_SECONDS)
IDLE_LIMIT_MS = 30 * 60 * 1000
INTAKE = "home-quote-intake"
NAMESPACES = {
    "CoverageStep": "home-quote-coverage",
    "ReviewStep": "home-quote-review",
    "PresentQuoteStep": "home-quote-options",
    "ContactStep": "home-quote-contact",
    "ReferralStep": "home-quote-referral",
    "TerminateSessionStep": "home-quote-terminal",
}


def with_call_policy(model: ModelLike) -> ModelLike:
    """`model` with PicoFlow's flow settings (3 attempts, 120 s a call) when it is named."""
    if isinstance(model, str) and ":" in model:
        provider, _, name = model.partition(":")
        return ModelSpec(provider, name, retry_attempts=3, timeout=TIMEOUT_SECONDS)
    return model


class HomeInsuranceQuoteFlow(Flow):
    """A preliminary home-insurance quote: intake, review, rating, options, follow-up."""

    chat_model: ClassVar[ModelLike | None] = None
    providers: ClassVar[dict[str, Any]] = {"offline": offline_provider}

    def __init__(self) -> None:
        super().__init__()
        load_quote_config()  # a configuration that does not fit its schema stops the engine
        env_now()  # so does an unreadable HOME_INSURANCE_FLOW_CURRENT_DATE
        memory = self.get_memory()
        memory.set_summary_model(self.config_model())
        memory.set_summary_config(min_messages=12, recent_messages=6).enable_summary(INTAKE)
        # Issue 25: every namespace is bounded whatever the customer does; these stages keep
        # their facts in state, and most start from an empty history anyway.
        for namespace in NAMESPACES.values():
            memory.set_policy(namespace, turn_window(max_turns=12, keep_turns=6))

    @classmethod
    def using(cls, model: ModelLike) -> type[HomeInsuranceQuoteFlow]:
        """This flow bound to ``model``; it keeps the persisted name "HomeInsuranceQuoteFlow"."""
        attrs = {"name": cls.name, "chat_model": with_call_policy(model)}
        return type(cls.name, (cls,), attrs)

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def migrate_session(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        """A session idle for 30 minutes or more starts over (PicoFlow: onRestoreSessionDoc)."""
        return None if session_idle_ms(doc) >= IDLE_LIMIT_MS else doc

    def define_steps(self) -> list[Step]:
        steps: list[Step] = [
            QualificationStep(self).use_memory(INTAKE),
            PropertyStep(self).use_memory(INTAKE),
            RiskStep(self).use_memory(INTAKE),
            CoverageStep(self),
            ReviewStep(self),
            RateQuoteStep(self),
            PresentQuoteStep(self),
            ContactStep(self),
            ReferralStep(self),
            TerminateSessionStep(self),
        ]
        for step in steps:
            if step.name in NAMESPACES:
                step.use_memory(NAMESPACES[step.name])
        return steps
