"""What every option that takes a duration in seconds accepts: one test, so they all agree."""

from __future__ import annotations

from typing import Any

__all__ = ["is_seconds"]


def is_seconds(value: Any) -> bool:
    """A number of seconds > 0: an int or float, not a bool (True is not a duration), not NaN."""
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0
