"""Typed domain model of HotelFlow: what a guest asks for, what a hotel offers, what a stay costs.

``StayCriteria`` doubles as the schema of the ``capture_choices`` tool, so its field descriptions
are written as instructions to the LLM and its validation messages are phrased to be read back to
it.

Decisions worth knowing:

* A stay is a list of ``DateRange`` parts whose ``end`` is the check-out day (exclusive, never
  charged). A single night on D is ``DateRange(start=D, end=D + 1 day)``, which
  ``DateRange.single`` builds. Overlapping parts are allowed; their nights are counted once.
* "Today" is never read from the clock here. Pass it as validation context (``parse_criteria`` does
  that); without it the past-date rule is skipped, so criteria saved in a session can be reloaded
  after their dates have passed. A check-in on today itself is accepted (same-day booking).
* Budgets are per night in USD and are compared with the average nightly price of the stay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import date, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

MAX_NIGHTS = 60
"""Longest stay we quote; longer requests are almost always a misunderstanding of the dates."""

NEAR_AIRPORT_MILES = 5.0
"""What "near the airport" means when the guest gives no number."""

NEAR_DOWNTOWN_MILES = 3.0
"""What "close to downtown" means when the guest gives no number."""

TODAY = "today"
"""Key of the validation-context entry holding today's date (a ``datetime.date``)."""


class RoomType(StrEnum):
    """Room categories; every hotel offers a subset of them."""

    ONE_BED = "one bed"
    TWO_BEDS = "two beds"
    SUITE = "suite"


class Amenity(StrEnum):
    """The closed amenity vocabulary shared by the catalog and the guest's requirements."""

    WIFI = "wifi"
    FREE_PARKING = "free parking"
    POOL = "pool"
    FITNESS_CENTER = "fitness center"
    PET_FRIENDLY = "pet friendly"
    BREAKFAST_INCLUDED = "breakfast included"
    RESTAURANT = "restaurant"
    BAR = "bar"
    SPA = "spa"
    AIRPORT_SHUTTLE = "airport shuttle"
    EV_CHARGING = "EV charging"
    BUSINESS_CENTER = "business center"
    LAUNDRY = "laundry"
    KITCHENETTE = "kitchenette"
    ROOM_SERVICE = "room service"
    HOT_TUB = "hot tub"
    ACCESSIBLE_ROOMS = "accessible rooms"
    MEETING_ROOMS = "meeting rooms"
    FRONT_DESK_24H = "24-hour front desk"
    BIKE_RENTAL = "bike rental"


