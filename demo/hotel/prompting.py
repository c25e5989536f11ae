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

from demo.hotel.booking import Booking, Offer, sort_offers
from demo.hotel.compare import FEATURES
from demo.hotel.formats import (
    CRITERIA_JSON,
    LAST_COMPARISON,
    MATCHES,
    PAGE,
    PAGE_SIZE,
    SELECTED,
    SORTED_BY,
    STAY,
    TODAY,
    USUAL_STAY,
    label_line,
    page_count,
    page_value,
)
from demo.hotel.pricing import format_usd
from demo.hotel.returning import UsualStay
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


def explore_prompt(
    today: date, last_search: StayCriteria | None, usual: UsualStay | None = None
) -> str:
    """ExploreStep: collect the criteria; shows today's date, the last search and, for a
    returning guest, their usual stay (to offer, never to apply unasked)."""
    return EXPLORE.substitute(
        role=ROLE,
        today_line=label_line(TODAY, f"{today.isoformat()} ({today:%A})"),
        year=today.year,
        next_year=today.year + 1,
        room_types=", ".join(f"'{room}'" for room in RoomType),
        amenities=", ".join(str(amenity) for amenity in Amenity),
        last_search=_last_search(last_search),
        returning=_returning(usual),
    )


def _returning(usual: UsualStay | None) -> str:
    if usual is None:
        return "Nothing: treat the guest as new."
    return (
        f"The guest is back. Last time they chose {usual.describe()}.\n"
        f"{label_line(USUAL_STAY, usual.as_json())}\n"
        "Welcome them back. When you come to the room type, offer these as defaults instead "
        f'("Last time you chose {usual.describe()} — same again?"). Use them in '
        "`capture_choices` only if the guest agrees; a guest who declines, or names another "
        "room type, gets the usual questions. Never search with them unasked."
    )


def _last_search(criteria: StayCriteria | None) -> str:
    if criteria is None:
        return "No search yet."
    as_json = json.dumps(criteria.model_dump(mode="json"), ensure_ascii=False)
    return f"{criteria.summary()}\n{label_line(CRITERIA_JSON, as_json)}"


def present_prompt(
    offers: Sequence[Offer], sort: str, page: int, criteria: StayCriteria | None
) -> str:
    """PresentStep: every hotel found, in the order shown, and the page the guest sees."""
    dates = describe_dates(criteria.dates) if criteria else "unknown"
    state = [
        label_line(STAY, dates),
        label_line(MATCHES, len(offers)),
        label_line(SORTED_BY, sort),
        label_line(PAGE, page_value(page, page_count(len(offers)))),
    ]
    return PRESENT.substitute(
        role=ROLE,
        state="\n".join(state),
        page_size=PAGE_SIZE,
        offers=_lines(sort_offers(offers, sort)),
    )


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
        selected_line=label_line(SELECTED, _numbered(offers, selected) or "none yet"),
        last_comparison_line=label_line(LAST_COMPARISON, last),
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
    """The names that are in the list, numbered: "1. Riverside Inn; 3. Murray Creek Inn"."""
    by_name = {offer.name: offer for offer in offers}
    listed = [by_name[name] for name in names if name in by_name]
    return "; ".join(f"{offer.number}. {offer.name}" for offer in listed)
