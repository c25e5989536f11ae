"""BasicFlow's validators, as PicoFlow's demo has them (pico-demo-flows.md section 1.4).

Only `validate_address` is wired (AddressStep's `address` tool); PicoFlow's demo also ships the
date-of-birth and name validators without calling them, and so does this port, so that a flow
built on it can.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

__all__ = ["US_STATES", "validate_address", "validate_dob", "validate_name"]

US_STATES = frozenset(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ "
    "NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY".split()
)  # the 50 states: no DC, no territories, as in the original

# `[0-9]`, not `\d`: JavaScript's `\d` is ASCII-only, Python's is not.
_WHOLE = re.compile(r"^(.*?),\s*(.*?),\s*([A-Z]{2})\s+([0-9]{5}(?:-[0-9]{4})?)$")
_STREET = re.compile(r"^[0-9a-zA-Z\s.,'#-]+$")
_CITY = re.compile(r"^[a-zA-Z\s'.-]+$")
_ZIP = re.compile(r"^[0-9]{5}(-[0-9]{4})?$")


def validate_address(text: Any) -> dict[str, str] | None:
    """`{street, city, state, zip}` of a `street, city, ST 12345[-6789]` address, else None.

    Strict on purpose, like the original: the whole string must have that shape (no trimming),
    the state must be one of the 50 codes in capitals, and the city has no digits. The model is
    expected to put what the user said into that shape; the tool feedback says when it did not.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    found = _WHOLE.match(text)
    if found is None:
        return None
    street, city, state, zip_code = found.groups()
    if not _STREET.match(street) or not _CITY.match(city):
        return None
    if state.upper() not in US_STATES or not _ZIP.match(zip_code):
        return None
    return {"street": street, "city": city, "state": state, "zip": zip_code}


def validate_dob(day: int, month: int, year: int, *, today: date | None = None) -> dict[str, Any]:
    """`{day, month, year}` for an adult's date of birth, else `{error: ...}` (unused, as upstream).

    The month is 1-based; an impossible date is refused with the same error as a minor.
    """
    refused = {"error": "applicant must be 18 years or older"}
    try:
        born = date(year, month, day)
    except (TypeError, ValueError):
        return refused
    now = today or date.today()
    age = now.year - born.year - ((now.month, now.day) < (born.month, born.day))
    return {"day": day, "month": month, "year": year} if age >= 18 else refused


def validate_name(full_name: Any) -> dict[str, str]:
    """`{firstName, middleName?, lastName}` of a name of two parts or more (unused, as upstream)."""
    parts = full_name.split() if isinstance(full_name, str) else []
    if len(parts) < 2:
        return {"error": "A full name is required."}
    name = {"firstName": parts[0], "lastName": parts[-1]}
    if len(parts) > 2:
        name["middleName"] = " ".join(parts[1:-1])
    return name
