"""The date a conversation calls "today": the one a test or scenario fixes, else the real one."""

from __future__ import annotations

from datetime import date
from typing import Any


def today_of(value: Any = None) -> date:
    """`value` (a ``config.today``: a date or "YYYY-MM-DD...") as a date; the real date when it
    is missing or unreadable, so a demo never plans against a date fixed in its code."""
    if isinstance(value, date):
        return value
    if isinstance(value, str) and value.strip():
        try:
            return date.fromisoformat(value.strip()[:10])
        except ValueError:
            pass
    return date.today()
