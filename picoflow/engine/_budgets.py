"""The engine's spending limits (O3): what a turn may spend, and the owner's shared ledger."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from picoflow._ops._budgets import Budgets, BudgetUsage, today, tokens_of
from picoflow.errors import StoreError

if TYPE_CHECKING:
    from picoflow.stores.base import CountsOwnerTokens, JSONDict, StoreAbilities

__all__ = ["Spending", "check_ledger"]

logger = logging.getLogger(__name__)


class Spending:
    """What a turn may spend (docs/budgets.md), for an engine given `budgets`.

    The ledger is the store's `owner_tokens` ability, or None when no limit counts owners;
    `check_ledger` has refused an owner limit without one when the engine was built.
    """

    def __init__(self, budgets: Budgets, ledger: CountsOwnerTokens | None) -> None:
        self._budgets = budgets
        self._ledger = ledger

    async def budget_for(self, doc: JSONDict | None, owner: str | None) -> BudgetUsage:
        """What the session and its owner had used when this turn began (O3)."""
        usage = BudgetUsage(self._budgets, tokens_of(doc["usage"]) if doc is not None else 0)
        if self._budgets.counts_owners and owner is not None and self._ledger is not None:
            usage.owner = owner
            usage.owner_before = await self._ledger.owner_tokens(owner, today())
        return usage

    async def count_owner(self, owner: str, usage: dict[str, dict[str, int]]) -> None:
        """Add a turn's tokens to its owner's day, saved or not: they were spent (O3)."""
        tokens = tokens_of(usage)
        if not tokens or self._ledger is None:
            return
        try:
            await self._ledger.add_owner_tokens(owner, today(), tokens)
        except StoreError as exc:  # the turn's own outcome stands; the ledger misses one turn
            logger.warning("could not count the tokens of owner %r: %s", owner, exc)


def check_ledger(abilities: StoreAbilities, budgets: Budgets | None) -> Spending | None:
    """The engine's `Spending`, or None without budgets (O3).

    Raises:
        ValueError: an owner's daily limit, and a store that counts no tokens per owner.
    """
    if budgets is None:
        return None
    if budgets.counts_owners and abilities.owner_tokens is None:
        raise ValueError(
            f"budgets={{'owner_tokens_per_day': ...}} needs a store that counts tokens per owner; "
            f"{abilities.store_name} has no add_owner_tokens()/owner_tokens(). Use MemoryStore, "
            "SQLiteStore or MongoStore, or add those two methods to your store."
        )
    return Spending(budgets, abilities.owner_tokens if budgets.counts_owners else None)
