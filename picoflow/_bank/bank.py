"""`MemoryBank`: one owner's long-term memory, for the app (L5)."""

from __future__ import annotations

import builtins
from typing import TYPE_CHECKING, Any, Protocol

from picoflow._bank import vectors
from picoflow._internal.services import TurnServices
from picoflow.stores._bank import BankEntry, check_owner, new_entry
from picoflow.stores.base import KeepsMemoryBank, abilities_of

if TYPE_CHECKING:
    from picoflow.stores.base import Store

__all__ = ["MemoryBank", "owner_of", "require_bank"]


def require_bank(store: Store) -> KeepsMemoryBank:
    """The store, if it keeps memory banks; else a `MissingAbilityError` that says what to do."""
    bank: KeepsMemoryBank = abilities_of(store).need("memory_bank", "the owner's memory bank")
    return bank


class _Running(Protocol):
    """A flow in a turn, as the bank sees it: this layer sits below `Flow` and never names it."""

    _services: TurnServices

    def get_context(self, path: str | None = None) -> Any: ...


def owner_of(flow: _Running) -> str | None:
    """Whose memory a turn reads and writes: the session's owner (H4), else `config.user_id`."""
    owner = flow._services.owner
    if owner:
        return str(owner)
    user = flow.get_context("config.user_id")
    return str(user) if isinstance(user, str | int) and str(user).strip() else None


class MemoryBank:
    """One owner's entries: list, search, add, edit, delete, forget.

    Every method reaches only this owner's entries; an id of another owner's entry behaves as
    unknown (`update` returns None, `delete` False).
    """

    def __init__(self, store: Store, owner: str, embeddings: Any = None) -> None:
        self._store = require_bank(store)
        self.owner = check_owner(owner)
        self._embeddings = embeddings  # FlowEngine(embeddings=...): vectors and hybrid search

    async def add(
        self, text: str, kind: str = "fact", source: dict[str, Any] | None = None
    ) -> BankEntry:
        """Remember something; `source` may say where it came from."""
        entry = new_entry(self.owner, text, kind, source)
        return await vectors.add_entry(self._store, self._embeddings, entry)

    async def list(self, *, page: int = 1, page_size: int = 50) -> list[BankEntry]:
        """The entries, the most recently written first."""
        return await self._store.bank_list(self.owner, page=page, page_size=page_size)

    async def search(
        self, query: str, *, page: int = 1, page_size: int = 10
    ) -> builtins.list[BankEntry]:
        """Entries matching any word of `query`, the most relevant first.

        With the engine's embeddings, ranked by text and meaning together (L4).
        """
        return await vectors.search(
            self._store, self._embeddings, self.owner, query, page=page, page_size=page_size
        )

    async def update(
        self, entry_id: str, *, text: str | None = None, kind: str | None = None
    ) -> BankEntry | None:
        """Change an entry; None if this owner has no entry with that id."""
        return await vectors.update_entry(
            self._store, self._embeddings, self.owner, entry_id, text, kind
        )

    async def delete(self, entry_id: str) -> bool:
        """Delete one entry; False if this owner has none with that id."""
        return bool(await self._store.bank_delete(self.owner, entry_id))

    async def forget(self) -> int:
        """Delete every entry of this owner; how many there were."""
        return int(await self._store.bank_forget(self.owner))
