"""W1-W5 on every store: history, rewind, undo, fork, edit, retention, purge, forget_principal.

Each test runs once per store (MemoryStore, SQLiteStore, MongoStore on SecantusDB); the
`scan` helpers look at what a store holds with its own tools (SQLite tables, Mongo
collections), so "nothing left behind" is checked on the storage itself.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from conftest import memory_store, mongo_store, sqlite_store
from support.failed_turns import apart_from_error
from support.history_flows import GATE, ChatFlow, humans

from picoflow import FlowEngine, RevisionNotFoundError, SessionConflictError
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore

FACTORIES: dict[str, Callable[[pytest.FixtureRequest], AbstractAsyncContextManager[Store]]] = {
    "memory": memory_store,
    "sqlite": sqlite_store,
    "mongo": mongo_store,
}


@pytest.fixture(params=list(FACTORIES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    async with FACTORIES[request.param](request) as fresh:
        yield fresh


def engine_on(store: Store, **options: Any) -> FlowEngine:
    return FlowEngine(flows=[ChatFlow], store=store, **options)


async def chat(engine: FlowEngine, *texts: str) -> tuple[str, list[dict[str, Any]]]:
    """Run turns; return the session id and the document each turn saved."""
    session_id: str | None = None
    saved = []
    for text in texts:
        result = await engine.run("ChatFlow", text, session_id)
        assert result.success, result
        session_id = result.session_id
        assert session_id is not None
        saved.append(await engine.get_session(session_id))
    assert session_id is not None
    return session_id, saved


async def test_w1_history_lists_each_turn_newest_first(store: Store) -> None:
    engine = engine_on(store)
    session_id, _ = await chat(engine, "one", "two", "three")

    listed = await engine.history(session_id)

    assert [e["revision"] for e in listed] == [2, 1, 0]
    assert [e["message"] for e in listed] == ["three", "two", "one"]
    assert [e["reply"] for e in listed] == ["echo: three", "echo: two", "echo: one"]
    assert [e["action"] for e in listed] == ["turn"] * 3
    assert listed[2]["step_before"] is None and listed[0]["step_before"] == "ChatStep"
    assert all(e["step_after"] == "ChatStep" and e["saved_at"] for e in listed)
    assert [e["revision"] for e in await engine.history(session_id, limit=2)] == [2, 1]
    assert await engine.history("no-such-session-id-0000") == []


async def test_w1_get_session_at_a_revision_is_that_turns_document_exactly(store: Store) -> None:
    engine = engine_on(store)
    session_id, saved = await chat(engine, *[f"turn {i}" for i in range(6)])

    for revision, doc in enumerate(saved):
        again = await engine.get_session(session_id, revision=revision)
        assert json.dumps(again) == json.dumps(doc)  # same keys, same order, same values
    assert await engine.get_session(session_id, revision=99) is None


async def test_w2_rewind_then_a_new_turn(store: Store) -> None:
    engine = engine_on(store)
    session_id, saved = await chat(engine, "one", "two", "three")

    revision = await engine.rewind(session_id, 0)
    after = await engine.run("ChatFlow", "four", session_id)

    assert revision == 3 and after.success
    doc = await engine.get_session(session_id)
    assert humans(doc) == ["one", "four"]
    rewound = await engine.get_session(session_id, revision=3)
    assert rewound is not None and rewound["memory"] == saved[0]["memory"]
    listed = await engine.history(session_id)
    assert [(e["revision"], e["action"], e["restored"]) for e in listed[:2]] == [
        (4, "turn", None),
        (3, "rewind", 0),
    ]
    assert humans(await engine.get_session(session_id, revision=2)) == ["one", "two", "three"]


async def test_w2_undo_goes_back_one_turn_each_time(store: Store) -> None:
    engine = engine_on(store)
    session_id, _ = await chat(engine, "one", "two", "three")

    await engine.undo(session_id)
    assert humans(await engine.get_session(session_id)) == ["one", "two"]
    await engine.undo(session_id)
    assert humans(await engine.get_session(session_id)) == ["one"]
    with pytest.raises(RevisionNotFoundError, match="no earlier turn to undo"):
        await engine.undo(session_id)


async def test_w2_a_rewind_racing_a_turn_has_exactly_one_winner(store: Store) -> None:
    # Two engines on one store stand for two processes: each has its own locks.
    first, second = engine_on(store), engine_on(store)
    session_id, _ = await chat(first, "one", "two")
    GATE.closed, GATE.entered, GATE.opened = True, asyncio.Event(), asyncio.Event()
    try:
        turn = asyncio.ensure_future(first.run("ChatFlow", "three", session_id))
        await GATE.entered.wait()  # the turn loaded revision 1 and waits for its model
        rewound = await second.rewind(session_id, 0)
        GATE.opened.set()
        result = await turn
    finally:
        GATE.closed = False

    assert rewound == 2
    assert not result.success and result.error == "SessionConflictError"
    assert humans(await second.get_session(session_id)) == ["one"]

    # And the other way round: the rewind read revision 2, a turn saves first, the rewind loses.
    entered, opened = asyncio.Event(), asyncio.Event()
    original = second._revisions._old

    async def slow_old(session: str, revision: int) -> dict[str, Any]:
        doc = await original(session, revision)
        entered.set()
        await opened.wait()
        return doc

    second._revisions._old = slow_old  # type: ignore[method-assign]
    rewind = asyncio.ensure_future(second.rewind(session_id, 1))
    await entered.wait()
    assert (await first.run("ChatFlow", "again", session_id)).success
    opened.set()
    with pytest.raises(SessionConflictError):
        await rewind
    assert humans(await first.get_session(session_id)) == ["one", "again"]


async def test_w3_a_fork_and_its_origin_are_independent_both_ways(store: Store) -> None:
    engine = engine_on(store)
    session_id, _ = await chat(engine, "one", "two", "three")

    fork_id = await engine.fork(session_id, at_revision=1)
    await engine.run("ChatFlow", "fork turn", fork_id)
    await engine.run("ChatFlow", "origin turn", session_id)

    fork = await engine.get_session(fork_id)
    assert fork is not None and fork_id != session_id
    assert fork["forked_from"] == {"session_id": session_id, "revision": 1}
    assert humans(fork) == ["one", "two", "fork turn"]
    assert humans(await engine.get_session(session_id)) == ["one", "two", "three", "origin turn"]
    assert [e["action"] for e in await engine.history(fork_id)] == ["turn", "fork"]
    latest = await engine.fork(session_id)  # default: the current revision
    assert humans(await engine.get_session(latest))[-1] == "origin turn"


async def test_w3_a_fork_keeps_the_owner(store: Store) -> None:
    engine = engine_on(store)
    result = await engine.run("ChatFlow", "hello", owner="alice")
    assert result.session_id is not None

    fork_id = await engine.fork(result.session_id, owner="alice")

    assert (await engine.get_session(fork_id, owner="alice")) is not None
    assert await engine.get_session(fork_id, owner="bob") is None
    with pytest.raises(Exception, match="does not exist"):
        await engine.fork(result.session_id, owner="bob")


async def test_w4_edit_message_reruns_that_turn_with_the_new_text(store: Store) -> None:
    engine = engine_on(store)
    session_id, _ = await chat(engine, "one", "two", "three")

    edited = await engine.edit_message(session_id, 1, "TWO")

    assert edited.success and edited.message == "echo: TWO"
    assert humans(await engine.get_session(session_id)) == ["one", "TWO"]
    listed = await engine.history(session_id)
    assert (listed[0]["revision"], listed[0]["action"], listed[0]["message"]) == (3, "edit", "TWO")
    await engine.undo(session_id)  # undoing the edit goes to before the edited turn
    assert humans(await engine.get_session(session_id)) == ["one"]


async def test_w4_editing_an_edited_message_replaces_it_again(store: Store) -> None:
    """An edit's revision ran on the one before the turn it edited, not on the revision before."""
    engine = engine_on(store)
    session_id, _ = await chat(engine, "one", "two")
    await engine.edit_message(session_id, 1, "TWO")  # revision 2, ran on revision 0

    again = await engine.edit_message(session_id, 2, "2")

    assert again.success and again.message == "echo: 2"
    assert humans(await engine.get_session(session_id)) == ["one", "2"]
    assert (await engine.history(session_id, limit=1))[0]["restored"] == 0


