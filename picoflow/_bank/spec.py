"""What `Step.use_long_term_memory()` asked for, checked where it is called (L2)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LongTermSpec"]


@dataclass(frozen=True, slots=True)
class LongTermSpec:
    """`tools`: offer remember/recall; `inject`: put relevant entries in each request."""

    tools: bool = True
    inject: bool = False
    budget_tokens: int = 300

    def __post_init__(self) -> None:
        if not isinstance(self.tools, bool) or not isinstance(self.inject, bool):
            raise ValueError("use_long_term_memory(): tools and inject are True or False.")
        if not (self.tools or self.inject):
            raise ValueError(
                "use_long_term_memory(tools=False, inject=False) would do nothing: offer the "
                "tools, inject the entries, or both."
            )
        budget = self.budget_tokens
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 20:
            raise ValueError(
                f"use_long_term_memory(budget_tokens=...) is a whole number of at least 20, "
                f"got {budget!r}."
            )
