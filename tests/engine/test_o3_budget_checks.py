"""O3: budgets are checked when the engine is built, with errors that say what to do."""

from __future__ import annotations

from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel


class One(Step):
    pass


MODEL = ScriptedChatModel(script=["hi"])


class OneFlow(Flow):
    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [One(self)]


@pytest.mark.parametrize(
    ("budgets", "words"),
    [
        ({"tokens": 10}, ["Unknown budget 'tokens'", "session_tokens"]),
        ({"session_tokens": 0}, ["'session_tokens' must be a whole number above 0"]),
        ({"model_calls_per_turn": 2.5}, ["whole number", "2.5"]),
        ({"session_tokens": True}, ["whole number"]),
        ([("session_tokens", 5)], ["must be a dict"]),
    ],
)
def test_o3_bad_budgets_are_refused_at_engine_start(budgets: Any, words: list[str]) -> None:
    with pytest.raises(ValueError) as caught:
        FlowEngine([OneFlow], store=MemoryStore(), budgets=budgets)
    for word in words:
        assert word in str(caught.value)


def test_o3_an_owner_budget_needs_a_store_with_a_ledger() -> None:
    class Bare:
        """A third-party store without the ledger methods."""

        async def create(self, doc: Any) -> None:
            """Keep nothing."""

        async def save(self, doc: Any, expected_revision: int) -> int:
            """Keep nothing."""
            return expected_revision + 1

    with pytest.raises(ValueError, match="counts tokens per owner"):
        FlowEngine([OneFlow], store=Bare(), budgets={"owner_tokens_per_day": 10})  # type: ignore[arg-type]


def test_o3_none_means_no_limit() -> None:
    engine = FlowEngine([OneFlow], store=MemoryStore(), budgets={"session_tokens": None})
    assert engine.flow_names() == ["OneFlow"]
