"""PicoFlow's benefits schemas (research section 5.1) as pydantic models, field for field.

The field names are PicoFlow's camelCase ones: they are the tool arguments the model sends and
the keys saved in state. PicoFlow's handlers re-parse their arguments and ``stay`` with a
sentence that tells the model what to collect (``PARSE_FAILURE``); here pydantic validates the
arguments before the handler runs (R1), and a failure becomes picoflow's invalid-arguments
result (R6) carrying that same sentence, so the model reads PicoFlow's guidance either way.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

IsoDate = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}$")]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=120)]
Tier = Literal["employee_only", "employee_spouse", "employee_children", "family"]
Priority = Literal[
    "lowest_payroll_cost",
    "lower_deductible",
    "out_of_network_access",
    "hsa_savings",
    "prescription_coverage",
]


class Guided(BaseModel):
    """A tool's arguments whose validation failure reads as PicoFlow's ``stay`` sentence."""

    PARSE_FAILURE: ClassVar[str] = ""

    @model_validator(mode="wrap")
    @classmethod
    def _guide(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            if not cls.PARSE_FAILURE:
                raise
            raise PydanticCustomError("benefits_arguments", cls.PARSE_FAILURE) from exc


class EnrollmentRequest(Guided):
    """Who enrolls, for which plan year, and why now (``EnrollmentRequestSchema``)."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect employee ID in E-0000 format, plan year, event type, and a YYYY-MM-DD event "
        "date when applicable."
    )

    employeeId: Annotated[
        str,
        StringConstraints(strip_whitespace=True, pattern=r"^E-\d{4}$"),
        Field(description="the employee ID, E- and four digits, e.g. E-1042"),
    ]
    planYear: Annotated[StrictInt, Field(ge=2026, le=2030, description="the plan year")]
    eventType: Literal["open_enrollment", "new_hire", "qualifying_life_event"]
    eventDate: Annotated[
        IsoDate | None,
        Field(description="YYYY-MM-DD for a new hire or qualifying event; null otherwise"),
    ] = None

    @field_validator("eventDate")
    @classmethod
    def _a_real_day(cls, value: str | None) -> str | None:
        if value is not None:
            date.fromisoformat(value)  # 2026-02-30 fails here, not later in the date maths
        return value


class Dependent(BaseModel):
    """One covered person besides the employee."""

    name: Name
    relationship: Literal["spouse", "domestic_partner", "child"]
    birthDate: Annotated[IsoDate, Field(description="YYYY-MM-DD")]


class Household(Guided):
    """The coverage tier and the people it covers (``HouseholdSchema``)."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect a supported coverage tier, each covered dependent's name, relationship and "
        "birth date, plus spouse other-coverage status when applicable."
    )

    coverageTier: Tier
    dependents: Annotated[list[Dependent], Field(max_length=8)] = []
    spouseHasOtherMedicalCoverage: Annotated[
        StrictBool | None,
        Field(description="whether the covered spouse or partner has other medical coverage"),
    ] = None


class CarePreferences(Guided):
    """Broad care use and plan priorities; never diagnoses (``CarePreferencesSchema``)."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect anticipated use, prescription-use frequency, network preference, and at least "
        "one supported priority."
    )

    anticipatedUse: Literal["preventive_only", "moderate", "high"]
    prescriptionUse: Literal["none", "occasional", "regular"]
    networkPreference: Literal["in_network_only", "out_of_network_flexibility"]
    priorities: Annotated[list[Priority], Field(min_length=1, max_length=5)]


class HealthAccountElection(Guided):
    """The health account and the employee's annual contribution."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect an account type and whole-dollar annual employee contribution, or waive with "
        "zero contribution."
    )

    accountType: Literal["hsa", "healthcare_fsa", "waive"]
    employeeAnnualContribution: Annotated[StrictInt, Field(ge=0, le=20000)]


class AncillaryElection(Guided):
    """Dental, vision, supplemental life and disability elections."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect supported dental, vision, supplemental-life, short-term disability, and "
        "long-term disability elections."
    )

    dentalPlan: Literal["waive", "basic", "premium"]
    visionPlan: Literal["waive", "standard"]
    supplementalLifeMultiple: Annotated[
        StrictInt, Field(ge=0, le=3, description="times annual salary, 0 to waive")
    ]
    shortTermDisability: StrictBool
    longTermDisability: StrictBool


class Beneficiary(BaseModel):
    """One supplemental-life beneficiary."""

    name: Name
    relationship: Annotated[
        str,
        StringConstraints(strip_whitespace=True, min_length=1, max_length=80),
        Field(description="the relationship in the employee's own words"),
    ]
    percentage: Annotated[StrictInt, Field(ge=1, le=100)]


class BeneficiaryElection(Guided):
    """The supplemental-life beneficiaries (``BeneficiaryElectionSchema``)."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect at least one beneficiary with name, relationship, and a whole-number percentage."
    )

    beneficiaries: Annotated[list[Beneficiary], Field(min_length=1, max_length=6)]


class DependentCareElection(Guided):
    """The dependent-care FSA election (``DependentCareElectionSchema``)."""

    PARSE_FAILURE: ClassVar[str] = (
        "Collect a whole-dollar annual dependent-care contribution from $0 through the "
        "supported limit."
    )

    annualContribution: Annotated[StrictInt, Field(ge=0, le=10000)]


def is_iso_day(value: str) -> bool:
    """Whether `value` is a real ``YYYY-MM-DD`` day (2027-02-29 is not)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


class SubmitConfirmation(Guided):
    """The employee's explicit confirmation of the reviewed enrollment."""

    PARSE_FAILURE: ClassVar[str] = (
        "Ask the employee to confirm submission or end without submitting."
    )

    confirmed: Annotated[
        Literal[True], Field(description="true only after the employee explicitly confirmed")
    ]
