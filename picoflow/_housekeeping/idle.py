"""Compaction of idle sessions (M14): what `FlowEngine.compact_idle` checks and reports.

A scheduler (a loop in the app, a cron job) calls `compact_idle(older_than)`; the engine walks
the store's idle running sessions page by page (`Store.idle_sessions`) and compacts each one
like `compact()` does, under the session's lock and the revision check. This module holds what
does not need the engine: the argument check, the cutoff stamp and the report.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

__all__ = ["DEFAULT_PAGE", "IdleRun", "check_page_size", "duration_seconds", "idle_cutoff"]

DEFAULT_PAGE = 100  # sessions listed per store call
_MAX_PAGE = 1000  # what every store's `idle_sessions` accepts at most


def idle_cutoff(older_than: Any, now: datetime) -> str:
    """The `updated_at` stamp before which a session counts as idle, in the stores' format.

    Raises:
        TypeError: `older_than` is neither a `timedelta` nor a number of seconds.
        ValueError: it is zero, negative or not finite.
    """
    seconds = duration_seconds(older_than, "compact_idle(older_than=...)")
    moment = now - timedelta(seconds=seconds)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def duration_seconds(value: Any, what: str) -> float:
    """A positive duration given as a `timedelta` or seconds, in seconds.

    `what` names the argument in the error, e.g. `compact_idle(older_than=...)`.

    Raises:
        TypeError: `value` is neither a `timedelta` nor a number.
        ValueError: it is zero, negative or not finite.
    """
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        raise TypeError(
            f"{what} takes a timedelta or a number of seconds, got "
            f"{type(value).__name__} {value!r}."
        )
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(
            f"{what} must be a positive duration, e.g. timedelta(hours=1) or 3600; got {value!r}."
        )
    return seconds


def check_page_size(page_size: Any) -> int:
    """The page size as given, if it is a whole number from 1 to 1000.

    Raises:
        ValueError: any other value.
    """
    whole = isinstance(page_size, int) and not isinstance(page_size, bool)
    if whole and 1 <= page_size <= _MAX_PAGE:
        return int(page_size)
    raise ValueError(
        f"compact_idle(page_size=...) takes a whole number from 1 to {_MAX_PAGE} (sessions "
        f"listed per store call), got {page_size!r}."
    )


@dataclass(slots=True)
class IdleRun:
    """What one `compact_idle` call found; `report()` is the dict it returns."""

    looked_at: int = 0
    compacted: list[str] = field(default_factory=list)
    compacted_count: int = 0
    nothing_to_compact: int = 0
    skipped: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)

    def fail(self, session_id: str, error: str) -> None:
        """Record a session that could not be compacted; the run goes on with the next one."""
        self.failed.append({"session_id": session_id, "error": error})

    def report(self) -> dict[str, Any]:
        """The answer of `compact_idle`: counts, the compacted ids and the failures."""
        return {
            "looked_at": self.looked_at,
            "compacted": len(self.compacted),
            "compacted_ids": list(self.compacted),
            "compacted_count": self.compacted_count,
            "nothing_to_compact": self.nothing_to_compact,
            "skipped": self.skipped,
            "failed": list(self.failed),
        }
