"""The quote configuration (``data/quote-config.json``), checked against its schema when loaded.

The rating rules are data, as in PicoFlow: a carrier changes a factor in the file, not in code.
A file that does not fit the schema stops the flow before any quote is made, with a message
naming the file, the field and what is wrong, instead of a ``KeyError`` halfway through a
customer's quote.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Collection
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from demo.insurance.schemas import Endorsement

CONFIG_PATH = Path(__file__).parent / "data" / "quote-config.json"

Factor = Annotated[float, Field(gt=0)]


class QuoteConfigError(ValueError):
    """The quote configuration file is missing, not JSON, or does not fit its schema."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AgeBand(_Strict):
    """Ages up to `maxYears` (inclusive) rate with `factor`."""

    maxYears: Annotated[int, Field(ge=0)]
    factor: Factor


class Tier(_Strict):
    """One quote option: its premium factor, dwelling extension, liability floor, inclusions."""

    id: Annotated[str, Field(pattern=r"^[A-Z][A-Z_]*$")]
    name: Annotated[str, Field(min_length=1)]
    factor: Factor
    dwellingExtensionPercent: Annotated[int, Field(ge=0, le=100)]
    minimumLiabilityLimit: Annotated[int, Field(gt=0)]
    includedEndorsements: list[Endorsement]


class ReferralRules(_Strict):
    """Where an automated quote stops and an agent must review."""

    maxDwellingCoverage: Annotated[int, Field(gt=0)]
    maxRoofAgeYears: Annotated[int, Field(ge=0)]
    maxClaimsInFiveYears: Annotated[int, Field(ge=0)]
    maxSingleClaimAmount: Annotated[float, Field(ge=0)]
    minimumYearBuilt: Annotated[int, Field(ge=1800)]


class DeductibleFactors(_Strict):
    """The factor of each supported deductible (keys as in the file: "1000", ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    d1000: Annotated[Factor, Field(alias="1000")]
    d2500: Annotated[Factor, Field(alias="2500")]
    d5000: Annotated[Factor, Field(alias="5000")]


class QuoteConfig(_Strict):
    """PicoFlow's ``quote-config.json``, field by field."""

    carrierName: Annotated[str, Field(min_length=1)]
    rulesVersion: Annotated[str, Field(min_length=1)]
    supportedStates: Annotated[
        list[Annotated[str, Field(pattern=r"^[A-Z]{2}$")]], Field(min_length=1)
    ]
    quoteValidDays: Annotated[int, Field(gt=0)]
    baseRatePerThousand: Factor
    deductibleFactors: DeductibleFactors
    constructionFactors: dict[Literal["wood_frame", "masonry", "mixed"], Factor]
    occupancyFactors: dict[Literal["primary", "secondary", "rental"], Factor]
    homeAgeBands: Annotated[list[AgeBand], Field(min_length=1)]
    roofAgeBands: Annotated[list[AgeBand], Field(min_length=1)]
    claimFactors: dict[Literal["0", "1", "2"], Factor]
    hazardFactors: dict[Literal["pool", "trampoline", "woodStove"], Factor]
    protectionDiscounts: dict[
        Literal["monitoredAlarm", "sprinklerSystem"], Annotated[float, Field(ge=0, lt=1)]
    ]
    endorsementAnnualFees: dict[Endorsement, Annotated[float, Field(ge=0)]]
    referralRules: ReferralRules
    tiers: Annotated[list[Tier], Field(min_length=1)]

    @model_validator(mode="after")
    def _complete(self) -> QuoteConfig:
        """Every table names every value the schemas allow, bands ascend, tier ids differ."""
        tables: dict[str, tuple[Collection[str], int]] = {
            "constructionFactors": (self.constructionFactors, 3),
            "occupancyFactors": (self.occupancyFactors, 3),
            "claimFactors": (self.claimFactors, 3),
            "hazardFactors": (self.hazardFactors, 3),
            "protectionDiscounts": (self.protectionDiscounts, 2),
            "endorsementAnnualFees": (self.endorsementAnnualFees, 3),
        }
        for name, (table, size) in tables.items():
            if len(table) != size:
                raise ValueError(f"{name} must give all {size} keys, got {sorted(table)}")
        for name in ("homeAgeBands", "roofAgeBands"):
            ages = [band.maxYears for band in getattr(self, name)]
            if ages != sorted(set(ages)):
                raise ValueError(f"{name} must list maxYears in ascending order, got {ages}")
        ids = [tier.id for tier in self.tiers]
        if len(set(ids)) != len(ids):
            raise ValueError(f"tiers must have distinct ids, got {ids}")
        return self

    def deductible_factor(self, deductible: int) -> float:
        """The factor of a supported deductible (1000, 2500 or 5000)."""
        factors = self.deductibleFactors
        return {1000: factors.d1000, 2500: factors.d2500, 5000: factors.d5000}[deductible]


@functools.cache
def load_quote_config(path: Path = CONFIG_PATH) -> QuoteConfig:
    """The configuration at `path`, validated once per process.

    Raises:
        QuoteConfigError: the file cannot be read, is not JSON, or does not fit the schema;
            the message names the file and each offending field.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise QuoteConfigError(f"Cannot read the quote configuration {path}: {exc}.") from exc
    except json.JSONDecodeError as exc:
        raise QuoteConfigError(
            f"The quote configuration {path} is not JSON ({exc}). Fix the file's syntax."
        ) from exc
    try:
        return QuoteConfig.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or '(file)'}: {error['msg']}"
            for error in exc.errors()
        )
        raise QuoteConfigError(
            f"The quote configuration {path} does not fit its schema: {problems}. Fix these "
            "fields; see demo/insurance/config.py for the schema."
        ) from exc
