"""The election stages, each in its own namespace on the "complex" model.

    PlanEvaluationStep (logic) ──▶ MedicalPlanStep ──select_benefits_medical_plan──▶
    HealthAccountStep ──capture_benefits_health_account──▶ AncillaryBenefitsStep
    AncillaryBenefitsStep ──capture_benefits_ancillary──▶ BeneficiaryStep (life multiple > 0)
                          └──────────────────────────────▶ DependentCareStep (no life)
    BeneficiaryStep ──capture_benefits_beneficiaries──▶ DependentCareStep
    DependentCareStep ──capture_benefits_dependent_care──▶ EnrollmentReviewStep

MedicalPlanStep, BeneficiaryStep and DependentCareStep are entered with ``needsPresentation``
set: while it is, their ``on_response`` removes it and answers with the exact text code owns
instead of the model's prose, so entering the stage always shows it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from demo.benefits.intake import EligibilityStep, HouseholdStep, PreferencesStep
from demo.benefits.policy import (
    PLAN_IDS,
    Json,
    account_limits,
    evaluate_dependent_care,
    evaluate_health_account,
    evaluate_plans,
    provider_network,
    quote_ancillary,
)
from demo.benefits.present import (
    DEPENDENT_CARE_TEXT,
    beneficiary_opening,
    comparison_table,
    dental_table,
    life_explanation,
    plan_table,
)
from demo.benefits.schemas import (
    AncillaryElection,
    BeneficiaryElection,
    DependentCareElection,
    HealthAccountElection,
)
from demo.benefits.stage import BenefitsStep, end_enrollment, fact
from picoflow import LogicStep, Step, ToolResult, direct, go, stay, tool

PlanId = Annotated[str, Field(description="a current plan ID: " + ", ".join(PLAN_IDS))]
ProviderName = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=2, max_length=120)
]


def required(step: Step, owner: type[Step], key: str) -> Any:
    """`owner`'s saved `key`; PicoFlow's error naming both when it was never saved."""
    value = step.flow.get_step_state(owner, key)
    if value is None:
        raise RuntimeError(f"{step.name} requires {owner.__name__}.{key}.")
    return value


class PlanEvaluationStep(LogicStep):
    """Prices every plan for the household and applies the recommendation rules, in code."""

    async def run_logic(self) -> ToolResult:
        request = required(self, EligibilityStep, "request")
        decision = required(self, EligibilityStep, "decision")
        household = required(self, HouseholdStep, "household")
        preferences = required(self, PreferencesStep, "preferences")
        employee = decision.get("employee")
        if not decision.get("eligible") or employee is None:
            raise RuntimeError("PlanEvaluationStep requires an eligible employee.")
        evaluation = evaluate_plans(request, employee, household, preferences)
        self.save_state({"evaluation": evaluation})
        return go(MedicalPlanStep).with_state({"needsPresentation": True})


class MedicalPlanStep(BenefitsStep):
    """The medical plans: show, compare, check a provider, select."""

    OPENER = "Show the current medical plan options exactly."

    def evaluation(self) -> Json:
        """The plan evaluation PlanEvaluationStep saved."""
        return required(self, PlanEvaluationStep, "evaluation")  # type: ignore[no-any-return]

    def stage_prompt(self) -> str:
        return (
            "Use only the exact plan IDs and terms of the plan evaluation. Show the plans with "
            "show_benefits_medical_plans, compare two or three with "
            "compare_benefits_medical_plans, check a provider with "
            "check_benefits_provider_network (never infer network status from the plan type) "
            "and record the choice with select_benefits_medical_plan. The recommendation is a "
            "rule-based fit, not a guarantee or advice. If the employee wants to stop, call "
            "end_medical_plan_enrollment.\n" + fact("PLAN_EVALUATION", self.evaluation())
        )

    def on_response(self, reply: Any) -> Any:
        if self.get_state("needsPresentation"):
            self.remove_state("needsPresentation")
            return plan_table(self.evaluation())
        return None

    def option(self, plan_id: str) -> Json | None:
        """The evaluated option of a plan ID (trimmed, any case), or None."""
        wanted = plan_id.strip().upper()
        return next((o for o in self.evaluation()["options"] if o["planId"] == wanted), None)

    @tool
    def show_benefits_medical_plans(self) -> ToolResult:
        """Show the medical plan options, priced for the household, exactly."""
        self.remove_state("needsPresentation")
        return direct(plan_table(self.evaluation()))

    @tool
    def compare_benefits_medical_plans(
        self, planIds: Annotated[list[str], Field(min_length=2, max_length=3)]
    ) -> ToolResult:
        """Compare two or three medical plans side by side."""
        wanted = list(dict.fromkeys(plan_id.strip().upper() for plan_id in planIds))
        options = [self.option(plan_id) for plan_id in wanted]
        if any(option is None for option in options):
            return stay(f"Choose current plan IDs: {', '.join(PLAN_IDS)}.")
        return direct(comparison_table([o for o in options if o is not None]))

    @tool
    def check_benefits_provider_network(
        self, planId: PlanId, providerName: ProviderName
    ) -> ToolResult:
        """Check a provider against a plan's network in the fictional demo directory."""
        option = self.option(planId)
        if option is None:
            return stay(f"Choose a current plan ID: {', '.join(PLAN_IDS)}.")
        return direct(provider_network(option, providerName)["message"])

    @tool
    def select_benefits_medical_plan(self, planId: PlanId) -> ToolResult:
        """Record the medical plan the employee chose."""
        option = self.option(planId)
        if option is None:
            return stay(f"Choose one current plan ID: {', '.join(PLAN_IDS)}.")
        self.save_state({"selectedPlan": option})
        return go(HealthAccountStep)

    @tool
    def end_medical_plan_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