class DateRange(BaseModel):
    """One continuous part of a stay: nights from ``start`` up to, not including, ``end``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: date = Field(description="Check-in date (YYYY-MM-DD): the first night of this part.")
    end: date = Field(
        description=(
            "Check-out date (YYYY-MM-DD), the morning the guest leaves; that night is not "
            "included. For a single night on D, use the day after D."
        )
    )

    @model_validator(mode="after")
    def _end_after_start(self) -> DateRange:
        if self.end <= self.start:
            raise ValueError(
                f"The check-out date {self.end} must be after the check-in date {self.start}; "
                f"for one night on {self.start} use check-out {self.start + timedelta(days=1)}."
            )
        return self

    @classmethod
    def single(cls, night: date) -> DateRange:
        """The one-night range for ``night`` (check-out the next morning)."""
        return cls(start=night, end=night + timedelta(days=1))

    def nights(self) -> list[date]:
        """Every charged night, in order; the check-out day is not one of them."""
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days)]


def nights_of(ranges: Iterable[DateRange]) -> list[date]:
    """All nights of a stay made of ``ranges``: check-out days excluded, de-duplicated, sorted."""
    return sorted({night for part in ranges for night in part.nights()})


_LABELS = {
    "budget_min": "minimum budget",
    "budget_max": "maximum budget",
    "max_miles_to_airport": "distance to the airport",
    "max_miles_to_downtown": "distance to downtown",
}


class StayCriteria(BaseModel):
    """Everything the guest wants from a stay; the argument of the ``capture_choices`` tool."""

    model_config = ConfigDict(extra="forbid")

    dates: list[DateRange] = Field(
        description=(
            "The stay as check-in/check-out pairs. Use one entry for a continuous stay; for "
            "separate nights or sub-ranges (e.g. 'June 3, June 5 and June 9 to 11') add one entry "
            "per part, a single night on D being {start: D, end: D + 1 day}. Resolve relative "
            "dates ('next Friday') against today's date; when the guest gives no year, use the "
            "next such date to come ('March 14' said in December is next year's). Never invent "
            "dates: ask the guest."
        )
    )
    budget_min: float | None = Field(
        default=None,
        description=(
            "Lowest acceptable price per night in USD, only when the guest states a minimum "
            "('at least $100 a night'); otherwise null."
        ),
    )
    budget_max: float | None = Field(
        default=None,
        description=(
            "Highest acceptable price per night in USD ('under $300 a night', 'max 700'); null "
            "when the guest has no limit. Budgets are per night, not for the whole stay."
        ),
    )
    room_type: RoomType | None = Field(
        default=None,
        description=(
            "'one bed' (a king, a queen, single), 'two beds' (two queens, double) or 'suite'; "
            "null when the guest has no preference."
        ),
    )
    amenities: list[Amenity] = Field(
        default_factory=list,
        description=(
            "Amenities the guest requires; a hotel must have every one of them. Map the guest's "
            "words onto this list (internet -> wifi, gym -> fitness center, dog -> pet friendly, "
            "jacuzzi -> hot tub). Leave out anything the guest says they do not need, and ask "
            "when unsure instead of guessing."
        ),
    )
    max_miles_to_airport: float | None = Field(
        default=None,
        description=(
            "Maximum distance in miles from Portland International Airport (PDX), e.g. 5 for "
            f"'within 5 miles of the airport'; use {NEAR_AIRPORT_MILES:g} for 'near the airport'; "
            "null when the guest does not care."
        ),
    )
    max_miles_to_downtown: float | None = Field(
        default=None,
        description=(
            "Maximum distance in miles from downtown Portland, e.g. 10 for 'under 10 miles from "
            f"the city center'; use {NEAR_DOWNTOWN_MILES:g} for 'close to downtown'; null when "
            "the guest does not care."
        ),
    )

    @field_validator("dates")
    @classmethod
    def _at_least_one_range(cls, value: list[DateRange]) -> list[DateRange]:
        if not value:
            raise ValueError("No dates yet: ask the guest when they check in and check out.")
        return value

    @field_validator("budget_min", "budget_max", "max_miles_to_airport", "max_miles_to_downtown")
    @classmethod
    def _positive(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and value <= 0:
            label = _LABELS.get(info.field_name or "", "value")
            raise ValueError(f"The {label} must be a positive number or null, not {value:g}.")
        return value

    @field_validator("amenities")
    @classmethod
    def _unique_amenities(cls, value: list[Amenity]) -> list[Amenity]:
        return list(dict.fromkeys(value))

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> StayCriteria:
        problems = [*self.date_problems(_today_from(info)), *self.budget_problems()]
        if problems:
            raise ValueError(" ".join(problems))
        return self

    def date_problems(self, today: date | None) -> list[str]:
        """What is wrong with the dates as of ``today`` (past check-in, too long a stay)."""
        problems = []
        if today is not None:
            past = sorted(part.start for part in self.dates if part.start < today)
            if past:
                problems.append(
                    f"The stay starting {past[0]} is in the past (today is {today}); ask the guest "
                    "for future dates. A date without a year is the next one to come."
                )
        count = len(self.nights())
        if count > MAX_NIGHTS:
            problems.append(
                f"The stay has {count} nights; we book at most {MAX_NIGHTS}. Check the dates "
                "with the guest."
            )
        return problems

    def budget_problems(self) -> list[str]:
        """What is wrong with the budget (a minimum above the maximum)."""
        low, high = self.budget_min, self.budget_max
        if low is not None and high is not None and low > high:
            return [
                f"The minimum budget (${low:g}) is above the maximum (${high:g}); ask the guest "
                "which one to change."
            ]
        return []

    def nights(self) -> list[date]:
        """Every charged night of the stay, sorted and without duplicates."""
        return nights_of(self.dates)

    def summary(self) -> str:
        """The criteria as short lines for the guest ("what do you have so far?")."""
        lines = [f"Dates: {describe_dates(self.dates)}"]
        lines.append(f"Budget: {describe_budget(self.budget_min, self.budget_max)}")
        lines.append(f"Room type: {self.room_type or 'any'}")
        wanted = ", ".join(self.amenities) if self.amenities else "none required"
        lines.append(f"Amenities: {wanted}")
        lines.append(f"Distance: {self.describe_distance()}")
        return "\n".join(lines)

    def describe_distance(self) -> str:
        """The distance limits in words ("anywhere in the area" without any)."""
        limits = []
        if self.max_miles_to_airport is not None:
            limits.append(f"within {self.max_miles_to_airport:g} mi of PDX airport")
        if self.max_miles_to_downtown is not None:
            limits.append(f"within {self.max_miles_to_downtown:g} mi of downtown Portland")
        return " and ".join(limits) if limits else "anywhere in the area"


def describe_dates(ranges: Iterable[DateRange]) -> str:
    """Human wording of a stay, e.g. "Jul 1, 2026 → Jul 6, 2026 (5 nights)"."""
    parts = list(ranges)
    text = "; ".join(f"{_day(p.start)} → {_day(p.end)}" for p in parts)
    count = len(nights_of(parts))
    return f"{text} ({count} night{'s' if count != 1 else ''})" if parts else "not given"


def describe_budget(low: float | None, high: float | None) -> str:
    """Human wording of a per-night budget."""
    if low is not None and high is not None:
        return f"${low:,.0f} to ${high:,.0f} a night"
    if high is not None:
        return f"up to ${high:,.0f} a night"
    if low is not None:
        return f"at least ${low:,.0f} a night"
    return "no limit"


def _day(value: date) -> str:
    return f"{value:%b} {value.day}, {value.year}"


def _today_from(info: ValidationInfo) -> date | None:
    """Today's date from the validation context, so validation never depends on the clock."""
    context = info.context if isinstance(info.context, Mapping) else {}
    today = context.get(TODAY)
    if today is not None and not isinstance(today, date):
        raise TypeError(f"validation context {TODAY!r} must be a datetime.date, got {today!r}")
    return today


