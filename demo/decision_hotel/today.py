"""The day DecisionHotelFlow calls "today": a session's ``config.today``, the env, or the clock.

PicoFlow's ``HOTEL_FLOW_CURRENT_DATE`` (ISO) replaces "now" everywhere: the dates prompt, the
check-in rule of ``capture_date_range`` and the validation of every turn. The port keeps it and
adds the demos' per-session ``config.today`` (tests and scenarios fix their day with it), which
wins over the environment because it is the more specific of the two. A malformed variable is
a configuration mistake: it fails the turn with `INVALID_ENV`, instead of quietly planning
against the real date.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime
from typing import Any

from demo.reading import today_of

ENV = "HOTEL_FLOW_CURRENT_DATE"
INVALID_ENV = f"{ENV} must be a valid date."


def env_today() -> date | None:
    """The date `ENV` sets (its UTC day for a timestamp), or None when it is unset or blank.

    Raises:
        ValueError: `INVALID_ENV`, when the variable is set to something that is no ISO date.
    """
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        return None
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(INVALID_ENV) from None
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.date()


def current_date(config_today: Any = None) -> date:
    """Today for a session: its ``config.today``, else `ENV`, else the UTC date now."""
    if config_today:
        return today_of(config_today)
    return env_today() or datetime.now(UTC).date()
