"""SQLite's `revisions` table in both shapes it has had (W1, issue 39).

New files make it a rowid table, so a revision's whole document stays on its page instead of
spilling into overflow pages; files made before keep the WITHOUT ROWID table, and the same
statements must keep their history working.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.history_flows import ChatFlow

from picoflow import FlowEngine
from picoflow.stores import SQLiteStore
from picoflow.stores._sqlite_history import HISTORY_SCHEMA

OLD_SCHEMA = HISTORY_SCHEMA.replace(
    "PRIMARY KEY (session_id, revision)\n);", "PRIMARY KEY (session_id, revision)\n) WITHOUT ROWID;"
)


def _table_sql(path: Path) -> str:
    with sqlite3.connect(path) as db:
        (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'revisions'").fetchone()
    return str(sql)


@pytest.mark.parametrize("shape", ["new", "made before"])
async def test_w1_history_works_on_either_shape_of_the_revisions_table(
    tmp_path: Path, shape: str
) -> None:
    path = tmp_path / "s.db"
    if shape == "made before":
        assert OLD_SCHEMA != HISTORY_SCHEMA
        with sqlite3.connect(path) as db:
            db.executescript(OLD_SCHEMA)
    store = SQLiteStore(str(path))
    engine = FlowEngine([ChatFlow], store=store)
    first = await engine.run("ChatFlow", "one")
    await engine.run("ChatFlow", "two", first.session_id)
    history = await engine.history(first.session_id)
    assert [entry["revision"] for entry in history] == [1, 0]
    older = await store.load_revision(first.session_id, 0)
    assert older is not None and older["revision"] == 0
    await store.aclose()
    assert ("WITHOUT ROWID" in _table_sql(path)) == (shape == "made before")
