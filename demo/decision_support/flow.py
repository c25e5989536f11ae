"""DecisionSupportFlow, ported point by point from PicoFlow's demo (research section 4).

    IntakeDecisionStep ──complete──▶ finish
         ├─unclear / unsure──▶ ClarifyStep ───────────────┐
         ├─billing──▶ BillingPolicyStep ──▶ BillingAnswerStep ┤
         ├─hard or urgent──▶ TechnicalSpecialistStep ─────┤ draft
         └─else──▶ QuickAnswerStep ────────────────────────┤
                                                           ▼
    AnswerJudgeDecisionStep ──accepted──▶ IntakeDecisionStep (direct_to: the draft)
         ├─first rejection──▶ ReviseAnswerStep ──draft──▶ AnswerJudgeDecisionStep
         └─second rejection──▶ IntakeDecisionStep (direct_to: HANDOFF)

Read-only "Northstar Cloud" support on fictional evidence (``demo.decision_support.data``). A
decision intake routes each request; a drafting step writes an answer that stays internal
(``on_response`` hands it to the judge: it is never stored as a reply) until the judge, a
second decision step, accepts it; one revision at most; the fixed ``HANDOFF`` after a second
rejection or any decision outage (``Flow.on_decision_error``, for both decision steps). Every
turn ends parked at the intake with an accepted draft or the handoff. The two decision steps
share the namespace ``decision-support``, so both see the customer's requests; the drafting
steps read them from ``flow.get_conversation`` in their prompt.

Models as PicoFlow chose them, step by step: the flow's (PicoFlow's ``gpt-5.6-luna``, low
reasoning effort) for Clarify, Quick and BillingAnswer; a specialist (``gpt-5.1``, medium
effort) for TechnicalSpecialistStep and ReviseAnswerStep; the decision model for both decision
steps. Offline they are ``offline:decision_support``, ``offline:decision_support-specialist``
and ``offline:decision_support-decide``, one provider factory for all three.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar, TypeVar

from demo.decision_support.data import (
    ASK_FOR_VALID_INVOICE,
    COMPLETED,
    DECISION_SUPPORT_MEMORY,
    FEEDBACK_CONTRADICTION,
    FEEDBACK_INCOMPLETE,
    FEEDBACK_UNCLEAR,
    FEEDBACK_UNSUPPORTED,
    HANDOFF,
    HUMAN_REVIEW_REQUIRED,
    NO_DUPLICATE_RECORDED,
    SUPPORT_EVIDENCE,
)
from demo.decision_support.offline import offline_provider
from demo.decision_support.prompts import (
    BILLING_MODE,
    CLARIFY_MODE,
    INTAKE_PROMPT,
    JUDGE_PROMPT,
    QUICK_MODE,
    SPECIALIST_MODE,
    draft_prompt,
    intake_questions,
    judge_questions,
    revise_mode,
)
from picoflow import (
    DecisionContext,
    DecisionErrorContext,
    DecisionOptions,
    DecisionStep,
    Flow,
    LogicStep,
    ModelLike,
    ModelSpec,
    Step,
    direct_to,
    finish,
    go,
    turn_window,
)
from picoflow.decisions import ChoiceAnswer, DecisionAnswers, NoulAnswer, Question, ScoreAnswer

A = TypeVar("A", ChoiceAnswer, ScoreAnswer, NoulAnswer)

CALL_TIMEOUT = 60.0
"""PicoFlow's ``configLlmCallPolicy()`` ``{timeoutMs: 60000}``: each model call's deadline."""
CALL_RETRIES = 1
"""PicoFlow's ``retryAttempts: 2`` counts every attempt; picoflow's ``retry_attempts`` counts
the retries after the first, so two attempts are one retry."""
FLOW_PARAMS: dict[str, Any] = {"reasoning": {"effort": "low"}}
SPECIALIST_PARAMS: dict[str, Any] = {"reasoning": {"effort": "medium"}}

PICOFLOW_MODEL = ModelSpec(
    "openai", "gpt-5.6-luna", FLOW_PARAMS, retry_attempts=CALL_RETRIES, timeout=CALL_TIMEOUT
)
"""PicoFlow's ``configModel()``, kept as data. picoflow's model catalog (U7) does not know
``gpt-5.6-luna`` (newer than the models PicoFlow's docs list), so an engine refuses
``DecisionSupportFlow.using(PICOFLOW_MODEL)`` at start: bind a model it knows, or pass the
endpoint that serves it (``params={"base_url": ...}``)."""
PICOFLOW_SPECIALIST = ModelSpec(
    "openai", "gpt-5.1", SPECIALIST_PARAMS, retry_attempts=CALL_RETRIES, timeout=CALL_TIMEOUT
)
"""PicoFlow's ``useModel`` of TechnicalSpecialistStep and ReviseAnswerStep."""
OFFLINE_MODEL = ModelSpec(
    "offline", "decision_support", FLOW_PARAMS, retry_attempts=CALL_RETRIES, timeout=CALL_TIMEOUT
)
OFFLINE_SPECIALIST = ModelSpec(
    "offline",
    "decision_support-specialist",
    SPECIALIST_PARAMS,
    retry_attempts=CALL_RETRIES,
    timeout=CALL_TIMEOUT,
)
OFFLINE_DECISION_MODEL = "offline:decision_support-decide"
DECISION_TIMEOUT = 15.0  # configDecision() timeoutMs: 15000, one attempt's deadline
DECISION_RETRIES = 1  # configDecision() maxRetries: 1 (extra attempts, as picoflow counts them)

INVOICE_ID = re.compile(r"\bINV-\d+\b", re.IGNORECASE | re.ASCII)
"""PicoFlow's ``/\\bINV-\\d+\\b/i``: the first match is the invoice asked about."""


def answer(answers: DecisionAnswers, key: str, kind: type[A]) -> A:
    """The answer to question `key`, of the kind its question asks (D1 checked that)."""
    found = answers[key]
    assert isinstance(found, kind), f"{key}: {found!r}"  # validated against the exact map
    return found


def public_state(state: dict[str, Any] | None) -> dict[str, Any]:
    """A step's whole state without picoflow's bookkeeping keys (``_saveOn``, ``_prompt``)."""
    return {key: value for key, value in (state or {}).items() if not key.startswith("_")}


class IntakeDecisionStep(DecisionStep):
    """The initial step: routes every request; each turn ends parked here."""

    def get_prompt(self) -> str:
        return INTAKE_PROMPT

    def define_questions(self) -> dict[str, Question]:
        return intake_questions()

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        route, complexity = (
            answer(answers, "route", ChoiceAnswer),
            answer(answers, "complexity", ScoreAnswer),
        )
        urgent = answer(answers, "urgent", NoulAnswer)
        triage = {key: answer.to_json() for key, answer in answers.items()}
        self.save_state({"route": route.choice, "triage": triage})
        if route.choice == "complete" and route.confidence >= 0.8:
            return finish(COMPLETED)
        if route.confidence < 0.75 or route.choice in ("unclear", "complete"):
            return go(ClarifyStep)
        if route.choice == "billing":
            return go(BillingPolicyStep)
        if complexity.score >= 1.5 or urgent.noul >= 0.9:
            return go(TechnicalSpecialistStep)
        return go(QuickAnswerStep)  # documentation and simple technical requests


class BillingPolicyStep(LogicStep):
    """The deterministic billing check of the latest request: no model decides money."""

    async def run_logic(self) -> Any:
        request = self.flow.get_conversation(DECISION_SUPPORT_MEMORY).request
        found = INVOICE_ID.search(request)
        invoice_id = found.group(0).upper() if found else None
        invoice = SUPPORT_EVIDENCE["invoices"].get(invoice_id) if invoice_id else None
        if invoice is None:
            outcome = ASK_FOR_VALID_INVOICE
        elif invoice["duplicate"]:
            outcome = HUMAN_REVIEW_REQUIRED
        else:
            outcome = NO_DUPLICATE_RECORDED
        self.save_state(
            {"invoiceId": invoice_id, "invoice": invoice, "outcome": outcome, "refundIssued": False}
        )
        return go(BillingAnswerStep)


class DraftingStep(Step):
    """What the five drafting steps share: ``prompt/draft.md`` and the hand-over to the judge."""

    mode: ClassVar[str] = QUICK_MODE
    revision: ClassVar[int] = 0

    def draft_mode(self) -> str:
        """The ``MODE`` part of the prompt: what kind of answer this step drafts."""
        return self.mode

    def get_prompt(self) -> str:
        asked = self.flow.get_conversation(DECISION_SUPPORT_MEMORY)
        request = {"request": asked.request, "priorRequests": asked.prior_requests}
        billing = public_state(self.flow.get_step_state(BillingPolicyStep))
        return draft_prompt(self.draft_mode(), request, SUPPORT_EVIDENCE, billing)

    def on_response(self, reply: Any) -> Any:
        # the draft is not kept as a reply (V5): only the judge's acceptance delivers it
        draft = str(reply)
        self.save_state({"draft": draft})
        return go(AnswerJudgeDecisionStep).with_state(
            {"draft": draft, "source": self.name, "revision": self.revision}
        )


class ClarifyStep(DraftingStep):
    """One concise question: which feature or invoice, and what was observed."""

    mode = CLARIFY_MODE


class QuickAnswerStep(DraftingStep):
    """A concise documented answer: documentation and simple technical requests."""

    mode = QUICK_MODE


class TechnicalSpecialistStep(DraftingStep):
    """Careful diagnosis on the specialist model: facts, hypotheses, ordered safe steps."""

    mode = SPECIALIST_MODE


class BillingAnswerStep(DraftingStep):
    """Explains BillingPolicyStep's result, and nothing more."""

    mode = BILLING_MODE


class ReviseAnswerStep(DraftingStep):
    """The one revision of a rejected draft, with the judge's feedback."""

    revision = 1

    def draft_mode(self) -> str:
        return revise_mode(public_state(self.flow.get_step_state(AnswerJudgeDecisionStep)))


class AnswerJudgeDecisionStep(DecisionStep):
    """Accepts a draft, asks for its one revision, or hands the customer off."""

    def get_prompt(self) -> str:
        return JUDGE_PROMPT

    def get_decision_facts(self) -> dict[str, Any]:
        billing = self.flow.get_step_state(BillingPolicyStep) or {}
        return {
            "draft": self.get_state("draft"),
            "evidence": SUPPORT_EVIDENCE,
            "billing": {
                "outcome": billing.get("outcome"),
                "invoice": billing.get("invoice"),
                "refundIssued": False,
            },
        }

    def define_questions(self) -> dict[str, Question]:
        return judge_questions()

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        feedback = review_feedback(answers)
        self.save_state({"feedback": feedback})
        review = {key: found.to_json() for key, found in answers.items()}
        self.save_state({"review": review, "accepted": not feedback, "unavailable": False})
        if not feedback:
            return direct_to(IntakeDecisionStep, str(self.get_state("draft")))
        if self.get_state("revision") == 0:
            return go(ReviseAnswerStep)
        return direct_to(IntakeDecisionStep, HANDOFF)


def review_feedback(answers: DecisionAnswers) -> list[str]:
    """The judge's feedback, in PicoFlow's order; empty when the draft is accepted."""
    supported = answer(answers, "supported", NoulAnswer)
    contradiction = answer(answers, "contradiction", NoulAnswer)
    completeness = answer(answers, "completeness", ScoreAnswer)
    clarity = answer(answers, "clarity", ScoreAnswer)
    feedback = []
    if supported.noul < 0.75:
        feedback.append(FEEDBACK_UNSUPPORTED)
    if contradiction.noul > 0.1:
        feedback.append(FEEDBACK_CONTRADICTION)
    if completeness.score < 1.5 or completeness.confidence < 0.75:
        feedback.append(FEEDBACK_INCOMPLETE)
    if clarity.score < 1.5 or clarity.confidence < 0.75:
        feedback.append(FEEDBACK_UNCLEAR)
    return feedback


class DecisionSupportFlow(Flow):
    """Northstar Cloud support: routed by a decision, every answer judged before delivery."""

    chat_model: ClassVar[ModelLike | None] = None
    specialist_model: ClassVar[ModelLike | None] = None
    decision_model: ClassVar[str | None] = None
    # the providers the flow's models need ("offline:decision_support..."), on any engine
    providers: ClassVar[dict[str, Any]] = {"offline": offline_provider}

    def __init__(self) -> None:
        super().__init__()
        # Issue 25: every namespace stays bounded however long the conversation runs. What the
        # steps need lives in state, and the decisions read at most five requests (M11).
        policy = turn_window(max_turns=12, keep_turns=6)
        for namespace in (DECISION_SUPPORT_MEMORY, *DRAFTING_STEPS):
            self.get_memory().set_policy(namespace, policy)

    @classmethod
    def using(
        cls, model: ModelLike, specialist: ModelLike | None = None, decision: str | None = None
    ) -> type[DecisionSupportFlow]:
        """This flow on `model`, `specialist` for the specialist steps (default: `model`) and
        `decision` ("provider:model") for the decision provider; the flow name is kept."""
        attrs = {
            "name": cls.name,
            "chat_model": model,
            "specialist_model": specialist or model,
            "decision_model": decision,
        }
        return type(cls.name, (cls,), attrs)

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def specialist(self) -> ModelLike:
        """The model of TechnicalSpecialistStep and ReviseAnswerStep (PicoFlow's gpt-5.1)."""
        model = self.specialist_model
        return model if model is not None else OFFLINE_SPECIALIST

    def config_decision(self) -> DecisionOptions:
        # PicoFlow: {provider: 'typesafe', model: 'jev-latest', timeoutMs: 15000, maxRetries: 1};
        # no provider is named: the engine's only registered one decides, with this model
        model = self.decision_model or OFFLINE_DECISION_MODEL
        return DecisionOptions(model=model, timeout=DECISION_TIMEOUT, max_retries=DECISION_RETRIES)

    def define_steps(self) -> list[Step]:
        return [
            IntakeDecisionStep(self).use_memory(DECISION_SUPPORT_MEMORY),
            ClarifyStep(self),
            BillingPolicyStep(self),
            QuickAnswerStep(self),
            TechnicalSpecialistStep(self).use_model(self.specialist()),
            BillingAnswerStep(self),
            AnswerJudgeDecisionStep(self).use_memory(DECISION_SUPPORT_MEMORY),
            ReviseAnswerStep(self).use_model(self.specialist()),
        ]

    def on_decision_error(self, step: Step, context: DecisionErrorContext) -> Any:
        # PicoFlow's flow-level hook, for an intake and a judge outage alike
        self.save_step_state(AnswerJudgeDecisionStep, {"accepted": False, "unavailable": True})
        return direct_to(IntakeDecisionStep, HANDOFF)


DRAFTING_STEPS = (
    "ClarifyStep",
    "QuickAnswerStep",
    "TechnicalSpecialistStep",
    "BillingAnswerStep",
    "ReviseAnswerStep",
)
"""The drafting steps' namespaces (each its class name, as in PicoFlow)."""
