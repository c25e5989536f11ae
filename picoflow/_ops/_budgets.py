"""Spending limits (O3): tokens per session, tokens per owner per day, model calls per turn.

A model call's cost is known only after it returns, so each limit is checked twice: before a
call, against what the session (or owner) has used plus this turn so far plus the request's
estimated input tokens (so a session already at its limit is refused without calling the
model again), and after it, against what was really used. Either way the turn fails with
`BudgetExceeded` and, like every failed turn, saves nothing (P3). The owner's daily tokens are
counted in the store, so every worker sees the same total, and a failed turn's tokens count
too: they were spent. A resolve (K10) is checked the same way, and first by `at_start`, before
its approved tool runs, so a session already at its limit is refused before any effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from langchain_core.messages import BaseMessage
from langchain_core.messages.utils import count_tokens_approximately

from picoflow.errors import BudgetExceeded

__all__ = ["Budgets", "BudgetUsage", "today"]

_KEYS = ("session_tokens", "owner_tokens_per_day", "model_calls_per_turn")


def today() -> str:
    """The day an owner's tokens are counted under: UTC, so every worker agrees."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class Budgets:
    """The limits of an engine; None means no limit."""

    session_tokens: int | None = None
    owner_tokens_per_day: int | None = None
    model_calls_per_turn: int | None = None

    @classmethod
    def parse(cls, budgets: Mapping[str, Any] | Budgets | None) -> Budgets | None:
        """Check `FlowEngine(budgets=...)`: known keys, whole numbers above 0."""
        if budgets is None or isinstance(budgets, Budgets):
            return budgets
        if not isinstance(budgets, Mapping):
            raise ValueError(
                f"budgets must be a dict of limits, got {type(budgets).__name__}; for example "
                '{"session_tokens": 200000, "model_calls_per_turn": 8}.'
            )
        unknown = sorted(set(budgets) - set(_KEYS))
        if unknown:
            raise ValueError(
                f"Unknown budget {', '.join(map(repr, unknown))}; the budgets are "
                f"{', '.join(_KEYS)}."
            )
        for key, value in budgets.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value <= 0
            ):
                raise ValueError(
                    f"Budget {key!r} must be a whole number above 0 (or None for no limit), "
                    f"got {value!r}."
                )
        return cls(**dict(budgets))

    @property
    def counts_owners(self) -> bool:
        """Whether the store's owner ledger is needed."""
        return self.owner_tokens_per_day is not None


@dataclass(slots=True)
class BudgetUsage:
    """One turn's view of the limits: what was used before it, and its own calls so far."""

    budgets: Budgets
    session_before: int = 0  # tokens the session had used when the turn started
    owner: str | None = None
    owner_before: int = 0  # the owner's tokens today when the turn started

    def at_start(self) -> None:
        """Refuse work that starts with a token limit already reached, before anything runs.

        A resolve (K10) runs the approved tool before its first model call: checked only at
        that call, a session at its limit would still run the tool and then be refused.
        """
        self._check_tokens(0, 0)

    def before_call(self, calls_so_far: int, turn_tokens: int, messages: list[BaseMessage]) -> None:
        """Refuse a model call that would pass a limit, or that starts with one reached."""
        budgets = self.budgets
        limit = budgets.model_calls_per_turn
        if limit is not None and calls_so_far >= limit:
            raise BudgetExceeded(
                "model_calls_per_turn", limit, calls_so_far + 1, "model calls in this turn"
            )
        if budgets.session_tokens is None and budgets.owner_tokens_per_day is None:
            return
        estimate = count_tokens_approximately(messages)
        self._check_tokens(turn_tokens, estimate)

    def after_call(self, turn_tokens: int) -> None:
        """Fail the turn once the tokens really used pass a limit."""
        self._check_tokens(turn_tokens, 0)

    def _check_tokens(self, turn_tokens: int, estimate: int) -> None:
        budgets = self.budgets
        limit = budgets.session_tokens
        if limit is not None:
            used = self.session_before + turn_tokens
            if used >= limit or used + estimate > limit:
                raise BudgetExceeded("session_tokens", limit, used + estimate, "tokens")
        limit = budgets.owner_tokens_per_day
        if limit is not None and self.owner is not None:
            used = self.owner_before + turn_tokens
            if used >= limit or used + estimate > limit:
                what = f"tokens today by {self.owner!r}"
                raise BudgetExceeded("owner_tokens_per_day", limit, used + estimate, what)


def tokens_of(usage: Mapping[str, Mapping[str, int]]) -> int:
    """All tokens in a usage record: replies and summaries alike cost money."""
    return sum(int(counters.get("total_tokens", 0)) for counters in usage.values())
