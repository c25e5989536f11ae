"""SQLite rows changed by hand: the row's revision is the one that counts (P4, H3).

A session document whose stored JSON says another revision than its row (someone edited it with
the sqlite3 shell, or restored one part from a backup) used to make every later save a 409 that
never cleared: the engine saved against the document's revision, the row compared its own.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from support.flows import engine_for, two_step_flow

from picoflow.stores import SQLiteStore
from picoflow.testing import ScriptedChatModel


async def test_p4_a_document_whose_revision_disagrees_with_its_row_still_saves(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    model = ScriptedChatModel(script=["Where to?", "Noted.", "Still noted."])
    store = SQLiteStore(path)
    engine = engine_for(two_step_flow(model), store=store)
    first = await engine.run("HotelFlow", "hi")
    second = await engine.run("HotelFlow", "Lyon", first.session_id)
    assert second.success
    await engine.aclose()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute(
            "UPDATE sessions SET doc = json_set(doc, '$.revision', 7) WHERE id = ?",
            (first.session_id,),
        )
    reopened = SQLiteStore(path)
    try:
        doc = await reopened.load(first.session_id)
        assert doc is not None and doc["revision"] == 1  # the row's, not the edited text's
        again = engine_for(two_step_flow(model), store=reopened)
        third = await again.run("HotelFlow", "two nights", first.session_id)
        assert third.success and third.message == "Still noted.", third
        assert await reopened.revision(first.session_id) == 2
    finally:
        await reopened.aclose()


async def test_m14_a_damaged_row_neither_blocks_the_idle_index_nor_the_other_sessions(
    tmp_path: Path,
) -> None:
    """The idle index reads the JSON of every row: a row that is not JSON must not break it."""
    path = tmp_path / "sessions.db"
    model = ScriptedChatModel(script=["Where to?", "Where to?"])
    store = SQLiteStore(path)
    engine = engine_for(two_step_flow(model), store=store)
    damaged = await engine.run("HotelFlow", "hi")
    intact = await engine.run("HotelFlow", "hello")
    await engine.aclose()
    with closing(sqlite3.connect(path)) as db, db:
        db.execute("DROP INDEX sessions_idle")  # a file from before the index, damaged by hand
        db.execute("UPDATE sessions SET doc = ? WHERE id = ?", ('{"id": "', damaged.session_id))
    reopened = SQLiteStore(path)  # builds the index over the damaged row
    try:
        listed = await reopened.idle_sessions("9999-01-01T00:00:00Z")
        assert [s["id"] for s in listed] == [intact.session_id]
    finally:
        await reopened.aclose()
