"""How BasicFlow's offline model reads a date of birth and a US address (split from
``demo.basic.offline``)."""

from __future__ import annotations

import re
from datetime import date

_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november "
        "december".split()
    )
}
_MONTH = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"  # noqa: E501
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4}|'?\d{2})(?!\d)"
_DATE_PATTERNS = (
    re.compile(r"\b(?P<year>\d{4})[-/.](?P<month>\d{1,2})[-/.](?P<day>\d{1,2})\b"),
    re.compile(r"\b(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})[/.-](?P<year>\d{4}|\d{2})\b"),
    re.compile(rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}", re.I),
    re.compile(rf"\b{_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}", re.I),
)


class Ambiguous(Exception):
    """A date such as 03/04/1990, which reads both ways."""


def _year(text: str) -> int:
    if text.startswith("'") or len(text) == 2:
        two = int(text.strip("'"))
        return 2000 + two if two <= date.today().year % 100 else 1900 + two
    return int(text)


def _month_of(name: str) -> int:
    key = name.lower().rstrip(".")
    return next(n for m, n in _MONTHS.items() if m.startswith(key[:3]))


def dates_in(said: str) -> list[tuple[int, date]]:
    """Every date in the message with its position; raises _Ambiguous for a two-way one."""
    found: list[tuple[int, date]] = []
    for pattern in _DATE_PATTERNS:
        for match in pattern.finditer(said):
            if any(abs(start - match.start()) < 3 for start, _ in found):
                continue
            parts = match.groupdict()
            year = _year(parts["year"])
            if "a" in parts and parts.get("a") is not None:
                a, b = int(parts["a"]), int(parts["b"])
                if a <= 12 and b <= 12 and a != b:
                    raise Ambiguous(match.group(0))
                month, day = (a, b) if a <= 12 and b > 12 else (b, a)
            elif parts.get("mon"):
                month, day = _month_of(parts["mon"]), int(parts["day"])
            else:
                month, day = int(parts["month"]), int(parts["day"])
            try:
                found.append((match.start(), date(year, month, day)))
            except ValueError:
                continue
    return sorted(found)


_SUFFIX = (
    r"(?:st|street|rd|road|ave|avenue|blvd|boulevard|way|ln|lane|dr|drive|ct|court|terrace|"
    r"ter|pl|place|pkwy|parkway|hwy|highway|cir|circle|sq|square|loop|trail|row)\.?"
    r"(?:\s+(?:nw|ne|sw|se|n|s|e|w))?"
)
_UNIT = r"(?:\s*,?\s+(?:apt|apartment|unit|suite|ste|#)\.?\s*#?\w+)?"
"""An apartment or unit after the street ("55 Maple Ave apt 4"): part of the street."""
_LOOSE = re.compile(
    rf"(?P<street>\d+[a-z]?\s+[^,]*?\b{_SUFFIX}{_UNIT})\s*,?\s+(?:in\s+)?(?P<city>[a-z][a-z .'-]*?)"
    r"\s*,?\s+(?P<state>[a-z]{2})\.?\s+(?P<zip>\d{5}(?:-\d{4})?)\b",
    re.I,
)
_WITH_COMMAS = re.compile(
    r"(?P<street>\d+[^,]*?),\s*(?P<city>[^,\d]+?),\s*(?P<state>[a-z]{2})\.?\s+"
    r"(?P<zip>\d{5}(?:-\d{4})?)\b",
    re.I,
)


def address_in(said: str) -> str | None:
    for pattern in (_WITH_COMMAS, _LOOSE):
        found = pattern.search(said)
        if found:
            street, city = found["street"].strip(), found["city"].strip()
            return f"{street}, {city}, {found['state'].upper()} {found['zip']}"
    return None
