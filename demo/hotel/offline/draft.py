"""The criteria the offline model has gathered so far, rebuilt from the conversation each call.

An LLM keeps the criteria "in its head" by rereading the conversation; the offline model does the
same: it starts from the last search the prompt shows, then replays every event — each tool call
of ``capture_choices`` resets the draft to the criteria it sent, each guest sentence updates it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import date, timedelta
from functools import lru_cache
from typing import Any

from pydantic import ValidationError

from demo.hotel.offline._criteria import AMENITY_PATTERNS, amenity_spelling
from demo.hotel.offline._text import NUMBER, NUMBER_WORDS, negated, normalize
from demo.hotel.offline.language import (
    parse_amenities,
    parse_budget,
    parse_dates,
    parse_distances,
    parse_room_type,
    says_how_long,
)
from demo.hotel.types import (
    Amenity,
    DateRange,
    RoomType,
    StayCriteria,
    describe_budget,
    describe_dates,
    nights_of,
)

_CLAUSES = re.compile(r"[,;.!?]|\bbut\b|\band\b|\balso\b|\bplus\b")
_DROP = re.compile(
    r"\b(?:drop|remove|forget(?: about)?|skip|without|no longer need|take out|scrap)\b[^,;.]*$"
)
_ANY_ROOM = re.compile(
    r"\bany (?:room|room type|kind of room|bed)\b|\broom type doesn'?t matter\b"
    r"|\b(?:drop|remove|forget(?: about)?|scrap|skip|ditch|lose) (?:the |a |my )?(?:suite|room type"
    r"|room preference|two beds|one bed|king|queen|double)s?\b"
)
_ANYWHERE = re.compile(
    r"\banywhere\b|\bany distance\b|\bdistance doesn'?t matter\b|\bno distance limit"
)
_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"raising the budget to \$([\d,]+)", re.I), "budget_max"),
    (re.compile(r"lowering the minimum to \$([\d,]+)", re.I), "budget_min"),
    (re.compile(r"removing the minimum budget()", re.I), "budget_min"),
    (re.compile(r"allowing up to ([\d.]+) miles from the airport", re.I), "airport"),
    (re.compile(r"allowing up to ([\d.]+) miles from downtown", re.I), "downtown"),
    (re.compile(r"any room type instead of()", re.I), "room_type"),
    (re.compile(r"dropping the (.+?) requirement", re.I), "amenities"),
)
"""The changes ``catalog.relax_advice`` proposes, and the field each one changes."""


@dataclass(frozen=True)
class Draft:
    """Criteria in progress: like ``StayCriteria``, but anything may still be missing."""

    dates: tuple[DateRange, ...] = ()
    budget_min: float | None = None
    budget_max: float | None = None
    room_type: RoomType | None = None
    amenities: tuple[Amenity, ...] = ()
    airport: float | None = None
    downtown: float | None = None

    @classmethod
    def from_args(cls, args: dict[str, Any] | None) -> Draft:
        """The draft a ``capture_choices`` call (or the prompt's criteria JSON) describes."""
        try:
            criteria = StayCriteria.model_validate(args or {})
        except ValidationError:
            return cls()
        return cls(
            dates=tuple(criteria.dates),
            budget_min=criteria.budget_min,
            budget_max=criteria.budget_max,
            room_type=criteria.room_type,
            amenities=tuple(criteria.amenities),
            airport=criteria.max_miles_to_airport,
            downtown=criteria.max_miles_to_downtown,
        )

    def criteria(self) -> StayCriteria:
        """The draft as ``StayCriteria`` without validation (dates may still be missing)."""
        return StayCriteria.model_construct(
            dates=list(self.dates),
            budget_min=self.budget_min,
            budget_max=self.budget_max,
            room_type=self.room_type,
            amenities=list(self.amenities),
            max_miles_to_airport=self.airport,
            max_miles_to_downtown=self.downtown,
        )

    def args(self) -> dict[str, Any]:
        """The ``capture_choices`` arguments (JSON values, nulls included)."""
        return self.criteria().model_dump(mode="json")

    def brief(self) -> str:
        """One line: "Jul 1, 2026 → Jul 6, 2026 (5 nights), two beds, up to $300 a night"."""
        parts = [describe_dates(self.dates)] if self.dates else []
        if self.budget_min is not None or self.budget_max is not None:
            parts.append(describe_budget(self.budget_min, self.budget_max))
        if self.room_type:
            parts.append(str(self.room_type))
        if self.amenities:
            parts.append("with " + ", ".join(self.amenities))
        if self.airport is not None:
            parts.append(f"within {self.airport:g} mi of PDX airport")
        if self.downtown is not None:
            parts.append(f"within {self.downtown:g} mi of downtown")
        return ", ".join(parts) if parts else "nothing yet"

    def missing(self) -> list[str]:
        """The optional criteria the guest has not mentioned, as words for a question."""
        asks = []
        if self.budget_min is None and self.budget_max is None:
            asks.append("a nightly budget")
        if self.room_type is None:
            asks.append("a room type (one bed, two beds or a suite)")
        if not self.amenities:
            asks.append("amenities such as wifi, parking, a pool, a gym or pets")
        if self.airport is None and self.downtown is None:
            asks.append("a maximum distance to the airport or downtown")
        return asks

    def heard(self, text: str, today: date) -> Draft:
        """The draft after the guest says ``text``: what it names changes, the rest stays.

        Remembered per (draft, text, today): the offline model replays the whole visible
        conversation every turn, and a turn should pay only for its new message (issue 25).
        """
        return _heard(self, text, today)

    def with_advice(self, advice: str) -> Draft:
        """The draft after the first change ``catalog.relax_advice`` proposed in ``advice``."""
        found = [
            (m.start(), m, field) for pattern, field in _ADVICE if (m := pattern.search(advice))
        ]
        if not found:
            return self
        _, match, field = min(found, key=lambda item: item[0])
        value = match.group(1).replace(",", "")
        if field == "amenities":
            return replace(self, amenities=tuple(a for a in self.amenities if a != value))
        if field == "room_type":
            return replace(self, room_type=None)
        number = float(value) if value else None
        if field == "budget_max":
            return replace(self, budget_max=number)
        if field == "budget_min":
            return replace(self, budget_min=number)
        if field == "airport":
            return replace(self, airport=number)
        return replace(self, downtown=number)


_DROP_BUDGET = re.compile(
    r"\b(?:drop|remove|forget(?: about)?|scrap|no|without|ditch|lose|clear|take off)"
    r"\s+(?:the\s+|a\s+|my\s+|any\s+)?(?:budget|price limit|price cap|max(?:imum)? price)\b"
)
_NIGHTS = re.compile(rf"\b(?P<n>\d+|{NUMBER}|a) (?P<unit>nights?|weeks?)\b")
_LONGER = re.compile(
    rf"\b(?:add|one more|an extra|extra|another|extend(?: it)? by)\s*"
    rf"(?P<n>\d+|{NUMBER}|a|an)?\s*(?:more\s+)?nights?\b"
)
_SHORTER = re.compile(
    rf"\b(?:(?P<n>\d+|{NUMBER}|a|an|one) nights? (?:less|fewer|shorter)"
    r"|(?:cut|drop|remove|shorten(?: it)? by) (?:a|one|(?P<m>\d+)) nights?)\b"
)
_LATER = re.compile(
    rf"\b(?:arriv\w*|check(?:ing)?[ -]?in|start\w*|come|coming)\s+"
    rf"(?:(?P<n>\d+|{NUMBER}|a|an|one) days? )?(?P<dir>later|earlier)\b"
)


_PRICE = re.compile(
    r"(?:\$\s?\d[\d,]*|\d{2}[\d,]*)(?:\.\d+)?\s*(?:dollars|bucks|usd)?\s*(?:a|per|/|each)\s*night"
)
_RELATIVE = re.compile(
    r"\b(?:today|tonight|tomorrow|week|weekend|month|next|this|monday|tuesday|wednesday|thursday"
    r"|fortnight|wks?\b|days? (?:from|after)\b"
    r"|in (?:about |around |roughly |approximately )?\S+ days?\b"
    r"|friday|saturday|sunday|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec"
    r"|(?:mon|tues?|wed|thu|thurs?|fri|sat|sun)\b)|\d/\d|\d-\d"
)
"""Dates resolved against today; any other day ("the 8th") belongs to the stay being planned."""
_CHECK_OUT = re.compile(r"\bcheck(?:ing)?[ -]?out\b|\bleav\w*|\bdepart\w*")
_CHECK_IN = re.compile(
    r"\bcheck(?:ing)?[ -]?in\b|\barriv\w*|\b(?:get|getting|come|coming) in\b|\bstart\w*"
)
_KEPT_END = re.compile(
    r"\b(?:same|keep(?:ing)?(?: the| my)?)\s+(?:check(?:ing)?[ -]?(?:in|out)|arrival|departure)"
    r"(?:\s+(?:date|day))?\b"
)
"""An end of the stay the guest keeps ("same checkout"): it names no day to move."""


@lru_cache(maxsize=4096)
def _heard(before: Draft, text: str, today: date) -> Draft:
    """``Draft.heard``, computed once per (draft, text, today): every part of it is pure."""
    draft = before
    anchored = before.dates and not _RELATIVE.search(normalize(text))
    dates = parse_dates(text, before.dates[0].start if anchored else today)
    if dates:
        draft = replace(draft, dates=_moved(before.dates, tuple(dates), normalize(text)))
    elif before.dates:
        said = _PRICE.sub(" ", normalize(text))
        draft = replace(draft, dates=_corrected(before.dates, said))
    if _DROP_BUDGET.search(normalize(text)):
        draft = replace(draft, budget_min=None, budget_max=None)
    draft = _with_distances(_with_room(_with_budget(draft, text), text), text)
    return replace(draft, amenities=_amenities(draft.amenities, text))


def _moved(
    current: tuple[DateRange, ...], said: tuple[DateRange, ...], text: str
) -> tuple[DateRange, ...]:
    """A single day named as the check-out (or check-in) moves only that end of the stay.

    A single day that is neither, said with no length ("next Friday instead", "make it in two
    weeks"), moves the whole stay and keeps its length: the guest changed when, not how long.
    """
    if not current or len(said) != 1 or (said[0].end - said[0].start).days != 1:
        return said
    day = said[0].start
    start, end = current[0].start, current[-1].end
    text = _KEPT_END.sub(" ", text)
    try:
        if _CHECK_OUT.search(text) and not _CHECK_IN.search(text):
            return (DateRange(start=start, end=day),)
        if _CHECK_IN.search(text) and not _CHECK_OUT.search(text):
            return (DateRange(start=day, end=end if day < end else day + (end - start)),)
    except ValueError:
        return said
    if len(current) == 1 and not says_how_long(text):
        return (DateRange(start=day, end=day + (end - start)),)
    return said


def _count(token: str | None) -> int:
    if not token or token in ("a", "an"):
        return 1
    return int(token) if token.isdigit() else NUMBER_WORDS.get(token, 1)


def _corrected(dates: tuple[DateRange, ...], said: str) -> tuple[DateRange, ...]:
    """Date corrections that name no date: "for 3 nights", "one more night", "a day later"."""
    start, end = dates[0].start, dates[-1].end
    try:
        if (found := _LONGER.search(said)) is not None:
            return (DateRange(start=start, end=end + timedelta(days=_count(found["n"]))),)
        if (found := _SHORTER.search(said)) is not None:
            days = _count(found["n"] or found["m"])
            return (DateRange(start=start, end=end - timedelta(days=days)),)
        if (found := _LATER.search(said)) is not None:
            days = _count(found["n"]) * (1 if found["dir"] == "later" else -1)
            return (DateRange(start=start + timedelta(days=days), end=end),)
        if (found := _NIGHTS.search(said)) is not None:
            days = _count(found["n"]) * (7 if found["unit"].startswith("week") else 1)
            return (DateRange(start=start, end=start + timedelta(days=days)),)
    except ValueError:
        return dates
    return dates


_TOTAL = re.compile(
    r"\$?(?P<n>\d{2,3}(?:,\d{3})+|\d{2,})\s*(?:dollars|bucks|usd)?\s*(?:in total|total|altogether"
    r"|all in|for the (?:whole|entire) (?:stay|trip))\b"
    r"|\btotal(?: budget)?(?: of| is)?(?: under| max| up to| at most)?\s+\$?(?P<m>\d[\d,]*\d)"
)
"""A budget for the whole stay: "500 total", "a total of $600", "$450 for the whole stay"."""


def _with_total(draft: Draft, text: str) -> Draft | None:
    """A budget for the whole stay, as the per-night budget every search uses (total / nights).

    The reply shows the nightly figure, so the guest sees how it was read. None when no total
    is named.
    """
    found = _TOTAL.search(normalize(text))
    nights = len(nights_of(draft.dates))
    if found is None:
        return None
    if not nights:
        return draft  # not a nightly budget, and no nights to divide it by yet
    total = float((found["n"] or found["m"]).replace(",", ""))
    return replace(draft, budget_min=None, budget_max=round(total / nights, 2))


def _with_budget(draft: Draft, text: str) -> Draft:
    total = _with_total(draft, text)
    if total is not None:
        return total
    budget = parse_budget(text)
    if budget is None:
        return draft
    if budget.minimum is None and budget.maximum is None:
        return replace(draft, budget_min=None, budget_max=None)
    low = budget.minimum if budget.minimum is not None else draft.budget_min
    high = budget.maximum if budget.maximum is not None else draft.budget_max
    if low is not None and high is not None and low > high:  # the newer limit wins
        low, high = budget.minimum, budget.maximum
    return replace(draft, budget_min=low, budget_max=high)


def _with_room(draft: Draft, text: str) -> Draft:
    if _ANY_ROOM.search(normalize(text)):
        return replace(draft, room_type=None)
    room = parse_room_type(text)
    return draft if room is None else replace(draft, room_type=room)


def _with_distances(draft: Draft, text: str) -> Draft:
    if _ANYWHERE.search(normalize(text)):
        return replace(draft, airport=None, downtown=None)
    limits = parse_distances(text)
    if limits is None:
        return draft
    airport = limits.airport_max if limits.airport_max is not None else draft.airport
    downtown = limits.downtown_max if limits.downtown_max is not None else draft.downtown
    return replace(draft, airport=airport, downtown=downtown)


def _amenities(current: tuple[Amenity, ...], text: str) -> tuple[Amenity, ...]:
    """Add the amenities the guest asks for; remove those they drop ("no pool", "skip parking")."""
    dropped = set()
    for clause in _CLAUSES.split(amenity_spelling(text)):
        for amenity, pattern in AMENITY_PATTERNS.items():
            for match in pattern.finditer(clause):
                before = clause[: match.start()]
                if negated(clause, match.start(), match.end()) or _DROP.search(before):
                    dropped.add(amenity)
    wanted = (set(current) | set(parse_amenities(text))) - dropped
    return tuple(amenity for amenity in Amenity if amenity in wanted)
