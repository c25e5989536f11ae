"""What the offline decision model compares: a request's values against the saved criteria.

`changed` is what the router calls a value "not yet reflected": a field the request gives a
value for that differs from the saved one, after the request applies (an end of the budget, a
place or an added amenity it does not name is kept). `replay_contradictions` is the readiness
judge's reading of the history: the requests replayed oldest first, and a field named only
when its latest explicit value is not what is saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from typing import Any

from demo.decision_hotel.reading import Said, read

ORDER = ("dates", "budget", "room_type", "amenities", "distance")


def changed(said: Said, criteria: dict[str, Any]) -> list[str]:
    """The fields `said` gives a value for that the saved criteria do not reflect yet."""
    return [name for name in said.mentions() if not _reflected(name, said, criteria)]


def _reflected(name: str, said: Said, criteria: dict[str, Any]) -> bool:
    if name == "dates":
        saved = criteria["dates"]
        assert said.start is not None and said.end is not None
        same = (saved["start"], saved["end"]) == (said.start.isoformat(), said.end.isoformat())
        return bool(saved["answered"]) and same
    if name == "budget":
        saved = criteria["budget"]
        return bool(saved["answered"]) and all(
            saved[k] == v for k, v in (said.budget or {}).items()
        )
    if name == "room_type":
        saved = criteria["roomType"]
        return bool(saved["answered"]) and saved["roomType"] == said.room_type
    if name == "amenities":
        saved = criteria["amenities"]
        before = saved["amenities"] if saved["answered"] else None
        after = said.amenities.applied_to(before) if said.amenities else None
        return bool(saved["answered"]) and after is not None and set(after) == set(before or [])
    saved = criteria["distance"]
    return bool(saved["answered"]) and all(saved[k] == v for k, v in (said.distance or {}).items())


def partly_new(said: Said, criteria: dict[str, Any]) -> list[str]:
    """Fields the request is about without a usable value ("a double", "dec 10" alone, "near
    the airport"), unless the part it does say is already saved: their owner asks."""
    found = []
    for name in said.touches():
        if name in said.mentions():
            continue
        if name == "dates" and _dates_part_saved(said, criteria["dates"]):
            continue
        found.append(name)
    return found


def _dates_part_saved(said: Said, saved: dict[str, Any]) -> bool:
    if not saved["answered"] or said.date_trouble or said.several_ranges:
        return False
    start = said.start.isoformat() if said.start else None
    end = said.end.isoformat() if said.end else None
    if (start is None) != (end is None):  # one day alone: it may be either end ("out the 21st")
        return bool((start or end) in (saved["start"], saved["end"]))
    return bool(start == saved["start"] or end == saved["end"])


@dataclass
class _Evidence:
    """The latest explicit value of each field the requests give, replayed in order."""

    dates: tuple[str, str] | None = None
    budget: dict[str, Any] = field(default_factory=dict)
    room_type: str | None = None
    amenities: list[str] | None = None  # a whole list, once one was said
    required: set[str] = field(default_factory=set)  # added before any whole list
    forbidden: set[str] = field(default_factory=set)
    distance: dict[str, Any] = field(default_factory=dict)

    def add(self, said: Said) -> None:
        if said.start is not None and said.end is not None:
            self.dates = (said.start.isoformat(), said.end.isoformat())
        self.budget.update(said.budget or {})
        self.room_type = said.room_type or self.room_type
        self.distance.update(said.distance or {})
        if said.amenities is not None:
            self._amenities(said)

    def _amenities(self, said: Said) -> None:
        assert said.amenities is not None
        whole = not said.amenities.adds and said.amenities.wanted is not None
        if self.amenities is not None or whole:
            self.amenities = said.amenities.applied_to(self.amenities)
            return
        wanted, removed = set(said.amenities.wanted or []), set(said.amenities.removed)
        self.required = (self.required | wanted) - removed
        self.forbidden = (self.forbidden | removed) - wanted


def replay_contradictions(requests: list[str], criteria: dict[str, Any], today: date) -> list[str]:
    """The fields whose latest explicit value in `requests` is not the saved one."""
    evidence = _Evidence()
    for text in requests:
        said = read(text, today)
        if not said.withdrawn:
            evidence.add(said)
    found = []
    dates, budget = criteria["dates"], criteria["budget"]
    if evidence.dates is not None and evidence.dates != (dates["start"], dates["end"]):
        found.append("dates")
    if any(budget[k] != v for k, v in evidence.budget.items()):
        found.append("budget")
    if evidence.room_type is not None and evidence.room_type != criteria["roomType"]["roomType"]:
        found.append("room_type")
    saved = set(criteria["amenities"]["amenities"])
    if evidence.amenities is not None and set(evidence.amenities) != saved:
        found.append("amenities")
    elif not evidence.required <= saved or evidence.forbidden & saved:
        found.append("amenities")
    if any(criteria["distance"][k] != v for k, v in evidence.distance.items()):
        found.append("distance")
    return found