async def test_w4_a_failed_edit_leaves_the_session_as_it_was(store: Store) -> None:
    engine = engine_on(store)
    session_id, saved = await chat(engine, "one", "two")

    failed = await engine.edit_message(session_id, 1, "fail")
    not_a_turn = await engine.edit_message(session_id, 7, "x")
    first = await engine.edit_message(session_id, 0, "x")
    unknown = await engine.edit_message("NoSuchSession0123456789", 1, "x")
    no_id = await engine.edit_message(None, 1, "x")  # type: ignore[arg-type]  # a caller's slip

    assert not failed.success and "the model is down" in failed.message
    assert not_a_turn.error == "RevisionNotFoundError"
    assert first.error == "RevisionNotFoundError" and "Start a new session" in first.message
    assert unknown.error == "SessionNotFoundError" and "does not exist" in unknown.message
    assert no_id.error == "SessionNotFoundError" and "got None" in no_id.message
    assert no_id.session_id is None  # no new session was started in its place
    after = await engine.get_session(session_id)
    assert apart_from_error(after) == apart_from_error(saved[-1])  # U5: only the error written
    assert [e["error"] for e in after["error"]] == ["RuntimeError"]


async def test_w5_history_limit_keeps_the_newest_revisions(store: Store) -> None:
    engine = engine_on(store, history_limit=3)
    session_id, saved = await chat(engine, *[f"turn {i}" for i in range(8)])

    assert [e["revision"] for e in await engine.history(session_id)] == [7, 6, 5]
    assert await engine.get_session(session_id, revision=4) is None
    assert json.dumps(await engine.get_session(session_id, revision=5)) == json.dumps(saved[5])
    with pytest.raises(RevisionNotFoundError, match="engine.history"):
        await engine.rewind(session_id, 2)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"history_limit": 0}, "history_limit must be an int >= 1"),
        ({"history_limit": True}, "history_limit must be an int >= 1"),
        ({"history_max_age": -1}, "history_max_age must be a timedelta"),
        ({"history_max_age": "1h"}, "history_max_age must be a timedelta"),
    ],
)
def test_w5_bad_retention_settings_are_refused_at_start(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FlowEngine(flows=[ChatFlow], store=MemoryStore(), **options)


async def test_w1_bad_revision_arguments_say_what_to_pass() -> None:
    engine = engine_on(MemoryStore())
    session_id, _ = await chat(engine, "one")
    with pytest.raises(ValueError, match="A revision is an int >= 0"):
        await engine.rewind(session_id, "1")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="A revision is an int >= 0"):
        await engine.get_session(session_id, revision=-1)
    with pytest.raises(ValueError, match="limit must be an int >= 1"):
        await engine.history(session_id, limit=0)
    with pytest.raises(ValueError, match="forget_principal needs"):
        await engine.forget_principal("")


