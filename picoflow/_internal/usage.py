"""The usage counters a turn adds up (M10), below every layer that counts.

They live here, not in `session`, because `TurnResult` (one layer down from the session
documents) starts every result with empty counters; `picoflow.session` re-exports both names.
"""

from __future__ import annotations

__all__ = ["Usage", "empty_usage", "empty_decision_usage", "add_decision_call", "add_counters"]

Usage = dict[str, dict[str, int]]


def empty_usage() -> Usage:
    """Token counters, model calls and summary calls kept apart (M10)."""
    blank = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "calls": 0}
    return {"model": dict(blank), "summary": dict(blank)}


DECISION_KEYS = ("calls", "input_tokens", "output_tokens", "total_tokens")


def empty_decision_usage() -> dict[str, int]:
    """Decision calls and their tokens (D3), counted apart from chat usage."""
    return dict.fromkeys(DECISION_KEYS, 0)


def add_decision_call(counters: dict[str, int], usage: dict[str, int]) -> None:
    """Count one answered decision call and its tokens into `counters` (D3)."""
    if not counters:
        counters.update(empty_decision_usage())
    counters["calls"] += 1
    for key in DECISION_KEYS[1:]:
        counters[key] += int(usage.get(key, 0) or 0)


def add_counters(stored: dict[str, int] | None, added: dict[str, int]) -> dict[str, int]:
    """Stored counters plus added ones, key by key (a session's `decision_usage` at a save)."""
    totals = dict(stored or empty_decision_usage())
    for key, value in added.items():
        totals[key] = totals.get(key, 0) + value
    return totals
