"""K8, K9 over HTTP, two workers on one store: a turn stopped after an effect is saved and its
retry, on the other worker, replays it; going back past the effect is a 409 unless forced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_flows import client_for
from support.effect_flows import effect_flow

from picoflow import FlowEngine
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore


@pytest.fixture(params=["memory", "sqlite"])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    return MemoryStore() if request.param == "memory" else str(tmp_path / "s.db")


def _worker(store: Any, runs: list[str]) -> Any:
    real = SQLiteStore(store) if isinstance(store, str) else store
    engine = FlowEngine([effect_flow(None, runs)], store=real, budgets={"model_calls_per_turn": 1})
    return create_app(engine)


async def test_k8_k9_a_stopped_turn_replays_on_the_other_worker_and_undo_needs_force(
    shared_store: Any,
) -> None:
    runs: list[str] = []
    one, other = _worker(shared_store, runs), _worker(shared_store, runs)
    async with client_for(one) as first, client_for(other) as second:
        start = await first.post("/ai/run", json={"flowName": "EffectFlow", "message": "hi"})
        session = start.json()["session"]
        headers = {"CHAT_SESSION_ID": session, "Idempotency-Key": "book-1"}
        body = {"flowName": "EffectFlow", "message": "book Inn"}
        stopped = await first.post("/ai/run", json=body, headers=headers)
        retried = await second.post("/ai/run", json=body, headers=headers)
        assert stopped.status_code == retried.status_code == 429
        assert stopped.json()["code"] == "budget_exceeded"
        assert (
            "Done before this turn stopped: book(hotel='Inn') -> Booked Inn, reference R-1."
            in (stopped.json()["message"])
        )
        assert "was not changed" not in stopped.json()["message"]
        assert len(runs) == 1 and runs[0].endswith(":book-1:book#1")  # ran once, on one key

        refused = await second.post(f"/ai/sessions/{session}/undo", json={})
        assert refused.status_code == 409
        assert refused.json()["code"] == "effect_in_history"
        assert "book (revision" in refused.json()["message"]
        forced = await second.post(f"/ai/sessions/{session}/undo", json={"force": True})
        assert forced.status_code == 200, forced.text
        doc = (await first.get(f"/ai/sessions/{session}")).json()
        assert [e["tool"] for e in doc["effects"]] == ["book"]
        bad = await second.post(f"/ai/sessions/{session}/undo", json={"force": "yes"})
        assert bad.status_code == 400  # a force that is not a bool is refused, not guessed