def parse_criteria(data: Mapping[str, Any] | str, today: date) -> StayCriteria:
    """Validate tool arguments (a mapping or a JSON string) as of ``today``.

    Raises ``pydantic.ValidationError``; ``describe_errors`` turns it into text for the LLM.
    """
    context = {TODAY: today}
    if isinstance(data, str):
        return StayCriteria.model_validate_json(data, context=context)
    return StayCriteria.model_validate(data, context=context)


def describe_errors(error: ValidationError) -> str:
    """One readable line per validation problem, to send back to the LLM so it can fix its call."""
    lines = []
    for problem in error.errors():
        message = problem["msg"].removeprefix("Value error, ")
        where = ".".join(str(part) for part in problem["loc"])
        lines.append(f"- {where}: {message}" if where else f"- {message}")
    return "\n".join(lines)


class Hotel(BaseModel):
    """One catalog entry. Frozen (and hashable) because the catalog is read-only reference data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(pattern=r"^H\d{2}$", description="Stable identifier such as 'H01'.")
    name: str = Field(min_length=1)
    city: str = Field(min_length=1)
    state: Literal["OR", "WA"]
    description: str = Field(min_length=1, description="One line about the hotel, no address.")
    base_rate: Decimal = Field(gt=0, description="Base price in USD per night before multipliers.")
    room_types: tuple[RoomType, ...] = Field(min_length=1)
    amenities: tuple[Amenity, ...]
    miles_to_airport: float = Field(ge=0, description="Miles to Portland International (PDX).")
    miles_to_downtown: float = Field(ge=0, description="Miles to downtown Portland.")

    def has_all(self, amenities: Iterable[Amenity]) -> bool:
        """True when the hotel offers every amenity asked for."""
        return set(amenities) <= set(self.amenities)


class NightPrice(BaseModel):
    """The price of one night and why it is what it is."""

    model_config = ConfigDict(frozen=True)

    night: date
    price: Decimal = Field(description="USD, rounded to cents.")
    season: Decimal = Field(description="Season multiplier for the night's month.")
    holiday: str | None = Field(default=None, description="US federal holiday on this night.")
    weekend: bool = Field(description="Friday or Saturday night.")


class Quote(BaseModel):
    """A priced stay: one hotel, one room type, every night with its price."""

    model_config = ConfigDict(frozen=True)

    hotel: Hotel
    room_type: RoomType
    nights: tuple[NightPrice, ...] = Field(min_length=1)
    total: Decimal = Field(description="Sum of the nightly prices, USD.")
    average: Decimal = Field(description="Average price per night, USD rounded to cents.")

    @model_validator(mode="after")
    def _total_is_sum(self) -> Quote:
        if self.total != sum((n.price for n in self.nights), Decimal(0)):
            raise ValueError("The total of a quote must equal the sum of its nightly prices.")
        return self

    @property
    def night_count(self) -> int:
        """Number of charged nights."""
        return len(self.nights)

    @property
    def dates(self) -> list[date]:
        """The charged nights."""
        return [n.night for n in self.nights]
