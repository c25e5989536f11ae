"""The intake stages (namespace ``benefits-intake``) and the ineligible exit.

EligibilityStep ──check_benefits_eligibility──▶ HouseholdStep (eligible)
                └─────────────────────────────▶ IneligibleBenefitsStep (not eligible)
HouseholdStep ──capture_benefits_household──▶ PreferencesStep
PreferencesStep ──capture_benefits_preferences──▶ PlanEvaluationStep (logic)
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool

from demo.benefits.policy import evaluate_eligibility, validate_household
from demo.benefits.schemas import CarePreferences, EnrollmentRequest, Household
from demo.benefits.stage import BenefitsStep, end_enrollment, fact
from picoflow import ToolResult, go, stay, tool

ELIGIBILITY_EXAMPLE = (
    'Example: the employee says "E-1042, plan year 2027, I was hired on 2026-12-01"; you call '
    'check_benefits_eligibility with {"employeeId": "E-1042", "planYear": 2027, "eventType": '
    '"new_hire", "eventDate": "2026-12-01"} in that same response.'
)


class EligibilityStep(BenefitsStep):
    """The initial stage: who enrolls, for which plan year and which event."""

    OPENER = "Start the fictional employee benefits enrollment."
    ERASES_ON_ENTER = False

    def stage_prompt(self) -> str:
        return (
            "Say that this is a fictional 2027 benefits enrollment demonstration. Collect the "
            "employee ID (format E-0000), the plan year, and the enrollment event: "
            "open_enrollment, new_hire or qualifying_life_event. Ask for an event date "
            "(YYYY-MM-DD) only for a new hire or a qualifying life event; for open enrollment "
            "never ask for one and set eventDate to null. As soon as all of it is known, call "
            "check_benefits_eligibility in that same response: no confirmation, no repetition "
            "and no prose-only reply first. Never say the employee is eligible before the tool "
            f"returns. {ELIGIBILITY_EXAMPLE} If the employee wants to stop, call "
            "end_benefits_enrollment.\n" + fact("CURRENT_DATE", self.now().date().isoformat())
        )

    @tool(args_schema=EnrollmentRequest)
    def check_benefits_eligibility(self, request: EnrollmentRequest) -> ToolResult:
        """Check the employee's benefits eligibility once ID, plan year and event are known."""
        if request.eventType == "open_enrollment" and request.eventDate is not None:
            return stay("For open enrollment, eventDate must be null.")
        saved = request.model_dump(mode="json")
        decision = evaluate_eligibility(saved, self.now())
        self.save_state({"request": saved, "decision": decision})
        if not decision["eligible"]:
            return go(IneligibleBenefitsStep).with_state({"decision": decision})
        return go(HouseholdStep)

    @tool
    def end_benefits_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


class HouseholdStep(BenefitsStep):
    """Who is covered: the tier, each dependent, a partner's other coverage."""

    OPENER = "Collect the people who should be covered."
    ERASES_ON_ENTER = False

    def stage_prompt(self) -> str:
        return (
            "Ask for the coverage tier first: employee_only, employee_spouse, "
            "employee_children or family. For each covered person collect only the name, the "
            "relationship (spouse, domestic_partner or child) and the birth date; for a covered "
            "spouse or partner, ask whether they have access to other medical coverage. Never "
            "ask for identifiers, proofs, diagnoses or accounts. For family coverage without "
            "details, ask for the spouse or partner and every child in one response, not the "
            "partner first and the children later. Then call capture_benefits_household. If "
            "the employee wants to stop, call end_household_enrollment."
        )

    @tool(args_schema=Household)
    def capture_benefits_household(self, household: Household) -> ToolResult:
        """Record the coverage tier and every covered dependent."""
        saved = household.model_dump(mode="json")
        plan_year = self.flow.get_step_state(EligibilityStep, "request.planYear")
        problem = validate_household(saved, plan_year)
        if problem is not None:
            return stay(problem)
        self.save_state({"household": saved})
        return go(PreferencesStep)

    @tool
    def end_household_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment("Confirm that no household elections were submitted.")


class PreferencesStep(BenefitsStep):
    """Broad care use and priorities, for the rule-based plan fit."""

    OPENER = (
        "Ask about broad care-use and plan priorities without requesting diagnoses or "
        "medication names."
    )
    ERASES_ON_ENTER = False

    def stage_prompt(self) -> str:
        return (
            "Collect four broad preferences: anticipated use (preventive_only, moderate or "
            "high), prescription use (none, occasional or regular), network preference "
            "(in_network_only or out_of_network_flexibility) and one to five priorities "
            "(lowest_payroll_cost, lower_deductible, out_of_network_access, hsa_savings, "
            "prescription_coverage). Never ask for or repeat medication names or diagnoses. "
            "Explain that the plan fit is rule-based decision support. Then call "
            "capture_benefits_preferences. If the employee wants to stop, call "
            "end_preferences_enrollment."
        )

    @tool(args_schema=CarePreferences)
    def capture_benefits_preferences(self, preferences: CarePreferences) -> ToolResult:
        """Record the employee's broad care-use preferences and plan priorities."""
        self.save_state({"preferences": preferences.model_dump(mode="json")})
        return go("PlanEvaluationStep")

    @tool
    def end_preferences_enrollment(self) -> ToolResult:
        """End the enrollment without submitting anything, when the employee wants to stop."""
        return end_enrollment()


class IneligibleBenefitsStep(BenefitsStep):
    """The eligibility result explained neutrally, then the session closes."""

    OPENER = "Explain the code-owned eligibility result and next step."

    def stage_prompt(self) -> str:
        return (
            "Explain only the reason codes of the eligibility decision, neutrally. Invent no "
            "facts, legal conclusions or exceptions. Recommend contacting the fictional "
            "benefits team for review. Ask the employee to acknowledge, then call "
            "finish_ineligible_benefits.\n"
            + fact("ELIGIBILITY_DECISION", self.get_state("decision"))
        )

    @tool
    def finish_ineligible_benefits(
        self,
        acknowledged: Annotated[
            StrictBool, Field(description="whether the employee acknowledged the result")
        ],
    ) -> ToolResult:
        """Close the session once the employee has acknowledged the eligibility result."""
        closing = (
            "Confirm that no elections were submitted and recommend contacting the fictional "
            "benefits team for review."
        )
        return end_enrollment(closing)
