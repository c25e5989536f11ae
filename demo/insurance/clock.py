""" "Now" for HomeInsuranceQuoteFlow: a session's ``config.today``, else PicoFlow's environment
override ``HOME_INSURANCE_FLOW_CURRENT_DATE``, else the real clock.

Eligibility (claims of the last five years), the effective-date window, the quote id's date,
``generatedAt`` and ``validThrough`` all depend on it, so tests, scenarios and recorded demos
fix it. A date is its UTC midnight, as JavaScript's ``new Date("2026-12-07")`` is.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from typing import Any

CURRENT_DATE_ENV = "HOME_INSURANCE_FLOW_CURRENT_DATE"
INVALID_CURRENT_DATE = f"{CURRENT_DATE_ENV} must be a valid date."


def parse_moment(text: str) -> datetime | None:
    """`text` as a UTC moment: "2026-12-07" (its midnight) or an ISO date-time ("...Z",
    "+02:00"; without an offset it is UTC); None when it is neither."""
    raw = text.strip()
    if raw.endswith(("Z", "z")):
        raw = raw[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def env_now() -> datetime | None:
    """The environment's "now", or None when the variable is unset or blank.

    Raises:
        ValueError: ``HOME_INSURANCE_FLOW_CURRENT_DATE must be a valid date.``
    """
    raw = os.environ.get(CURRENT_DATE_ENV)
    if raw is None or not raw.strip():
        return None
    moment = parse_moment(raw)
    if moment is None:
        raise ValueError(INVALID_CURRENT_DATE)
    return moment


def current_moment(today: Any = None) -> datetime:
    """The flow's "now": `today` (a session's ``config.today``: a date or "YYYY-MM-DD") at UTC
    midnight, else the environment override, else the real UTC time.

    Raises:
        ValueError: the environment override is set to something that is not a date.
    """
    from_env = env_now()  # checked even when the session fixes the day: a bad setting shows
    if isinstance(today, date):
        return datetime(today.year, today.month, today.day, tzinfo=UTC)
    if isinstance(today, str) and today.strip():
        moment = parse_moment(today.strip()[:10])
        if moment is not None:
            return moment
    return from_env if from_env is not None else datetime.now(UTC)


def add_years(moment: datetime, years: int) -> datetime:
    """``setUTCFullYear(year + n)``: Feb 29 in a year without one is March 1."""
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:
        return moment.replace(year=moment.year + years, month=3, day=1)


def add_days(moment: datetime, days: int) -> datetime:
    """`moment` plus whole days (UTC has no daylight saving time)."""
    return moment + timedelta(days=days)
