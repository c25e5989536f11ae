"""K8 under kill -9: a worker killed after a tool with effects ran and before the turn's save.

Nothing of the turn reaches the session, so the client retries the same request, with the same
idempotency key, on another worker. The call has the same key there (it is made of the request,
not of the model's call ids), and the claim the killed worker took in the store before running
the tool is still held: the tool is not run again, and the session records the effect once, as
interrupted (it may have taken effect), with the key to check.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.approval_flows import RUNS_FILE, booking_engine, runs
from support.killed import kill_when_printed

from picoflow.stores import SQLiteStore

KEY = "kill-1"  # the key the killed worker sent its request with
WORKER = Path(__file__).resolve().parent.parent / "support" / "killed_effect_worker.py"


async def test_k8_kill_9_after_the_effect_before_the_save_never_repeats_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUNS_FILE, str(log))
    path = tmp_path / "sessions.db"
    starting = booking_engine(SQLiteStore(path))
    first = await starting.run("BookingFlow", "hello")
    session_id = first.session_id or ""
    await starting.aclose()

    kill_when_printed(WORKER, [f"sqlite:///{path}", session_id], ["ready", "before save"])
    assert [r["key"] for r in runs(log)] == [f"{session_id}:kill-1:book#1"]  # it ran once

    retrying = booking_engine(SQLiteStore(path))
    retried = await retrying.run("BookingFlow", "book Inn 100", session_id, idempotency_key=KEY)
    again = await retrying.run("BookingFlow", "book Inn 100", session_id, idempotency_key=KEY)
    doc = await retrying.get_session(session_id)
    await retrying.aclose()

    assert retried.success and again.replayed and again.message == retried.message
    assert len(runs(log)) == 1  # never run again
    assert retried.message.startswith("Result: Interrupted: an earlier attempt of this request")
    assert doc is not None
    [effect] = doc["effects"]  # recorded once
    assert (effect["key"], effect["result"]["status"]) == (runs(log)[0]["key"], "interrupted")
