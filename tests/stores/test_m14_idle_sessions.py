"""M14 and M16 on every store: `idle_sessions` pages, and archived originals' `compacted_at`.

Each test runs once per store in `conftest.STORE_FACTORIES`, through the `store` fixture; the
engine's `compact_idle` over them is in `test_m14_compact_idle.py`.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, message_to_dict

from picoflow.stores import SQLiteStore, Store
from picoflow.stores.mongo import MongoStore


def _doc(session_id: str, day: int, run_status: str = "running") -> dict[str, Any]:
    return {
        "id": session_id,
        "revision": 0,
        "flow": "IdleFlow",
        "run_status": run_status,
        "updated_at": f"2026-01-{day:02d}T00:00:00.000Z",
        "expires_at": None,
        "memory": {},
    }


async def _listed(store: Store, before: str, **kwargs: Any) -> list[str]:
    return [item["id"] for item in await store.idle_sessions(before, **kwargs)]  # type: ignore[attr-defined]


async def test_m14_idle_sessions_lists_running_sessions_saved_before_the_cutoff(
    store: Store,
) -> None:
    for session_id, day, status in [
        ("s-3", 3, "running"),
        ("s-1", 1, "running"),
        ("s-2", 2, "completed"),  # finished: no turn continues it, never listed
        ("s-4", 4, "aborted"),
        ("s-9", 9, "running"),  # saved after the cutoff: not idle
    ]:
        await store.create(_doc(session_id, day, status))

    page = await store.idle_sessions("2026-01-05T00:00:00.000Z")  # type: ignore[attr-defined]

    assert page == [
        {"id": "s-1", "flow": "IdleFlow", "updated_at": "2026-01-01T00:00:00.000Z",
         "expires_at": None},
        {"id": "s-3", "flow": "IdleFlow", "updated_at": "2026-01-03T00:00:00.000Z",
         "expires_at": None},
    ]  # fmt: skip


async def test_m14_idle_sessions_pages_by_updated_at_then_id(store: Store) -> None:
    # Two sessions saved in the same millisecond are told apart by their id.
    for session_id, day in [("b", 1), ("a", 1), ("c", 2), ("e", 3), ("d", 3)]:
        await store.create(_doc(session_id, day))
    before = "2026-02-01T00:00:00.000Z"

    first = await store.idle_sessions(before, limit=2)  # type: ignore[attr-defined]
    assert [item["id"] for item in first] == ["a", "b"]
    after = (first[-1]["updated_at"], first[-1]["id"])
    assert await _listed(store, before, after=after, limit=2) == ["c", "d"]
    assert await _listed(store, before, after=("2026-01-03T00:00:00.000Z", "d")) == ["e"]
    assert await _listed(store, before, after=("2026-01-03T00:00:00.000Z", "e")) == []


async def test_m14_a_session_saved_again_leaves_the_idle_list(store: Store) -> None:
    await store.create(_doc("s-1", 1))
    await store.create(_doc("s-2", 2))
    doc = await store.load("s-1")
    assert doc is not None
    doc["updated_at"] = "2026-03-01T00:00:00.000Z"
    await store.save(doc, doc["revision"])
    finished = await store.load("s-2")
    assert finished is not None
    finished["run_status"] = "completed"
    await store.save(finished, finished["revision"])

    assert await _listed(store, "2026-02-01T00:00:00.000Z") == []
    assert await _listed(store, "2026-04-01T00:00:00.000Z") == ["s-1"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"before": ""}, r"idle_sessions\(before=...\) takes an ISO 8601 UTC stamp"),
        ({"before": 5}, r"idle_sessions\(before=...\) takes an ISO 8601 UTC stamp"),
        ({"after": "2026-01-01"}, r"idle_sessions\(after=...\) takes the \(updated_at, id\)"),
        ({"after": ("2026", 3)}, r"idle_sessions\(after=...\) takes the \(updated_at, id\)"),
        ({"limit": 0}, r"idle_sessions\(limit=...\) takes a whole number from 1 to 1000"),
        ({"limit": 1001}, r"idle_sessions\(limit=...\) takes a whole number from 1 to 1000"),
        ({"limit": True}, r"idle_sessions\(limit=...\) takes a whole number from 1 to 1000"),
    ],
)
async def test_m14_idle_sessions_refuses_bad_arguments(
    store: Store, kwargs: dict[str, Any], message: str
) -> None:
    arguments: dict[str, Any] = {"before": "2026-01-01T00:00:00.000Z", **kwargs}
    before = arguments.pop("before")
    with pytest.raises(ValueError, match=message):
        await store.idle_sessions(before, **arguments)  # type: ignore[attr-defined]


async def test_m14_sqlite_reads_idle_sessions_from_an_index(tmp_path: Any) -> None:
    """A page is one range of the partial index: the table is never scanned (M14)."""
    from picoflow.stores._sqlite_extras import _IDLE

    store = SQLiteStore(tmp_path / "idle.db")
    await store.create(_doc("s-1", 1))
    assert await _listed(store, "2026-02-01T00:00:00.000Z") == ["s-1"]
    await store.aclose()
    db = sqlite3.connect(tmp_path / "idle.db")
    try:
        plan = db.execute("EXPLAIN QUERY PLAN " + _IDLE, ("x", "", "", 10)).fetchall()
    finally:
        db.close()
    assert [row[3] for row in plan] == [
        "SEARCH sessions USING INDEX sessions_idle (<expr>>? AND <expr><?)"
    ]


async def test_m14_mongo_indexes_running_sessions_by_updated_at(mongo: MongoStore) -> None:
    await mongo.create(_doc("s-1", 1))
    assert await _listed(mongo, "2026-02-01T00:00:00.000Z") == ["s-1"]
    async with mongo._collections("check the indexes") as (sessions, _, _):
        keys = [list(index["key"].items()) async for index in await sessions.list_indexes()]
    assert [("run_status", 1), ("updated_at", 1), ("_id", 1)] in keys


def _entry(position: int, text: str, **extra: Any) -> dict[str, Any]:
    return {"position": position, "message": message_to_dict(HumanMessage(text)), **extra}


async def test_m16_archived_originals_keep_their_compacted_at(store: Store) -> None:
    stamp = "2026-12-02T06:40:12.345Z"
    await store.archive("s-1", "chat", [_entry(1, "room 1", compacted_at=stamp)])
    await store.archive("s-1", "chat", [_entry(2, "room 2")])  # written before M16: no stamp
    # A retried compaction keeps the first entry of a position, and its stamp.
    await store.archive("s-1", "chat", [_entry(1, "room 1", compacted_at="2027-01-01T00:00:00Z")])

    assert await store.search_archive("s-1", "chat", "room") == [
        _entry(2, "room 2"),
        _entry(1, "room 1", compacted_at=stamp),
    ]


@pytest.mark.parametrize("stamp", ["", 17, ["2026"]])
async def test_m16_a_bad_compacted_at_archives_nothing(store: Store, stamp: Any) -> None:
    entries = [_entry(1, "kept"), _entry(2, "bad", compacted_at=stamp)]
    with pytest.raises(ValueError, match="an entry's 'compacted_at' must be the ISO 8601 stamp"):
        await store.archive("s-1", "chat", entries)
    assert await store.search_archive("s-1", "chat", "") == []


async def test_m16_an_sqlite_file_from_before_compacted_at_gains_the_column(
    tmp_path: Any,
) -> None:
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    await store.archive("s-1", "chat", [_entry(1, "old budget")])
    await store.aclose()
    db = sqlite3.connect(path)
    db.execute("ALTER TABLE archive DROP COLUMN compacted_at")  # the archive as it used to be
    db.commit()
    db.close()

    reopened = SQLiteStore(path)
    try:
        await reopened.archive("s-1", "chat", [_entry(2, "new budget", compacted_at="2026-12-02Z")])
        assert await reopened.search_archive("s-1", "chat", "budget") == [
            _entry(2, "new budget", compacted_at="2026-12-02Z"),
            _entry(1, "old budget"),
        ]
    finally:
        await reopened.aclose()