_FTS_OWN = ("_fts_data", "_fts_idx", "_fts_config", "_fts_docsize")


async def scan(store: Store, request: pytest.FixtureRequest) -> list[str]:
    """Every stored record, as text, whatever the store's layout."""
    if isinstance(store, MemoryStore):
        return [repr(store._docs), repr(store._archive), repr(store._revisions)]
    if isinstance(store, SQLiteStore):
        db = sqlite3.connect(Path(store._path))
        try:
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            # the text indexes' own bookkeeping (structure records, settings) holds no session
            # data; their terms are checked below, through the index itself
            kept = [t for t in tables if t != "picoflow_meta" and not t.endswith(_FTS_OWN)]
            rows = [repr(row) for table in kept for row in db.execute(f"SELECT * FROM {table}")]
            indexed = db.execute("SELECT count(*) FROM archive_fts_idx").fetchone()[0]
            return rows + ([f"archive index holds {indexed} terms"] if indexed else [])
        finally:
            db.close()
    assert isinstance(store, MongoStore)
    database = await store._prepared()
    out = []
    for collection in database:
        out += [repr(doc) async for doc in collection.find({})]
    return out


def residue(rows: list[str]) -> list[str]:
    return [row for row in rows if row not in ("{}",)]


async def test_w5_expired_sessions_leave_nothing_behind(
    store: Store, request: pytest.FixtureRequest
) -> None:
    engine = engine_on(store, session_ttl=3600)
    session_id, saved = await chat(engine, "one", "two")
    await store.archive(session_id, "ChatStep", [{"position": 1, "message": {"data": {}}}])
    doc = saved[-1]
    past = "2000-01-01T00:00:00.000Z"  # the session's time ran out
    await store.save({**doc, "expires_at": past, "updated_at": past}, doc["revision"])

    purged = await engine.purge()
    # MongoDB's TTL monitor may have swept it first (it sweeps every 60 s): nothing left either.
    assert purged == 1 or (purged == 0 and isinstance(store, MongoStore))

    assert residue(await scan(store, request)) == []
    await engine.aclose()


