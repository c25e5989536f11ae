"""CriteriaHelper of DecisionHotelFlow (research §3.1): the deterministic side of the criteria.

The five collectors own one criterion each; everything that must not depend on a model lives
here: the vocabularies, the snapshot read from the owners' state, the validation the router,
the readiness judge and the search all trust, the search request, and the two renderings the
guest reads (the criteria summary and the fallback result list). Strings are PicoFlow's.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

ROOM_TYPES: tuple[str, ...] = ("one bed", "two beds", "suite")
AMENITIES: tuple[str, ...] = (
    "freeWiFi", "nonSmoking", "freeBreakfast", "freeParking", "airportShuttle", "roomService",
    "fitnessCenter", "petFriendly", "digitalKey", "boutique", "onSiteRestaurant", "indoorPool",
    "businessCenter", "meetingRoom", "evCharging", "connectingRooms", "eveningReception",
    "concierge", "streaming", "kitchen", "tennis", "outdoorPool", "newHotel",
)  # fmt: skip
"""PicoFlow's 23 amenity names, in its order."""

FIELDS: tuple[str, ...] = ("dates", "budget", "room_type", "amenities", "distance")
"""The criterion fields in collection (and correction) order."""

OWNERS: dict[str, str] = {
    "dates": "DateRangeStep",
    "budget": "BudgetStep",
    "room_type": "RoomTypeStep",
    "amenities": "AmenityStep",
    "distance": "DistanceStep",
}
"""Which collector owns each field (step names: the persisted schema)."""

NEXT_STEP_ERROR = "CriteriaHelper.nextStep() requires a criterion field or a non-empty issue list."
_ISO_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")

StateReader = Callable[[str], dict[str, Any]]
"""Reads a collector's state by its step name (``flow.get_step_state`` behind it)."""


@dataclass(frozen=True)
class Issue:
    """One thing validation refuses: the criterion field and the message PicoFlow gives."""

    field: str
    message: str

    def to_json(self) -> dict[str, str]:
        """The JSON the judge's facts carry."""
        return {"field": self.field, "message": self.message}


def read_criteria(reader: StateReader) -> dict[str, Any]:
    """The snapshot of the five owners' state (never persisted): only what is well-formed.

    ``answered`` is true only when it is exactly ``True``; non-strings, non-finite numbers and
    unknown room types read as None, unknown amenities are dropped.
    """
    dates, budget = reader(OWNERS["dates"]), reader(OWNERS["budget"])
    room, amenities, distance = (reader(OWNERS[f]) for f in ("room_type", "amenities", "distance"))
    listed = amenities.get("amenities")
    return {
        "dates": {"answered": _yes(dates), "start": _text(dates, "start"),
                  "end": _text(dates, "end")},
        "budget": {"answered": _yes(budget), "min": _number(budget, "min"),
                   "max": _number(budget, "max")},
        "roomType": {"answered": _yes(room), "roomType": _room(room.get("roomType"))},
        "amenities": {
            "answered": _yes(amenities),
            "amenities": [a for a in listed if a in AMENITIES] if isinstance(listed, list) else [],
        },
        "distance": {"answered": _yes(distance), "airport": _number(distance, "airport"),
                     "cityCenter": _number(distance, "cityCenter")},
    }  # fmt: skip


def _yes(state: dict[str, Any]) -> bool:
    return state.get("answered") is True


def _text(state: dict[str, Any], key: str) -> str | None:
    value = state.get(key)
    return value if isinstance(value, str) else None


def _number(state: dict[str, Any], key: str) -> float | None:
    value = state.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _room(value: Any) -> str | None:
    return value if value in ROOM_TYPES else None


