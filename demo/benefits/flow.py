"""EmployeeBenefitsFlow, ported from PicoFlow's demo point by point (research section 5).

    EligibilityStep ─▶ HouseholdStep ─▶ PreferencesStep ─▶ PlanEvaluationStep (logic)
      └─▶ IneligibleBenefitsStep ─▶ TerminateSessionStep
    PlanEvaluationStep ─▶ MedicalPlanStep ─▶ HealthAccountStep ─▶ AncillaryBenefitsStep
    AncillaryBenefitsStep ─▶ BeneficiaryStep (life > 0) ─▶ DependentCareStep ─▶
    EnrollmentReviewStep ─▶ CommitEnrollmentStep (logic) ─▶ TerminateSessionStep
    every conversational stage ─end_<stage>─▶ TerminateSessionStep

A fictional ("Northstar Works") 2027 benefits enrollment: the model collects and explains;
code (`demo.benefits.policy`) owns eligibility, plan terms, limits, prices, allocations,
pending requirements, the record and every transition, and the exact tables come from code
(`demo.benefits.present`). PicoFlow runs the intake and the ineligible exit on ``gpt-4o`` and
the six election stages on its "complex" model, ``gpt-5.1`` with low reasoning effort
(`PICOFLOW_MODEL`, `PICOFLOW_COMPLEX_MODEL`); offline they are ``offline:benefits`` and
``offline:benefits-complex`` (with the same params), and
``EmployeeBenefitsFlow.using(model, complex=...)`` binds real ones.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any, ClassVar

from demo.benefits.elections import (
    AncillaryBenefitsStep,
    BeneficiaryStep,
    DependentCareStep,
    HealthAccountStep,
    MedicalPlanStep,
    PlanEvaluationStep,
)
from demo.benefits.intake import (
    EligibilityStep,
    HouseholdStep,
    IneligibleBenefitsStep,
    PreferencesStep,
)
from demo.benefits.offline import offline_provider
from demo.benefits.review import CommitEnrollmentStep, EnrollmentReviewStep
from demo.benefits.stage import TerminateSessionStep
from picoflow import Flow, ModelLike, ModelSpec, Step, session_idle_ms, turn_window

CALL_TIMEOUT = 120.0
"""PicoFlow's ``configLlmCallPolicy()`` ``{timeoutMs: 120_000}``: seconds per model call."""
REASONING = {"reasoning": {"effort": "low"}}
PICOFLOW_MODEL = ModelSpec("openai", "gpt-4o", retry_attempts=3, timeout=CALL_TIMEOUT)
PICOFLOW_COMPLEX_MODEL = ModelSpec("openai", "gpt-5.1", REASONING, timeout=CALL_TIMEOUT)
OFFLINE_MODEL = ModelSpec("offline", "benefits", timeout=CALL_TIMEOUT)
OFFLINE_COMPLEX_MODEL = ModelSpec("offline", "benefits-complex", REASONING, timeout=CALL_TIMEOUT)
IDLE_LIMIT = timedelta(minutes=45)
INTAKE = "benefits-intake"
NAMESPACES = {
    "MedicalPlanStep": "benefits-medical",
    "HealthAccountStep": "benefits-accounts",
    "AncillaryBenefitsStep": "benefits-ancillary",
    "BeneficiaryStep": "benefits-beneficiaries",
    "DependentCareStep": "benefits-dependent-care",
    "EnrollmentReviewStep": "benefits-review",
    "IneligibleBenefitsStep": "benefits-ineligible",
    "TerminateSessionStep": "benefits-terminal",
}
"""Each stage's namespace (the three intake stages share ``benefits-intake``)."""
COMPLEX_STEPS = (
    MedicalPlanStep,
    HealthAccountStep,
    AncillaryBenefitsStep,
    BeneficiaryStep,
    DependentCareStep,
    EnrollmentReviewStep,
)


class EmployeeBenefitsFlow(Flow):
    """A fictional 2027 benefits enrollment in which code owns every rule and every move."""

    chat_model: ClassVar[ModelLike | None] = None
    complex_model: ClassVar[ModelLike | None] = None
    # the providers the flow's models need ("offline:benefits"), for engines built without them
    providers: ClassVar[dict[str, Any]] = {"offline": offline_provider}

    def __init__(self) -> None:
        super().__init__()
        memory = self.get_memory().set_summary_model(self.config_model())
        memory.set_summary_config(min_messages=14, recent_messages=8).enable_summary(INTAKE)
        # Issue 25: every other namespace is bounded too (they are erased on entry, so a
        # lingering employee keeps the last turns of the stage only; PicoFlow's never grow so)
        for namespace in NAMESPACES.values():
            memory.set_policy(namespace, turn_window(max_turns=12, keep_turns=6))

    @classmethod
    def using(
        cls, model: ModelLike, complex: ModelLike | None = None
    ) -> type[EmployeeBenefitsFlow]:
        """This flow on ``model`` (``complex`` for the election stages; default: ``model``).

        It keeps the persisted flow name "EmployeeBenefitsFlow". PicoFlow's own selection is
        ``using(PICOFLOW_MODEL, complex=PICOFLOW_COMPLEX_MODEL)``.
        """
        attrs = {"name": cls.name, "chat_model": model, "complex_model": complex or model}
        return type(cls.name, (cls,), attrs)

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def complex(self) -> ModelLike:
        """The model of the six election stages (PicoFlow's "complex" model)."""
        model = self.complex_model
        return model if model is not None else OFFLINE_COMPLEX_MODEL

    def migrate_session(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        """PicoFlow's ``onRestoreSessionDoc``: a session idle for 45 minutes starts afresh."""
        if session_idle_ms(doc) >= IDLE_LIMIT / timedelta(milliseconds=1):
            return None
        return doc

    def define_steps(self) -> list[Step]:
        steps: list[Step] = [
            EligibilityStep(self).use_memory(INTAKE),
            HouseholdStep(self).use_memory(INTAKE),
            PreferencesStep(self).use_memory(INTAKE),
            PlanEvaluationStep(self),
        ]
        for stage in COMPLEX_STEPS:
            steps.append(
                stage(self).use_memory(NAMESPACES[stage.__name__]).use_model(self.complex())
            )
            if stage is EnrollmentReviewStep:
                steps.append(CommitEnrollmentStep(self))
        steps.append(IneligibleBenefitsStep(self).use_memory(NAMESPACES["IneligibleBenefitsStep"]))
        steps.append(TerminateSessionStep(self).use_memory(NAMESPACES["TerminateSessionStep"]))
        return steps
