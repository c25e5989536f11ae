"""The engine is a face over parts (STYLE §2), and asks its store's abilities once (P2).

`FlowEngine` used to inherit six mixins that reached into its attributes. Now it holds parts
built with explicit dependencies and delegates to them; these tests pin that every public
method a mixin gave it is still defined on `FlowEngine` itself, with the part's signature and
a docstring, and that a store with only the core methods runs turns while a history feature
fails with a `MissingAbilityError` naming what is missing.
"""

from __future__ import annotations

import inspect

import pytest
from support.flows import CoreOnly, engine_for, two_step_flow

from picoflow import FlowEngine, MissingAbilityError
from picoflow.engine._history import HistoryActions
from picoflow.engine._memory import MemoryOperations
from picoflow.engine._people import People
from picoflow.stores import MemoryStore
from picoflow.stores.base import abilities_of
from picoflow.testing import ScriptedChatModel, tool_call

# The public methods each former mixin gave `FlowEngine`, by the part that does the work now.
DELEGATED: dict[type, list[str]] = {
    People: [
        "pending_approvals",
        "waiting",
        "resolve_approval",
        "operator_reply",
        "return_to_flow",
    ],
    MemoryOperations: ["memory_bank", "extract_memory", "compact", "compact_idle", "preview"],
    HistoryActions: [
        "history",
        "rewind",
        "undo",
        "fork",
        "edit_message",
        "purge",
        "forget_principal",
    ],
}
CASES = [(part, name) for part, names in DELEGATED.items() for name in names]


def hotel_model() -> ScriptedChatModel:
    return ScriptedChatModel(
        script=[tool_call("capture_choices", city="Portland", nights=2), "Two hotels found."]
    )


def test_engine_flowengine_has_no_base_but_object() -> None:
    """Compose, don't mix in: the parts are attributes, not bases."""
    assert FlowEngine.__bases__ == (object,)
    assert FlowEngine.__mro__ == (FlowEngine, object)


@pytest.mark.parametrize("part,name", CASES, ids=[name for _, name in CASES])
def test_engine_each_former_mixin_method_is_defined_on_flowengine(part: type, name: str) -> None:
    """Defined in FlowEngine's own body, with the part's signature and a docstring of its own."""
    assert name in vars(FlowEngine), f"FlowEngine.{name} is not defined on FlowEngine"
    on_engine = getattr(FlowEngine, name)
    assert inspect.signature(on_engine) == inspect.signature(getattr(part, name))
    assert inspect.iscoroutinefunction(on_engine) == inspect.iscoroutinefunction(
        getattr(part, name)
    )
    assert (on_engine.__doc__ or "").strip(), f"FlowEngine.{name} has no docstring"


def test_engine_approval_lease_stays_settable_on_the_engine() -> None:
    """K3: `engine.approval_lease = 0` (as the approval tests do) reaches the people part."""
    engine = engine_for(two_step_flow(hotel_model()))
    assert engine.approval_lease == 300.0
    engine.approval_lease = 0
    assert engine._people._approval_lease() == 0


def test_p2_the_engine_asks_the_store_abilities_once() -> None:
    store = MemoryStore()
    engine = engine_for(two_step_flow(hotel_model()), store=store)
    assert engine._abilities is abilities_of(store)


async def test_p2_history_on_a_core_only_store_names_the_missing_ability() -> None:
    engine = FlowEngine([two_step_flow(hotel_model())], store=CoreOnly())  # type: ignore[arg-type]
    first = await engine.run("HotelFlow", "Two nights in Portland")
    with pytest.raises(MissingAbilityError) as raised:
        await engine.history(str(first.session_id))
    error = raised.value
    assert (error.ability, error.methods) == ("history", ("history", "load_revision"))
    assert str(error) == (
        "CoreOnly keeps no history (it has no history, load_revision), which engine.history() "
        "needs. Use MemoryStore, SQLiteStore or MongoStore, or add those methods to your "
        "store."
    )
    assert isinstance(error, ValueError)


async def test_p2_a_core_only_store_runs_a_normal_turn() -> None:
    store = CoreOnly()
    engine = FlowEngine([two_step_flow(hotel_model())], store=store)  # type: ignore[arg-type]
    result = await engine.run("HotelFlow", "Two nights in Portland")
    assert result.success, result.message
    assert (result.message, result.step) == ("Two hotels found.", "PresentStep")
    doc = await engine.get_session(str(result.session_id))
    assert doc is not None and doc["revision"] == 0
    assert doc["steps"]["ExploreStep"]["state"]["criteria"] == {"city": "Portland", "nights": 2}
    await engine.aclose()


def test_k3_approval_lease_set_on_a_subclass_or_an_engine_reaches_the_people_part() -> None:
    """K3: `approval_lease` is read at each resolve, from wherever the user set it."""

    class QuickLease(FlowEngine):
        approval_lease = 0.0

    engine = QuickLease([two_step_flow(hotel_model())])
    assert engine._people._approval_lease() == 0.0
    engine.approval_lease = 5.0
    assert engine._people._approval_lease() == 5.0
    assert FlowEngine([two_step_flow(hotel_model())])._people._approval_lease() == 300.0


def test_f5_bad_budgets_and_ttl_fail_before_the_store_is_touched() -> None:
    """F5: a wrong argument leaves the store as it was (its archive limit unchanged)."""
    store = MemoryStore()
    before = store.archive_limit
    with pytest.raises(ValueError):
        FlowEngine([two_step_flow(hotel_model())], store=store, archive_limit=7, session_ttl=-1)
    with pytest.raises((ValueError, TypeError)):
        FlowEngine(
            [two_step_flow(hotel_model())], store=store, archive_limit=7, budgets={"nope": 1}
        )
    assert store.archive_limit == before