def coverage_tier(step: Step) -> str:
    """The household's coverage tier."""
    return required(step, HouseholdStep, "household")["coverageTier"]  # type: ignore[no-any-return]


class HealthAccountStep(BenefitsStep):
    """The HSA or healthcare FSA and the employee's annual contribution."""

    OPENER = "Explain the available health account and collect an annual employee contribution."

    def stage_prompt(self) -> str:
        plan = required(self, MedicalPlanStep, "selectedPlan")
        return (
            "Explain the available health account from the account limits, counting the "
            "employer HSA contribution toward the limit. Ask for a whole-dollar annual "
            "employee contribution, or a waiver with zero. Give no tax advice. Record the "
            "election with capture_benefits_health_account; when it is rejected, explain the "
            "exact reason and ask again. If the employee wants to stop, call "
            "end_health_account_enrollment.\n"
            + fact("SELECTED_PLAN", plan)
            + "\n"
            + fact("ACCOUNT_LIMITS", account_limits(plan, coverage_tier(self)))
        )

    @tool(args_schema=HealthAccountElection)
    def capture_benefits_health_account(self, election: HealthAccountElection) -> ToolResult:
        """Record the health account and the employee's annual contribution."""
        saved = election.model_dump(mode="json")
        plan = required(self, MedicalPlanStep, "selectedPlan")
        result = evaluate_health_account(plan, coverage_tier(self), saved)
        if not result["accepted"]:
            return stay(result["reason"])
        self.save_state({"election": saved, "result": result})
        return go(AncillaryBenefitsStep)

    @tool
    def end_health_account_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


class AncillaryBenefitsStep(BenefitsStep):
    """Dental and vision, then supplemental life and disability."""

    OPENER = "Begin with dental and vision choices, then collect life and disability elections."

    def employee(self) -> Json:
        """The employee record of the eligibility decision."""
        return required(self, EligibilityStep, "decision")["employee"]  # type: ignore[no-any-return]

    def stage_prompt(self) -> str:
        return (
            "Collect two groups of elections: dental (waive, basic or premium) and vision "
            "(waive or standard); then the supplemental-life multiple of salary (0 to 3), "
            "short-term disability and long-term disability. Explain dental differences with "
            "compare_benefits_dental_options and life amounts with "
            "explain_benefits_life_option. Call capture_benefits_ancillary only when every "
            "election is explicit. Never collect evidence-of-insurability medical details. If "
            "the employee wants to stop, call end_ancillary_enrollment.\n"
            + fact("EMPLOYEE", self.employee())
            + "\n"
            + fact("COVERAGE_TIER", coverage_tier(self))
        )

    @tool
    def compare_benefits_dental_options(self) -> ToolResult:
        """Show the dental options and their prices for the household."""
        return direct(dental_table(coverage_tier(self)))

    @tool
    def explain_benefits_life_option(
        self,
        multiple: Annotated[Literal[1, 2, 3], Field(description="times annual salary")],
    ) -> ToolResult:
        """Explain what a supplemental-life multiple of salary covers and costs."""
        return direct(life_explanation(self.employee()["annualSalary"], multiple))

    @tool(args_schema=AncillaryElection)
    def capture_benefits_ancillary(self, election: AncillaryElection) -> ToolResult:
        """Record dental, vision, supplemental life and disability elections."""
        saved = election.model_dump(mode="json")
        quote = quote_ancillary(saved, coverage_tier(self), self.employee()["annualSalary"])
        self.save_state({"election": saved, "quote": quote})
        if saved["supplementalLifeMultiple"] > 0:
            pending = quote["pendingRequirements"]
            flags = {"needsPresentation": True, "pendingRequirements": pending}
            return go(BeneficiaryStep).with_state(flags)
        return go(DependentCareStep)  # no flag: that model's own text shows

    @tool
    def end_ancillary_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


