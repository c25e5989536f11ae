"""The effective date in the customer's words, against the prompt's CURRENT_DATE.

"2027-01-15", "1/15/2027", "Jan 15", "the 15th of January", "the first of next month",
"tomorrow", "in two weeks", "next Monday" are dates; a day without a year is the next one to
come. "Next month", "asap" or "soon" name no day: they are `vague`, and the model asks.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from demo.insurance.offline.words import NUMBER_WORDS
from demo.reading import range_words

MONTHS = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sept": 9,
    "sep": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "fifth": 5,
    "sixth": 6,
    "seventh": 7,
    "eighth": 8,
    "ninth": 9,
    "tenth": 10,
    "fifteenth": 15,
    "twentieth": 20,
}
_DAY = r"(\d{1,2}|" + "|".join(_ORDINALS) + r")(?:st|nd|rd|th)?"
_PATTERNS = [
    ("iso", re.compile(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b")),
    ("us", re.compile(r"\b(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?\b")),
    ("md", re.compile(rf"\b({_MONTH})\.?\s+{_DAY}\b(?:,?\s*(\d{{4}}))?", re.I)),
    ("dm", re.compile(rf"\b{_DAY}\s+(?:of\s+)?({_MONTH})\b\.?(?:,?\s*(\d{{4}}))?", re.I)),
    ("next_month", re.compile(rf"\b(?:the\s+)?{_DAY}\s+of\s+next\s+month\b", re.I)),
    ("start_next", re.compile(r"\b(?:start|beginning)\s+of\s+next\s+month\b", re.I)),
    ("first_year", re.compile(r"\b(?:new\s+year'?s(?:\s+day)?|first\s+of\s+the\s+year)\b", re.I)),
    ("tomorrow", re.compile(r"\btomorrow\b", re.I)),
    (
        "in",
        re.compile(r"\bin\s+(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month)s?\b", re.I),
    ),
    ("weekday", re.compile(rf"\b(?:next|this|on|coming)\s+({'|'.join(WEEKDAYS)})\b", re.I)),
]
_VAGUE = re.compile(
    r"\b(?:asap|as\s+soon\s+as\s+possible|right\s+away|immediately|soon|next\s+(?:week|month|"
    r"year)|whenever|this\s+month|end\s+of\s+(?:the\s+)?month|in\s+the\s+spring|later)\b",
    re.IGNORECASE,
)


def _day(text: str) -> int:
    return int(text) if text.isdigit() else _ORDINALS[text.lower()]


def _next_occurrence(month: int, day: int, today: date) -> date | None:
    for year in (today.year, today.year + 1):
        try:
            found = date(year, month, day)
        except ValueError:
            return None
        if found > today:
            return found
    return None


def _dated(year: str | None, month: int, day: int, today: date) -> date | None:
    if not year:
        return _next_occurrence(month, day, today)
    full = int(year) + (2000 if len(year) == 2 else 0)
    try:
        return date(full, month, day)
    except ValueError:
        return None


def _read(kind: str, match: re.Match[str], today: date) -> date | None:
    groups = match.groups()
    if kind == "iso":
        return _dated(groups[0], int(groups[1]), int(groups[2]), today)
    if kind == "us":
        return _dated(groups[2], int(groups[0]), int(groups[1]), today)
    if kind == "md":
        return _dated(groups[2], MONTHS[groups[0].lower()], _day(groups[1]), today)
    if kind == "dm":
        return _dated(groups[2], MONTHS[groups[1].lower()], _day(groups[0]), today)
    if kind in ("next_month", "start_next"):
        first = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
        return first.replace(day=_day(groups[0])) if kind == "next_month" else first
    if kind == "first_year":
        return date(today.year + 1, 1, 1)
    if kind == "tomorrow":
        return today + timedelta(days=1)
    if kind == "in":
        count = int(groups[0]) if groups[0].isdigit() else NUMBER_WORDS[groups[0].lower()]
        unit = groups[1].lower()
        if unit == "month":
            return _in_months(today, count)
        return today + timedelta(days=count * (7 if unit == "week" else 1))
    ahead = (WEEKDAYS.index(groups[0].lower()) - today.weekday() - 1) % 7 + 1
    return today + timedelta(days=ahead)


def _in_months(today: date, count: int) -> date | None:
    month = today.month - 1 + count
    try:
        return today.replace(year=today.year + month // 12, month=month % 12 + 1)
    except ValueError:
        return None


def read_date(text: str, today: date) -> date | None:
    """The last date `text` names (a later one corrects an earlier one), or None."""
    said = range_words(text)
    found: list[tuple[int, date]] = []
    taken: list[tuple[int, int]] = []
    for kind, pattern in _PATTERNS:
        for match in pattern.finditer(said):
            if any(match.start() < end and start < match.end() for start, end in taken):
                continue
            day = _read(kind, match, today)
            if day is not None:
                found.append((match.start(), day))
                taken.append((match.start(), match.end()))
    return max(found)[1] if found else None


def vague(text: str) -> bool:
    """Whether `text` speaks of a start without naming a day ("asap", "next month")."""
    return _VAGUE.search(text) is not None
