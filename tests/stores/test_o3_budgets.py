"""O3: spending limits, on every store (the owner's daily tokens are counted in the store)."""

from __future__ import annotations

from typing import Any

from picoflow import Flow, FlowEngine, Step, stay, tool
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel, tool_call


class Chat(Step):
    @tool
    def look(self) -> Any:
        """Look around."""
        return stay("nothing here")


def _flow(model: ScriptedChatModel) -> type[Flow]:
    class BudgetFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self)]

    return BudgetFlow


async def test_o3_session_tokens_refuse_the_turn_that_would_pass_and_save_nothing(
    store: Store,
) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: "x" * 400)  # ~100 tokens out
    engine = FlowEngine([_flow(model)], store=store, budgets={"session_tokens": 400})
    first = await engine.run("BudgetFlow", "hello")
    assert first.success, first.message
    stored = await store.load(first.session_id)
    assert stored is not None
    used = stored["usage"]["model"]["total_tokens"]
    assert 100 < used < 400
    calls_before = len(model.requests)
    refused = None
    for _ in range(5):  # each turn costs ~110 tokens: one of the next turns must be refused
        refused = await engine.run("BudgetFlow", "more please", session_id=first.session_id)
        if not refused.success:
            break
    assert refused is not None and not refused.success
    assert refused.error == "BudgetExceeded"
    assert "session_tokens" in refused.message and "400" in refused.message
    after = await store.load(first.session_id)
    assert after is not None
    assert after["usage"]["model"]["total_tokens"] <= 400  # what was saved stays under the limit
    # refused before the call when the estimate passes: the next attempt costs no model call
    calls = len(model.requests)
    again = await engine.run("BudgetFlow", "more please", session_id=first.session_id)
    assert again.error == "BudgetExceeded"
    assert len(model.requests) == calls
    assert calls > calls_before


async def test_o3_model_calls_per_turn_stops_a_tool_loop_before_the_next_call(
    store: Store,
) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: tool_call("look"))
    engine = FlowEngine([_flow(model)], store=store, budgets={"model_calls_per_turn": 3})
    result = await engine.run("BudgetFlow", "look around")
    assert not result.success
    assert result.error == "BudgetExceeded"
    assert "model_calls_per_turn" in result.message and "4 model calls" in result.message
    assert len(model.requests) == 3
    assert result.session_id is None  # a first turn that failed created nothing (P3)


async def test_o3_owner_tokens_per_day_are_shared_by_engines_on_one_store(store: Store) -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: "y" * 400)
    budgets = {"owner_tokens_per_day": 300}
    one = FlowEngine([_flow(model)], store=store, budgets=budgets)
    other = FlowEngine([_flow(model)], store=store, budgets=budgets)
    first = await one.run("BudgetFlow", "hi", owner="ada")
    assert first.success
    second = await other.run("BudgetFlow", "hi again", owner="ada")
    third = await other.run("BudgetFlow", "and again", owner="ada")
    assert not (second.success and third.success)
    refused = second if not second.success else third
    assert refused.error == "BudgetExceeded"
    assert "owner_tokens_per_day" in refused.message and "'ada'" in refused.message
    # another owner has a day of their own
    assert (await other.run("BudgetFlow", "hi", owner="bob")).success


async def test_o3_the_ledger_adds_up_and_keeps_owners_and_days_apart(store: Store) -> None:
    add = store.add_owner_tokens  # type: ignore[attr-defined]
    read = store.owner_tokens  # type: ignore[attr-defined]
    # Days far ahead: MongoDB's TTL monitor sweeps a day's record two days after it, in real time.
    assert await read("ada", "2099-12-01") == 0
    assert await add("ada", "2099-12-01", 5) == 5
    assert await add("ada", "2099-12-01", 7) == 12
    assert await add("bob", "2099-12-01", 1) == 1
    assert await read("ada", "2099-12-01") == 12
    assert await read("ada", "2099-12-02") == 0