class BeneficiaryStep(BenefitsStep):
    """The supplemental-life beneficiaries, allocated to exactly 100%."""

    OPENER = "Collect life-insurance beneficiary names, relationships, and percentages."

    def stage_prompt(self) -> str:
        return (
            "Collect each beneficiary's name, relationship in the employee's own words, and a "
            "whole-number percentage. Call capture_benefits_beneficiaries only with a complete "
            "allocation; code requires a total of exactly 100%. Never ask for Social Security "
            "numbers, addresses, bank or health data. If the employee wants to stop, call "
            "end_beneficiary_enrollment."
        )

    def on_response(self, reply: Any) -> Any:
        if self.get_state("needsPresentation"):
            pending = self.get_state("pendingRequirements") or []
            self.remove_state("needsPresentation")
            self.remove_state("pendingRequirements")
            return beneficiary_opening(pending)
        return None

    @tool(args_schema=BeneficiaryElection)
    def capture_benefits_beneficiaries(self, election: BeneficiaryElection) -> ToolResult:
        """Record the supplemental-life beneficiaries and their percentages."""
        total = sum(b.percentage for b in election.beneficiaries)
        if total != 100:
            return stay(
                f"Beneficiary allocations total {total}%; ask the employee either to adjust the "
                "current percentages or add beneficiaries so the complete allocation totals "
                "exactly 100%."
            )
        self.save_state({"election": election.model_dump(mode="json")})
        return go(DependentCareStep).with_state({"needsPresentation": True})

    @tool
    def end_beneficiary_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


class DependentCareStep(BenefitsStep):
    """The dependent-care FSA: an annual amount, or a waiver with $0."""

    OPENER = (
        "Render the authoritative dependent-care FSA explanation and election question exactly."
    )

    def evaluate(self, amount: int) -> Json:
        """``evaluateDependentCare`` for the household and plan year."""
        household = required(self, HouseholdStep, "household")
        plan_year = required(self, EligibilityStep, "request")["planYear"]
        return evaluate_dependent_care(household, plan_year, {"annualContribution": amount})

    def stage_prompt(self) -> str:
        return (
            "Ask the employee to elect an annual dependent-care FSA contribution or waive it "
            "with $0. A question about what it covers or pays for must be answered by calling "
            "explain_benefits_dependent_care at once, not from memory and not paraphrased. "
            "Record the election with capture_benefits_dependent_care; when it is rejected, "
            "explain the reason and ask again. Never guarantee tax eligibility or ask for "
            "receipts. If the employee wants to stop, call end_dependent_care_enrollment.\n"
            + fact("DEPENDENT_CARE_POLICY", self.evaluate(0))
        )

    def on_response(self, reply: Any) -> Any:
        if self.get_state("needsPresentation"):
            self.remove_state("needsPresentation")
            return DEPENDENT_CARE_TEXT
        return None

    @tool
    def explain_benefits_dependent_care(self) -> ToolResult:
        """Show the authoritative dependent-care FSA explanation and election question."""
        self.remove_state("needsPresentation")  # shown now: not again in place of prose
        return direct(DEPENDENT_CARE_TEXT)

    @tool(args_schema=DependentCareElection)
    def capture_benefits_dependent_care(self, election: DependentCareElection) -> ToolResult:
        """Record the employee's annual dependent-care FSA contribution ($0 waives it)."""
        result = self.evaluate(election.annualContribution)
        if not result["accepted"]:
            return stay(result["reason"])
        self.save_state({"election": election.model_dump(mode="json"), "result": result})
        return go("EnrollmentReviewStep").with_state({"needsPresentation": True})

    @tool
    def end_dependent_care_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()
