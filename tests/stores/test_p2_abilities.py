"""P2: a store's optional abilities are declared in `stores.base`, found once, named if missing.

The core (create, load, revision, save, delete, archive, search_archive, aclose) is all a store
must do; history, leases, the memory bank and the rest are abilities a store of one's own may
add one at a time. These tests pin what a feature says when the store lacks what it needs.
"""

from __future__ import annotations

from typing import Any

import pytest
from support.flows import CoreOnly

from picoflow import MissingAbilityError
from picoflow.stores.base import (
    KeepsHistory,
    KeepsLeases,
    StoreAbilities,
    abilities_of,
)
from picoflow.stores.memory import MemoryStore
from picoflow.stores.sqlite import SQLiteStore

EVERY_ABILITY = [
    "history",
    "leases",
    "memory_bank",
    "vectors",
    "streams",
    "waiting",
    "idle_sessions",
    "purge",
    "delete_owner",
    "owner_tokens",
    "oldest_archived",
    "trims_archive",
]


async def test_p2_picoflows_stores_have_every_ability(tmp_path: Any) -> None:
    sqlite = SQLiteStore(str(tmp_path / "s.db"))
    try:
        for store in (MemoryStore(), sqlite):
            found = abilities_of(store)
            assert found.names() == EVERY_ABILITY
            assert found.notes is True  # their saves take the history note (W1)
            assert isinstance(found.history, KeepsHistory)
            assert isinstance(found.leases, KeepsLeases)
    finally:
        await sqlite.aclose()


def test_p2_a_core_only_store_has_no_ability_and_the_error_names_what_is_missing() -> None:
    found = abilities_of(CoreOnly())
    assert found.names() == []
    assert found.notes is False
    with pytest.raises(MissingAbilityError) as raised:
        found.need("history", "engine.history()")
    error = raised.value
    assert (error.store, error.ability, error.methods) == (
        "CoreOnly",
        "history",
        ("history", "load_revision"),
    )
    assert str(error) == (
        "CoreOnly keeps no history (it has no history, load_revision), which engine.history() "
        "needs. Use MemoryStore, SQLiteStore or MongoStore, or add those methods to your "
        "store."
    )
    assert isinstance(error, ValueError)  # what these checks raised before abilities had names


def test_p2_abilities_are_found_once_per_store() -> None:
    store = MemoryStore()
    assert abilities_of(store) is abilities_of(store)
    assert abilities_of(store) is not abilities_of(MemoryStore())


def test_p2_an_ability_turned_off_with_none_is_missing() -> None:
    class NoWaiting(MemoryStore):
        waiting = None  # type: ignore[assignment]

    found = abilities_of(NoWaiting())
    assert found.waiting is None and found.history is not None
    with pytest.raises(MissingAbilityError, match="has no waiting"):
        found.need("waiting", "engine.waiting()")


def test_p2_a_subclass_whose_save_takes_no_note_keeps_history_without_notes() -> None:
    class PlainSave(MemoryStore):
        async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
            return await super().save(doc, expected_revision)

    found = abilities_of(PlainSave())
    assert found.history is not None and found.notes is False


def test_p2_asking_for_an_ability_that_does_not_exist_is_a_key_error() -> None:
    with pytest.raises(KeyError, match="no store ability 'teleport'; known: history, leases"):
        StoreAbilities(store_name="X").need("teleport", "anything")
