"""HotelFlow's prompts: the markdown files in ``prompts/``, read once, filled with the state.

Each ``*_prompt`` function takes typed values and returns the text a step's ``get_prompt()``
sends. Templates use ``$name`` placeholders (``string.Template``), so markdown braces need no
escaping, and a placeholder left unfilled raises ``KeyError`` instead of reaching the model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import date
from importlib import resources
from string import Template

from demo.hotel.booking import Booking, Offer
from demo.hotel.compare import FEATURES
from demo.hotel.pricing import format_usd
from demo.hotel.types import Amenity, RoomType, StayCriteria, describe_dates


def _load(name: str) -> Template:
    source = resources.files("demo.hotel") / "prompts" / f"{name}.md"
    return Template(source.read_text(encoding="utf-8").strip())


ROLE = _load("role").template
EXPLORE = _load("explore")
PRESENT = _load("present")
COMPARE = _load("compare")
BOOKED = _load("booked")
FAREWELL = _load("farewell").template


def explore_prompt(today: date, last_search: StayCriteria | None) -> str:
    """ExploreStep: collect the criteria; shows today's date and the last search, if any."""
    return EXPLORE.substitute(
        role=ROLE,
        today=today.isoformat(),
        weekday=f"{today:%A}",
        year=today.year,
        room_types=", ".join(f"'{room}'" for room in RoomType),
        amenities=", ".join(str(amenity) for amenity in Amenity),
        last_search=_last_search(last_search),
    )


def _last_search(criteria: StayCriteria | None) -> str:
    if criteria is None:
        return "No search yet."
    as_json = json.dumps(criteria.model_dump(mode="json"), ensure_ascii=False)
    return f"{criteria.summary()}\nCriteria JSON: {as_json}"


def present_prompt(offers: Sequence[Offer], matches: int, criteria: StayCriteria | None) -> str:
    """PresentStep: the numbered list the guest chooses from."""
    dates = describe_dates(criteria.dates) if criteria else "unknown"
    shown = f"the {len(offers)} cheapest of {matches}" if matches > len(offers) else "all"
    stay = f"Stay: {dates}. Hotels found: {matches} (showing {shown})."
    return PRESENT.substitute(role=ROLE, stay=stay, offers=_lines(offers))


def compare_prompt(
    offers: Sequence[Offer],
    selected: Sequence[str],
    last_hotels: Sequence[str],
    feature: str | None,
) -> str:
    """CompareStep: the list, the hotels already selected, and the last comparison."""
    last = f"{_numbered(offers, last_hotels)} on {feature}" if feature and last_hotels else "none"
    return COMPARE.substitute(
        role=ROLE,
        offers=_lines(offers),
        selected=_numbered(offers, selected) or "none yet",
        last_comparison=last,
        features=", ".join(FEATURES),
    )


def booked_prompt(booking: Booking) -> str:
    """EndStep after a booking: the closing line must name hotel, dates, total, confirmation."""
    return BOOKED.substitute(
        hotel=booking.hotel,
        city=booking.city,
        room_type=booking.room_type,
        dates=booking.dates,
        total=format_usd(booking.total),
        confirmation=booking.confirmation,
    )


def farewell_prompt() -> str:
    """EndStep when the guest leaves without booking."""
    return FAREWELL


def _lines(offers: Sequence[Offer]) -> str:
    return "\n".join(offer.line() for offer in offers)


def _numbered(offers: Sequence[Offer], names: Sequence[str]) -> str:
    """ "1. Riverside Inn; 3. Murray Creek Inn" for the names that are in the list."""
    by_name = {offer.name: offer for offer in offers}
    listed = [by_name[name] for name in names if name in by_name]
    return "; ".join(f"{offer.number}. {offer.name}" for offer in listed)
