"""What `Step.use_long_term_memory()` asked for, checked where it is called (L2, L3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from picoflow.stores._bank import check_kind

__all__ = ["LongTermSpec", "DEFAULT_KINDS", "EXTRACT_WHEN"]

DEFAULT_KINDS = ("fact", "preference", "episode")
# L3: when a model reads the raw messages and writes entries: when the step is left, or when
# the session ends (and whenever the app calls `engine.extract_memory`).
EXTRACT_WHEN = ("step", "session")


@dataclass(frozen=True, slots=True)
class LongTermSpec:
    """What a step asked of long-term memory.

    `tools`: offer remember/recall; `inject`: put relevant entries in each request; `extract`:
    when a model writes entries from the messages (L3), with `extract_model` (a parsed model,
    or None for the flow's summary model) and the `kinds` it may use.
    """

    tools: bool = True
    inject: bool = False
    budget_tokens: int = 300
    extract: str | None = None
    extract_model: Any = None
    kinds: tuple[str, ...] = DEFAULT_KINDS

    def __post_init__(self) -> None:
        if not isinstance(self.tools, bool) or not isinstance(self.inject, bool):
            raise ValueError("use_long_term_memory(): tools and inject are True or False.")
        if self.extract is not None and self.extract not in EXTRACT_WHEN:
            raise ValueError(
                f"use_long_term_memory(extract=...) is 'step' (when the step is left), "
                f"'session' (when the session ends) or None, got {self.extract!r}."
            )
        if not (self.tools or self.inject or self.extract):
            raise ValueError(
                "use_long_term_memory(tools=False, inject=False) would do nothing: offer the "
                "tools, inject the entries, extract them (extract='step'), or a mix."
            )
        budget = self.budget_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 20:
            raise ValueError(
                f"use_long_term_memory(budget_tokens=...) is a whole number of at least 20, "
                f"got {budget!r}."
            )
        _check_kinds(self.kinds)


def _check_kinds(kinds: Any) -> None:
    if not isinstance(kinds, tuple) or not kinds or len(set(kinds)) != len(kinds):
        raise ValueError(
            f"use_long_term_memory(kinds=...) is a non-empty list of distinct labels such as "
            f"{list(DEFAULT_KINDS)!r}, got {kinds!r}."
        )
    for kind in kinds:
        try:
            check_kind(kind)
        except ValueError as exc:
            raise ValueError(f"use_long_term_memory(kinds=...): {exc}") from None
