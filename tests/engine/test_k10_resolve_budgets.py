"""K10, O3: a resolve is budgeted like a turn, on MemoryStore and SQLite, in-process and over HTTP.

A resolve runs the approved tool before its model answers, so a session (or owner) already at
its limit is refused before the tool runs; a limit passed by the model's answer is refused after
the tool ran, whose result stays saved (K8) and is never run again. Operator replies and returns
call no model: like a user's message held for the operator, they spend nothing and go through.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from support.approval_flows import RUNS_FILE, booking_flow, runs

from picoflow import FlowEngine
from picoflow._ops._budgets import today
from picoflow.server import Principal, create_app
from picoflow.stores import MemoryStore, SQLiteStore, Store

BOOK = "book Ritz 900"  # over the limit of 500: waits for approval (K1)
APPROVED = "Result: Booked Ritz for 900."


@pytest.fixture(params=["memory", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    return MemoryStore() if request.param == "memory" else SQLiteStore(str(tmp_path / "s.db"))


@pytest.fixture
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runs.jsonl"
    monkeypatch.setenv(RUNS_FILE, str(path))
    return path


def engine_on(store: Store, budgets: dict[str, int] | None = None) -> FlowEngine:
    return FlowEngine(flows=[booking_flow()], store=store, budgets=budgets)


def tokens(usage: dict[str, dict[str, int]]) -> int:
    return sum(counts.get("total_tokens", 0) for counts in usage.values())


async def asked(
    store: Store, owner: str = "ann", budgets: dict[str, int] | None = None
) -> tuple[str, str, int]:
    """A session whose booking waits for approval; its id, the approval's and its tokens."""
    first = await engine_on(store, budgets).run("BookingFlow", BOOK, owner=owner)
    assert first.success and first.pending_approvals, first.message
    doc = await store.load(first.session_id)
    assert doc is not None
    used = tokens(doc["usage"])
    assert used > 0
    return first.session_id, first.pending_approvals[0]["id"], used


async def test_k10_a_resolve_at_the_session_limit_is_refused_before_the_tool_runs(
    store: Store, run_log: Path
) -> None:
    session, approval, used = await asked(store)
    before = await store.load(session)
    limited = engine_on(store, {"session_tokens": used})
    refused = await limited.resolve_approval(session, approval, "approve", by="boss")
    assert (refused.success, refused.error) == (False, "BudgetExceeded")
    assert "session_tokens" in refused.message and "the session was not changed" in refused.message
    assert runs(run_log) == []  # the tool never ran
    assert await store.load(session) == before  # P3: nothing of it was saved
    assert [a["id"] for a in await limited.pending_approvals(session)] == [approval]
    done = await engine_on(store).resolve_approval(session, approval, "approve", by="boss")
    assert (done.success, done.message) == (True, APPROVED)  # still decidable once allowed
    assert len(runs(run_log)) == 1


async def test_k10_a_resolve_whose_answer_passes_the_limit_keeps_the_effect_and_never_repeats_it(
    store: Store, run_log: Path
) -> None:
    session, approval, used = await asked(store)
    limited = engine_on(store, {"session_tokens": used + 1})  # room to start, not to answer
    refused = await limited.resolve_approval(session, approval, "approve", by="boss")
    again = await limited.resolve_approval(session, approval, "approve", by="boss")
    for result in (refused, again):
        assert (result.success, result.error) == (False, "BudgetExceeded")
        assert "The approved call of book ran before that" in result.message
        assert "never runs the tool again" in result.message
    assert len(runs(run_log)) == 1  # K8: the effect happened once
    doc = await store.load(session)
    assert doc is not None
    [record] = doc["approvals"]
    assert (record["status"], record["result"]["content"]) == ("resolved", "Booked Ritz for 900.")
    assert tokens(doc["usage"]) == used  # what was saved stays within the limit
    answered = await engine_on(store).resolve_approval(session, approval, "approve", by="boss")
    assert (answered.success, answered.message) == (True, APPROVED)
    assert len(runs(run_log)) == 1


async def test_k10_a_resolve_counts_in_the_owners_day_and_an_owner_at_the_limit_is_refused(
    store: Store, run_log: Path
) -> None:
    ledger: Any = store
    session, approval, _ = await asked(store, "ada", {"owner_tokens_per_day": 10**9})
    day = await ledger.owner_tokens("ada", today())
    assert day > 0
    at_limit = engine_on(store, {"owner_tokens_per_day": day})
    refused = await at_limit.resolve_approval(session, approval, "approve", by="boss")
    assert (refused.success, refused.error) == (False, "BudgetExceeded")
    assert "owner_tokens_per_day" in refused.message and "'ada'" in refused.message
    assert runs(run_log) == []
    roomy = engine_on(store, {"owner_tokens_per_day": day * 10})
    done = await roomy.resolve_approval(session, approval, "approve", by="boss")
    assert done.success, done.message
    spent = tokens(done.usage)
    assert spent > 0
    assert await ledger.owner_tokens("ada", today()) == day + spent  # O3: the owner's day


async def test_k10_operator_replies_and_returns_spend_nothing_and_go_through_at_the_limit(
    store: Store,
) -> None:
    handed = await engine_on(store).run("BookingFlow", "I want a person", owner="ann")
    assert handed.success, handed.message
    doc = await store.load(handed.session_id)
    assert doc is not None
    used = tokens(doc["usage"])
    limited = engine_on(store, {"session_tokens": used})
    session = handed.session_id
    held = await limited.run("BookingFlow", "hello?", session_id=session, owner="ann")
    reply = await limited.operator_reply(session, "A person here: how can I help?", by="sam")
    back = await limited.return_to_flow(session, by="sam")
    for result in (held, reply, back):  # no model call: nothing to refuse, as for a held turn
        assert result.success, result.message
        assert tokens(result.usage) == 0
    next_turn = await limited.run("BookingFlow", "thanks", session_id=session, owner="ann")
    assert (next_turn.success, next_turn.error) == (False, "BudgetExceeded")  # the model would


ROLES = {"ann": frozenset(), "boss": frozenset({"approver"})}


def by_header(request: Any) -> Principal | None:
    name = request.headers.get("X-User")
    return Principal(name, ROLES[name]) if name in ROLES else None


async def resolve_over_http(engine: FlowEngine, session: str, approval: str) -> httpx.Response:
    app = create_app(engine, authorize=by_header)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post(
            f"/ai/approvals/{approval}",
            json={"decision": "approve"},
            headers={"X-User": "boss", "CHAT_SESSION_ID": session},
        )


async def test_k10_over_http_a_resolve_past_the_limit_is_429_budget_exceeded(
    store: Store, run_log: Path
) -> None:
    session, approval, used = await asked(store)
    at_limit = await resolve_over_http(
        engine_on(store, {"session_tokens": used}), session, approval
    )
    assert (at_limit.status_code, at_limit.json()["code"]) == (429, "budget_exceeded")
    assert runs(run_log) == []
    after = await resolve_over_http(
        engine_on(store, {"session_tokens": used + 1}), session, approval
    )
    assert (after.status_code, after.json()["code"]) == (429, "budget_exceeded")
    assert "The approved call of book ran before that" in after.json()["message"]
    assert len(runs(run_log)) == 1
    done = await resolve_over_http(engine_on(store), session, approval)
    assert (done.status_code, done.json()["message"]) == (200, APPROVED)
    assert len(runs(run_log)) == 1
