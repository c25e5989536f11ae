"""The usage counters a turn adds up (M10), below every layer that counts.

They live here, not in `session`, because `TurnResult` (one layer down from the session
documents) starts every result with empty counters; `picoflow.session` re-exports both names.
"""

from __future__ import annotations

__all__ = ["Usage", "empty_usage"]

Usage = dict[str, dict[str, int]]


def empty_usage() -> Usage:
    """Token counters, model calls and summary calls kept apart (M10)."""
    blank = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0}
    return {"model": dict(blank), "summary": dict(blank)}