async def test_w5_forget_principal_leaves_nothing_of_that_owner(
    store: Store, request: pytest.FixtureRequest
) -> None:
    engine = engine_on(store)
    mine = await engine.run("ChatFlow", "alice-secret", owner="alice")
    assert mine.session_id is not None
    await engine.run("ChatFlow", "alice-secret again", mine.session_id, owner="alice")
    await engine.fork(mine.session_id, owner="alice")
    await store.archive(
        mine.session_id, "ChatStep", [{"position": 1, "message": {"content": "alice-secret"}}]
    )
    theirs = await engine.run("ChatFlow", "bob-note", owner="bob")
    await engine.memory_bank("alice").add("alice prefers a quiet room")  # L5: it goes too
    await engine.memory_bank("bob").add("bob-note: a twin room")

    assert await engine.forget_principal("alice") == 2
    assert await engine.memory_bank("alice").list() == []
    assert len(await engine.memory_bank("bob").list()) == 1

    rows = await scan(store, request)
    assert not [row for row in rows if "alice" in row]
    assert any("bob-note" in row for row in rows)
    assert await engine.get_session(theirs.session_id or "") is not None


async def test_w5_archive_limit_keeps_the_newest_evicted_messages(store: Store) -> None:
    engine = engine_on(store, archive_limit=3)
    entries = [{"position": p, "message": {"data": {"content": f"budget {p}"}}} for p in (1, 2)]
    await store.archive("s-archive-limit-0001", "ChatStep", entries)
    more = [{"position": p, "message": {"data": {"content": f"budget {p}"}}} for p in (3, 4, 5)]
    await store.archive("s-archive-limit-0001", "ChatStep", more)

    found = await store.search_archive("s-archive-limit-0001", "ChatStep", "budget")

    assert [entry["position"] for entry in found] == [5, 4, 3]  # oldest went first
    assert await store.oldest_archived("s-archive-limit-0001", "ChatStep") == 3  # type: ignore[attr-defined]
    assert await store.oldest_archived("s-archive-limit-0001", "other") is None  # type: ignore[attr-defined]
    await engine.aclose()


def test_w5_a_bad_archive_limit_is_refused_at_start() -> None:
    with pytest.raises(ValueError, match="archive_limit must be an int >= 1"):
        FlowEngine(flows=[ChatFlow], store=MemoryStore(), archive_limit=0)


async def test_w5_mongo_deletes_rows_that_no_kept_revision_names(
    mongo: MongoStore, mongo_server: Any, mongo_database: str
) -> None:
    engine = engine_on(mongo, history_limit=3)
    session_id, _ = await chat(engine, *[f"turn {i}" for i in range(40)])  # 32 batches: rewritten

    rows = list(mongo_server.collection(mongo_database, "session_history").find({}))
    messages = [row for row in rows if "p" in row]
    revisions = [row for row in rows if "r" in row]
    current = await engine.get_session(session_id)
    assert current is not None
    # The current messages (1 system + 2 per turn), plus what the 3 kept revisions changed.
    assert len(current["memory"]["ChatStep"]["messages"]) == 81
    assert len(messages) <= 81 + 3 * 2
    # Kept revisions, and those whose batches the current document still names: a full
    # rewrite at revision 32 (32 batches), then one batch per turn (revisions 33-39).
    assert len(revisions) <= 3 + 8
