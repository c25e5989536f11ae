"""The four collecting stages: qualification, property, risk (one namespace) and coverage.

Each stage's model asks its questions and calls its capture tool once every answer is known;
the handler checks what the schema cannot (dates against "now"), saves the section and moves
on, or back to the review after a correction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from demo.insurance.base import IntakeStep
from demo.insurance.clock import add_years
from demo.insurance.jsjson import js_value
from demo.insurance.prompts import COVERAGE, PROPERTY, QUALIFICATION, RISK, with_facts
from demo.insurance.schemas import (
    CoveragePreferencesSchema,
    PropertyProfileSchema,
    QualificationSchema,
    RiskProfileSchema,
)
from picoflow import go, stay, tool

SYSTEM_LABELS = {
    "plumbingUpdatedYear": "plumbing",
    "electricalUpdatedYear": "electrical",
    "hvacUpdatedYear": "HVAC",
}


def effective_window_problem(effective: str, now: datetime) -> bool:
    """Whether the effective date (its UTC midnight) is not after now or over a year later."""
    start = datetime.fromisoformat(effective).replace(tzinfo=now.tzinfo)
    return start <= now or start > add_years(now, 1)


class QualificationStep(IntakeStep):
    """The initial stage: where the home is, how it is held and used, when coverage starts."""

    def get_prompt(self) -> str:
        return with_facts(
            QUALIFICATION,
            CURRENT_DATE=self.today(),
            SUPPORTED_STATES=self.quote_config().supportedStates,
            QUALIFICATION=self.get_state("qualification"),
            CORRECTION_REQUEST=self.get_state("correctionRequest"),
        )

    @tool(args_schema=QualificationSchema)
    def capture_home_qualification(self, qualification: QualificationSchema) -> Any:
        """Record the state, ZIP, purchase status, occupancy and effective date, once all are
        known."""
        now = self.now()
        if effective_window_problem(qualification.effectiveDate, now):
            return stay(
                f"The effective date must be after {self.today()} and no more than one year later."
            )
        correcting = self.captured({"qualification": qualification.model_dump()})
        if qualification.state not in self.quote_config().supportedStates:
            return go("ReferralStep").with_state(
                {"decision": "unsupported", "reasonCodes": ["UNSUPPORTED_STATE"]}
            )
        return go("ReviewStep" if correcting else "PropertyStep")

    @tool
    def end_qualification_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        return self.terminate("Thank the customer for considering Evergreen Home Insurance.")


class PropertyStep(IntakeStep):
    """The dwelling: type, age, size, construction, roof and system updates."""

    def get_prompt(self) -> str:
        return with_facts(
            PROPERTY,
            CURRENT_DATE=self.today(),
            PROPERTY=self.get_state("property"),
            CORRECTION_REQUEST=self.get_state("correctionRequest"),
        )

    @tool(args_schema=PropertyProfileSchema)
    def capture_home_property(self, profile: PropertyProfileSchema) -> Any:
        """Record the property characteristics, once all are known."""
        year = self.now().year
        if profile.yearBuilt > year:
            return stay("The year built cannot be in the future.")
        for field, label in SYSTEM_LABELS.items():
            updated = getattr(profile, field)
            if updated is not None and not profile.yearBuilt <= updated <= year:
                return stay(
                    f"The {label} update year must be between the year built and {year}, or null."
                )
        correcting = self.captured({"property": profile.model_dump()})
        return go("ReviewStep" if correcting else "RiskStep")

    @tool
    def end_property_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        return self.terminate("Thank the customer and close the unfinished preliminary quote.")


class RiskStep(IntakeStep):
    """Claims of the last five years, hazards and protections."""

    def get_prompt(self) -> str:
        return with_facts(
            RISK,
            CURRENT_DATE=self.today(),
            RISK=self.get_state("risk"),
            CORRECTION_REQUEST=self.get_state("correctionRequest"),
        )

    @tool(args_schema=RiskProfileSchema)
    def capture_home_risk(self, risk: RiskProfileSchema) -> Any:
        """Record the claims (an empty list if none), hazards and protections, once all are
        known."""
        if any(claim.year > self.now().year for claim in risk.claims):
            return stay("A claim year cannot be in the future.")
        correcting = self.captured({"risk": js_value(risk.model_dump())})
        return go("ReviewStep" if correcting else "CoverageStep")

    @tool
    def end_risk_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        return self.terminate("Thank the customer and close the unfinished preliminary quote.")


class CoverageStep(IntakeStep):
    """The coverage to rate: dwelling amount, deductible, liability limit, endorsements."""

    def get_prompt(self) -> str:
        return with_facts(
            COVERAGE,
            COVERAGE=self.get_state("coverage"),
            CORRECTION_REQUEST=self.get_state("correctionRequest"),
        )

    @tool(args_schema=CoveragePreferencesSchema)
    def capture_home_coverage(self, coverage: CoveragePreferencesSchema) -> Any:
        """Record the coverage preferences, once all are known."""
        self.captured({"coverage": coverage.model_dump()})
        return go("ReviewStep")

    @tool
    def end_coverage_quote(self) -> Any:
        """End the quote when the customer wants to stop."""
        return self.terminate("Thank the customer and close the unfinished preliminary quote.")