def strict_day(value: Any) -> date | None:
    """``value`` as a real calendar day when it is exactly ``YYYY-MM-DD``, else None."""
    if not isinstance(value, str) or not _ISO_DAY.match(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def validate_criteria(snapshot: dict[str, Any], today: date) -> list[Issue]:
    """Every issue, at most one per field, in correction order (the table of §3.1)."""
    checks = (_date_issue, _budget_issue, _room_issue, _amenity_issue, _distance_issue)
    found = [check(snapshot, today) for check in checks]
    return [issue for issue in found if issue is not None]


def _date_issue(snapshot: dict[str, Any], today: date) -> Issue | None:
    dates = snapshot["dates"]
    if not dates["answered"]:
        return Issue("dates", "Stay dates have not been answered.")
    start, end = strict_day(dates["start"]), strict_day(dates["end"])
    if start is None or end is None or end <= start:
        return Issue("dates", "Checkout must be after a valid check-in date.")
    if start <= today:
        return Issue("dates", "Check-in must be after the current date.")
    return None


def _budget_issue(snapshot: dict[str, Any], today: date) -> Issue | None:
    budget = snapshot["budget"]
    if not budget["answered"]:
        return Issue("budget", "Nightly budget has not been answered.")
    low, high = budget["min"], budget["max"]
    negative = any(v is not None and v < 0 for v in (low, high))
    if negative or (low is not None and high is not None and low > high):
        return Issue(
            "budget", "Budget values must be nonnegative and minimum cannot exceed maximum."
        )
    return None


def _room_issue(snapshot: dict[str, Any], today: date) -> Issue | None:
    room = snapshot["roomType"]
    if not room["answered"] or room["roomType"] is None:
        return Issue("room_type", "Room type has not been answered.")
    if room["roomType"] not in ROOM_TYPES:
        return Issue("room_type", "Room type is not supported.")
    return None


def _amenity_issue(snapshot: dict[str, Any], today: date) -> Issue | None:
    amenities = snapshot["amenities"]
    if not amenities["answered"]:
        return Issue("amenities", "Amenity preferences have not been answered.")
    if any(a not in AMENITIES for a in amenities["amenities"]):
        return Issue("amenities", "An amenity is not supported.")
    return None


def _distance_issue(snapshot: dict[str, Any], today: date) -> Issue | None:
    distance = snapshot["distance"]
    if not distance["answered"]:
        return Issue("distance", "Distance preferences have not been answered.")
    if any(v is not None and v < 0 for v in (distance["airport"], distance["cityCenter"])):
        return Issue("distance", "Distance limits must be nonnegative.")
    return None


def unresolved(issues: Sequence[Issue]) -> list[str]:
    """The fields with an issue, in collection order, each once."""
    return list(dict.fromkeys(issue.field for issue in issues))


def next_field(target: str | Sequence[Issue]) -> str:
    """The field to collect next: `target` itself, or the first issue's (``nextStep``).

    Raises:
        ValueError: an empty issue list, or a name that is no criterion field.
    """
    if isinstance(target, str):
        if target not in OWNERS:
            raise ValueError(NEXT_STEP_ERROR)
        return target
    if not target:
        raise ValueError(NEXT_STEP_ERROR)
    return target[0].field


def to_search_request(snapshot: dict[str, Any], today: date) -> dict[str, Any]:
    """The ``search_hotels`` arguments of a valid snapshot (``toSearchRequest``).

    Raises:
        ValueError: the snapshot is not valid; the issues' messages joined by spaces.
    """
    issues = validate_criteria(snapshot, today)
    if issues:
        raise ValueError(" ".join(issue.message for issue in issues))
    budget, distance = snapshot["budget"], snapshot["distance"]
    return {
        "startDate": snapshot["dates"]["start"],
        "endDate": snapshot["dates"]["end"],
        "amenities": list(snapshot["amenities"]["amenities"]),
        "roomTypes": [snapshot["roomType"]["roomType"]],
        "budget": {"min": budget["min"], "max": budget["max"]},
        "maxDistanceMiles": {"airport": distance["airport"], "cityCenter": distance["cityCenter"]},
    }


def js_number(value: float) -> str:
    """A number as JavaScript prints it in a template literal: ``200``, ``150.5``."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def usd(value: float) -> str:
    """en-US currency, two decimals, half away from zero: ``$2,501.25``."""
    cents = Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"-${-cents:,.2f}" if cents < 0 else f"${cents:,.2f}"


def render_criteria_summary(snapshot: dict[str, Any]) -> str:
    """The criteria as the guest reads them (``renderCriteriaSummary``)."""
    return "\n".join(
        [
            "Current Portland hotel criteria:",
            f"- Dates: {_dates_text(snapshot['dates'])}",
            f"- Nightly budget: {_budget_text(snapshot['budget'])}",
            f"- Room type: {_room_text(snapshot['roomType'])}",
            f"- Amenities: {_amenities_text(snapshot['amenities'])}",
            f"- Distance: {_distance_text(snapshot['distance'])}",
        ]
    )


def _dates_text(dates: dict[str, Any]) -> str:
    if not dates["answered"]:
        return "not set"
    return f"{dates['start'] or 'not set'} to {dates['end'] or 'not set'}"


def _budget_text(budget: dict[str, Any]) -> str:
    if not budget["answered"]:
        return "not set"
    low, high = budget["min"], budget["max"]
    if low is None and high is None:
        return "no preference"
    low_text = f"${js_number(low)}" if low is not None else "no minimum"
    high_text = f"${js_number(high)}" if high is not None else "no maximum"
    return f"{low_text} to {high_text}"


def _room_text(room: dict[str, Any]) -> str:
    return (room["roomType"] or "not set") if room["answered"] else "not set"


def _amenities_text(amenities: dict[str, Any]) -> str:
    if not amenities["answered"]:
        return "not set"
    return ", ".join(amenities["amenities"]) or "no preference"


def _distance_text(distance: dict[str, Any]) -> str:
    if not distance["answered"]:
        return "not set"
    parts = []
    if distance["airport"] is not None:
        parts.append(f"airport within {js_number(distance['airport'])} miles")
    if distance["cityCenter"] is not None:
        parts.append(f"city center within {js_number(distance['cityCenter'])} miles")
    return "; ".join(parts) or "no preference"


NO_RESULTS = "No hotels matched the current criteria. Tell me which criterion to revise."
RESULTS_HEADER = "Here are the matching Portland hotels:"
RESULTS_FOOTER = (
    "Reply with a hotel name or number to book, or tell me which search criterion to revise."
)


def render_hotel_results(hotels: Sequence[dict[str, Any]]) -> str:
    """The result list the judge falls back to (``renderHotelResults``)."""
    if not hotels:
        return NO_RESULTS
    lines = [RESULTS_HEADER]
    lines += [f"{i}. {h['hotelName']} — total {usd(h['total'])}" for i, h in enumerate(hotels, 1)]
    return "\n".join([*lines, "", RESULTS_FOOTER])
