"""The engine's spending limits (O3), mixed into `FlowEngine`: the turn's view of the budgets."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from picoflow._ops._budgets import Budgets, BudgetUsage, today, tokens_of
from picoflow.errors import StoreError

if TYPE_CHECKING:
    from picoflow.stores import Store
    from picoflow.stores.base import JSONDict

__all__ = ["SpendingLimits", "check_ledger"]

logger = logging.getLogger(__name__)


class SpendingLimits:
    """What a turn may spend (docs/budgets.md)."""

    if TYPE_CHECKING:
        _store: Store
        _budgets: Budgets | None

    async def _budget_for(self, doc: JSONDict | None, owner: str | None) -> BudgetUsage:
        """What the session and its owner had used when this turn began (O3)."""
        assert self._budgets is not None
        usage = BudgetUsage(self._budgets, tokens_of(doc["usage"]) if doc is not None else 0)
        if self._budgets.counts_owners and owner is not None:
            usage.owner = owner
            usage.owner_before = await self._store.owner_tokens(owner, today())  # type: ignore[attr-defined]
        return usage

    async def _count_owner(self, owner: str, usage: dict[str, dict[str, int]]) -> None:
        """Add a turn's tokens to its owner's day, saved or not: they were spent (O3)."""
        tokens = tokens_of(usage)
        if not tokens:
            return
        try:
            await self._store.add_owner_tokens(owner, today(), tokens)  # type: ignore[attr-defined]
        except StoreError as exc:  # the turn's own outcome stands; the ledger misses one turn
            logger.warning("could not count the tokens of owner %r: %s", owner, exc)


def check_ledger(store: Store) -> None:
    """O3: an owner's daily limit needs a store that counts tokens per owner and day."""
    if not (hasattr(store, "add_owner_tokens") and hasattr(store, "owner_tokens")):
        raise ValueError(
            f"budgets={{'owner_tokens_per_day': ...}} needs a store that counts tokens per owner; "
            f"{type(store).__name__} has no add_owner_tokens()/owner_tokens(). Use MemoryStore, "
            "SQLiteStore or MongoStore, or add those two methods to your store."
        )
