"""TravelFlow's types: PicoFlow's Zod schemas (`travel-types.ts`) as pydantic models.

`TravelPlan` is `submit_plan`'s argument schema, field for field: an enum, required fields,
defaults (`adults` 1, `travel_class` "ECONOMY"), an optional budget and two dates. Zod's dates
took the model's date-time strings as sent; here a date is validated (ISO, with or without a
time, or the US `MM/DD/YYYY` the field descriptions prefer) and stored as ``YYYY-MM-DD``.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field, PlainSerializer


def _whole(value: float) -> float | int:
    return int(value) if value == int(value) else value


# A Zod number: "number" in the schema; a whole number is stored as an int, as the model sent it
Number = Annotated[float, PlainSerializer(_whole, return_type=float | int)]
UserIntent = Literal["full_plan", "flights_only", "hotels_only", "activities_only"]

_US_DATE = re.compile(r"^\s*(\d{1,2})/(\d{1,2})/(\d{4})\s*$")


def _to_date(value: Any) -> Any:
    """Accept what a model sends for a date: ISO (a time of day is dropped) or US M/D/Y."""
    if isinstance(value, str):
        if us := _US_DATE.match(value):
            month, day, year = (int(part) for part in us.groups())
            return date(year, month, day)
        if "T" in value or " " in value.strip():
            try:
                return datetime.fromisoformat(value.strip().replace("Z", "+00:00")).date()
            except ValueError:
                return value  # pydantic says what is wrong with it
    return value


TripDate = Annotated[date, BeforeValidator(_to_date)]


class TravelPlan(BaseModel):
    """TravelPlanSchema: the structured trip request the planner extracts."""

    user_intent: UserIntent
    origin: str | None = Field(description="starting location")
    destination: str = Field(description="final destination")
    departure_date: TripDate = Field(description="US date format preferred")
    return_date: TripDate = Field(description="US date format preferred")
    duration_days: Number = Field(description="number of days")
    adults: Number = Field(default=1)
    travel_class: str = Field(default="ECONOMY")
    budget: Number | None = Field(default=None, description="total budget")


class FlightOption(BaseModel):
    """One flight of the mock search."""

    id: str
    airline: str
    price: Number
    departure_time: str
    arrival_time: str


class HotelOption(BaseModel):
    """One hotel of the mock search."""

    id: str
    name: str
    price_per_night: Number
    rating: Number
    location: str


class ActivityOption(BaseModel):
    """One activity of the mock search."""

    id: str
    name: str
    price: Number
    duration: str
    description: str


class TravelPackage(BaseModel):
    """A package the synthesiser offers: one flight object, one hotel, some activities."""

    name: str = Field(description="creative package name")
    flight: FlightOption | None = None
    hotel: HotelOption | None = None
    activities: list[ActivityOption] = Field(default_factory=list)
    total_cost: Number
    budget_comment: str
