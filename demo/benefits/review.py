"""The review, the submission and the enrollment record.

EnrollmentReviewStep ──submit_benefits_enrollment (confirmed: true)──▶ CommitEnrollmentStep
CommitEnrollmentStep (logic) ──▶ TerminateSessionStep (the record, in the closing prompt)
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, StrictInt, StringConstraints

from demo.benefits.elections import (
    AncillaryBenefitsStep,
    BeneficiaryStep,
    DependentCareStep,
    HealthAccountStep,
    MedicalPlanStep,
    PlanEvaluationStep,
    coverage_tier,
)
from demo.benefits.intake import EligibilityStep, HouseholdStep, PreferencesStep
from demo.benefits.jsvalues import to_fixed2
from demo.benefits.policy import EOI, Json, create_enrollment, evaluate_health_account, js_iso
from demo.benefits.present import EOI_TEXT, review
from demo.benefits.schemas import SubmitConfirmation
from demo.benefits.stage import (
    BenefitsStep,
    TerminateSessionStep,
    current_time,
    end_enrollment,
    fact,
    terminal_prompt,
)
from picoflow import Flow, LogicStep, Step, ToolResult, direct, go, stay, tool

APPLICATION_PARTS: list[tuple[str, type[Step], str]] = [
    ("request", EligibilityStep, "request"),
    ("eligibility", EligibilityStep, "decision"),
    ("household", HouseholdStep, "household"),
    ("preferences", PreferencesStep, "preferences"),
    ("planEvaluation", PlanEvaluationStep, "evaluation"),
    ("selectedMedicalPlan", MedicalPlanStep, "selectedPlan"),
    ("healthAccount", HealthAccountStep, "election"),
    ("healthAccountResult", HealthAccountStep, "result"),
    ("ancillary", AncillaryBenefitsStep, "quote"),
    ("beneficiaries", BeneficiaryStep, "election"),
    ("dependentCare", DependentCareStep, "election"),
    ("dependentCareResult", DependentCareStep, "result"),
]
"""``readEnrollmentApplication``'s keys, in its order, and the step state each comes from."""


def read_enrollment_application(flow: Flow) -> Json:
    """The application as saved so far, in PicoFlow's key order.

    Raises:
        RuntimeError: a part was never saved (``Enrollment application requires <Step>.<key>.``).
    """
    application: Json = {}
    for name, owner, key in APPLICATION_PARTS:
        value = flow.get_step_state(owner, key)
        if name == "beneficiaries" and application["ancillary"]["supplementalLifeMultiple"] == 0:
            value = {"beneficiaries": []}  # no life election: nobody to name
        if value is None:
            raise RuntimeError(f"Enrollment application requires {owner.__name__}.{key}.")
        application[name] = value
    return application


class EnrollmentReviewStep(BenefitsStep):
    """The authoritative review; a contribution correction; the explicit submission."""

    OPENER = "Show the authoritative benefits enrollment review."

    def stage_prompt(self) -> str:
        return (
            "Use the application only through the tools: show it with "
            "show_benefits_enrollment_review, correct the health-account contribution with "
            "change_benefits_health_contribution, explain a pending requirement with "
            "explain_benefits_pending_requirement. Submit with submit_benefits_enrollment "
            "(confirmed: true) only after the employee explicitly confirms, and never say it "
            "was submitted before the tool completes. If the employee wants to stop, call "
            "end_reviewed_benefits_enrollment.\n"
            + fact("APPLICATION", read_enrollment_application(self.flow))
        )

    def on_response(self, reply: Any) -> Any:
        if self.get_state("needsPresentation"):
            self.remove_state("needsPresentation")
            return review(read_enrollment_application(self.flow))
        return None

    @tool
    def show_benefits_enrollment_review(self) -> ToolResult:
        """Show the authoritative enrollment review."""
        self.remove_state("needsPresentation")
        return direct(review(read_enrollment_application(self.flow)))

    @tool
    def change_benefits_health_contribution(
        self,
        employeeAnnualContribution: Annotated[
            StrictInt, Field(ge=0, le=20000, description="the new whole-dollar annual amount")
        ],
    ) -> ToolResult:
        """Change the employee's annual health-account contribution, same account type."""
        kind = self.flow.get_step_state(HealthAccountStep, "election.accountType")
        election = {"accountType": kind, "employeeAnnualContribution": employeeAnnualContribution}
        plan = self.flow.get_step_state(MedicalPlanStep, "selectedPlan")
        result = evaluate_health_account(plan, coverage_tier(self), election)
        if not result["accepted"]:
            return stay(result["reason"])
        self.flow.save_step_state(HealthAccountStep, {"election": election, "result": result})
        return direct(review(read_enrollment_application(self.flow)))

    @tool
    def explain_benefits_pending_requirement(
        self,
        code: Annotated[
            str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)
        ],
    ) -> ToolResult:
        """Explain one pending requirement of the enrollment by its code."""
        wanted = code.upper()
        pending = self.flow.get_step_state(AncillaryBenefitsStep, "quote.pendingRequirements")
        if wanted not in (pending or []):
            return stay(f"Current pending requirements: {', '.join(pending or []) or 'none'}.")
        if wanted == EOI:
            return direct(EOI_TEXT)
        return direct(
            f"{wanted} is pending and must be completed outside this fictional demo before the "
            "affected coverage becomes active."
        )

    @tool(args_schema=SubmitConfirmation)
    def submit_benefits_enrollment(self, confirmation: SubmitConfirmation) -> ToolResult:
        """Submit the reviewed enrollment, only after the employee explicitly confirmed."""
        now = current_time(self.get_context("config.today"))
        self.save_state({"confirmedAt": js_iso(now)})
        return go(CommitEnrollmentStep)

    @tool
    def end_reviewed_benefits_enrollment(self) -> ToolResult:
        """End without submitting the reviewed elections, when the employee wants to stop."""
        return end_enrollment("Confirm that the reviewed elections were not submitted.")


def record_prompt(record: Json) -> str:
    """The closing instruction after submission: the record, sentence by sentence."""
    pending = ", ".join(record["pendingRequirements"]) or "none"
    return " ".join(
        [
            f"Confirm enrollment {record['enrollmentId']} for plan year {record['planYear']}.",
            f"State status {record['status']}, effective date {record['effectiveDate']}, medical "
            f"plan {record['medicalPlanId']}, and total estimated payroll deduction "
            f"${to_fixed2(record['totalPayrollDeductionPerPayPeriod'])} per paycheck.",
            f"List pending requirements: {pending}.",
            "Confirm that no payment was taken in chat.",
        ]
    )


class CommitEnrollmentStep(LogicStep):
    """Creates the enrollment record from the saved application, in code."""

    async def run_logic(self) -> ToolResult:
        application = read_enrollment_application(self.flow)
        record = create_enrollment(application, current_time(self.get_context("config.today")))
        self.save_state({"enrollmentRecord": record})
        return go(TerminateSessionStep).with_prompt(terminal_prompt(record_prompt(record)))
