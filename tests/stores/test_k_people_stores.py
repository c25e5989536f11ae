"""K1-K3 on every store: a pending approval is in the session document, survives a new engine
(another process, for SQLite), is resolved there, and its tool runs exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.approval_flows import RUNS_FILE, booking_engine, runs

from picoflow.stores import SQLiteStore, Store

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).parent.parent / "support" / "approval_worker.py"

REPLIES = {
    "approve": "Result: Booked Ritz for 900.",
    "edit": "Result: Booked Ritz for 450.",
    "reject": "Result: Declined by approver: a person did not approve this call of book, and "
    "it was not run. No reason was given. Tell the user, and do not call it again unless they "
    "ask for something different.",
}


@pytest.fixture
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUNS_FILE, str(path))
    return path


@pytest.mark.parametrize("decision", list(REPLIES))
async def test_k3_a_pending_approval_survives_a_new_engine_and_runs_once(
    store: Store, run_log: Path, decision: str
) -> None:
    asking = booking_engine(store)
    first = await asking.run("BookingFlow", "book Ritz 900", config={"limit": 500})
    [approval] = first.pending_approvals
    session_id = first.session_id or ""
    stored = await store.load(session_id)
    assert stored is not None and stored["approvals"][0]["status"] == "pending"

    resolver = booking_engine(store)  # a restart: nothing in memory but the store
    assert await resolver.pending_approvals(session_id) == [approval]
    args = {"hotel": "Ritz", "total": 450} if decision == "edit" else None
    done = await resolver.resolve_approval(
        session_id, approval["id"], decision, args=args, by="approver"
    )
    assert (done.success, done.message) == (True, REPLIES[decision])

    again = await asking.resolve_approval(session_id, approval["id"], decision, args=args)
    assert (again.success, again.message) == (True, REPLIES[decision])
    expected = {"approve": [900], "edit": [450], "reject": []}[decision]
    assert [r["total"] for r in runs(run_log)] == expected  # counted by the tool itself
    doc = await resolver.get_session(session_id)
    assert doc is not None and doc["approvals"][0]["reply"] == REPLIES[decision]


async def test_k3_another_process_resolves_an_approval_on_sqlite(
    tmp_path: Path, run_log: Path
) -> None:
    path = tmp_path / "sessions.db"
    engine = booking_engine(SQLiteStore(path))
    first = await engine.run("BookingFlow", "book Ritz 900", config={"limit": 500})
    approval_id = first.pending_approvals[0]["id"]
    session_id = first.session_id or ""

    output = _resolve_elsewhere(f"sqlite:///{path}", session_id, approval_id)

    assert output == {"success": True, "message": REPLIES["approve"], "error": None}
    assert [r["total"] for r in runs(run_log)] == [900]
    assert await engine.pending_approvals(session_id) == []
    mine = await engine.resolve_approval(session_id, approval_id, "approve")
    assert mine.message == REPLIES["approve"]
    assert len(runs(run_log)) == 1
    await engine.aclose()


def _resolve_elsewhere(url: str, session_id: str, approval_id: str) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}  # this checkout's picoflow
    done = subprocess.run(
        [sys.executable, str(WORKER), url, session_id, approval_id, "approve"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


async def test_k7_every_store_lists_the_sessions_that_wait_for_a_person(store: Store) -> None:
    engine = booking_engine(store)
    asking = await engine.run("BookingFlow", "book Ritz 900", config={"limit": 500}, owner="ann")
    handed = await engine.run("BookingFlow", "a person please", owner="bob")
    await engine.run("BookingFlow", "hello")  # nobody is expected in this one

    listed = await engine.waiting()
    waiting = sorted(listed, key=lambda w: str(w["owner"]))  # two saves may share a millisecond

    assert [(w["id"], w["owner"]) for w in waiting] == [
        (asking.session_id, "ann"),
        (handed.session_id, "bob"),
    ]
    assert waiting[0]["approvals"] == asking.pending_approvals
    assert waiting[1]["operator"]["note"] == "The guest asked: a person please"
    assert waiting[1]["approvals"] == []
    assert await engine.waiting(limit=1) == listed[:1]
    await engine.resolve_approval(
        asking.session_id or "", asking.pending_approvals[0]["id"], "reject"
    )
    assert [w["id"] for w in await engine.waiting()] == [handed.session_id]
    with pytest.raises(ValueError) as raised:
        await engine.waiting(limit=0)
    assert str(raised.value) == "waiting(limit=...) takes a whole number from 1 to 1000, got 0."
