"""The tool arguments of HomeInsuranceQuoteFlow: PicoFlow's zod schemas as pydantic models.

Each model is what the step's model sees (the JSON schema) and what validates its call (R1).
PicoFlow's handlers re-parsed the arguments and answered a parse failure with a fixed ``stay``
text; here pydantic validates before the handler runs, and a failure comes back to the model as
picoflow's error result (R6) carrying that same text, followed by what exactly was wrong
(``zip: String should match pattern ...``), so the model can fix the call.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    Field,
    StringConstraints,
    ValidationError,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

PurchaseStatus = Literal["own", "buying", "refinancing"]
Occupancy = Literal["primary", "secondary", "rental"]
DwellingType = Literal["single_family", "townhome", "duplex"]
Construction = Literal["wood_frame", "masonry", "mixed"]
RoofMaterial = Literal["composition", "metal", "tile"]
ClaimType = Literal["water", "fire", "wind", "theft", "liability", "other"]
Deductible = Literal[1000, 2500, 5000]
LiabilityLimit = Literal[100000, 300000, 500000, 1000000]
Endorsement = Literal["water_backup", "identity_theft", "equipment_breakdown"]
Section = Literal["qualification", "property", "risk", "coverage"]

UpdateYear = Annotated[int | None, Field(ge=1800, le=2100)]
Trimmed = StringConstraints(strip_whitespace=True)


class _Explained(BaseModel):
    """A schema whose validation failure leads with PicoFlow's text for it (`FAILURE`)."""

    FAILURE: ClassVar[str] = ""

    @model_validator(mode="wrap")
    @classmethod
    def _explain(cls, data: Any, handler: ValidatorFunctionWrapHandler) -> Any:
        try:
            return handler(data)
        except ValidationError as exc:
            details = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
                for error in exc.errors()
            )
            raise PydanticCustomError(
                "home_quote_invalid",
                "{failure} ({details})",
                {"failure": cls.FAILURE, "details": details},
            ) from exc


class QualificationSchema(_Explained):
    """Where the home is, how it is held and used, and when coverage would start."""

    FAILURE: ClassVar[str] = (
        "Collect a valid two-letter state, five-digit ZIP, purchase status, occupancy, and "
        "YYYY-MM-DD effective date."
    )

    state: Annotated[str, Field(min_length=2, max_length=2, description="two-letter US state")]
    zip: Annotated[str, Field(pattern=r"^\d{5}$", description="five-digit ZIP code")]
    purchaseStatus: PurchaseStatus
    occupancy: Occupancy
    effectiveDate: Annotated[
        str, Field(pattern=r"^\d{4}-\d{2}-\d{2}$", description="requested start, YYYY-MM-DD")
    ]

    @field_validator("state")
    @classmethod
    def _upper(cls, value: str) -> str:
        return value.upper()

    @field_validator("effectiveDate")
    @classmethod
    def _calendar_day(cls, value: str) -> str:
        date.fromisoformat(value)  # "2027-02-30" matches the pattern but is no day
        return value


class PropertyProfileSchema(_Explained):
    """The dwelling's characteristics; an update year is null when never updated or unknown."""

    FAILURE: ClassVar[str] = (
        "Collect valid dwelling, construction, roof, size, story, and system-update facts "
        "before continuing."
    )

    dwellingType: DwellingType
    yearBuilt: Annotated[int, Field(ge=1800, le=2100)]
    squareFeet: Annotated[int, Field(ge=400, le=15000)]
    stories: Annotated[int, Field(ge=1, le=4)]
    construction: Construction
    roofMaterial: RoofMaterial
    roofAgeYears: Annotated[int, Field(ge=0, le=75)]
    plumbingUpdatedYear: UpdateYear
    electricalUpdatedYear: UpdateYear
    hvacUpdatedYear: UpdateYear


class Claim(BaseModel):
    """One claim of the last five years."""

    year: Annotated[int, Field(ge=2000, le=2100)]
    type: ClaimType
    amount: Annotated[float, Field(ge=0, le=10_000_000, description="approximate, in USD")]


class Hazards(BaseModel):
    """Liability hazards on the property."""

    pool: bool
    trampoline: bool
    woodStove: bool


class Protections(BaseModel):
    """Protective devices in the home."""

    smokeAlarms: bool
    burglarAlarm: bool
    monitoredAlarm: bool
    sprinklerSystem: bool


class RiskProfileSchema(_Explained):
    """Claims of the last five years (an empty list if none), hazards and protections."""

    FAILURE: ClassVar[str] = (
        "Collect claims with year, type, and amount, plus every hazard and protection boolean."
    )

    claims: Annotated[list[Claim], Field(max_length=10)]
    hazards: Hazards
    protections: Protections


class CoveragePreferencesSchema(_Explained):
    """The coverage the customer wants rated."""

    FAILURE: ClassVar[str] = (
        "Use a supported dwelling amount, deductible, liability limit, and endorsement list."
    )

    dwellingCoverage: Annotated[
        int, Field(ge=100_000, le=2_000_000, description="estimated rebuild cost in USD")
    ]
    deductible: Deductible
    liabilityLimit: LiabilityLimit
    endorsements: list[Endorsement]


class ConfirmSchema(_Explained):
    """The customer confirmed the whole application as summarised."""

    FAILURE: ClassVar[str] = "Ask the customer to confirm or request a correction."

    confirmed: Literal[True]


class ContactRequestSchema(_Explained):
    """Explicit consent to an agent follow-up, and the contact fields (null when not given)."""

    FAILURE: ClassVar[str] = (
        "Collect explicit consent, a valid name and email when consent is yes, and nullable "
        "optional fields."
    )

    consentToContact: bool
    name: Annotated[str | None, Trimmed, Field(min_length=1, max_length=120)]
    email: Annotated[
        str | None, Trimmed, Field(pattern=r"^[^\s@]+@[^\s@]+\.[^\s@]+$", max_length=254)
    ]
    phone: Annotated[str | None, Trimmed, Field(min_length=7, max_length=30)]
    propertyAddress: Annotated[str | None, Trimmed, Field(min_length=5, max_length=240)]
