"""What SQLiteStore promises beyond the conformance suite: one file, WAL, many writers (P4, P6)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import sqlite3
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, message_to_dict
from two_writers import check_two_processes_never_lose_an_update

from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.stores import SQLiteStore
from picoflow.stores.base import SavedMessages

OPERATION_HINT = (
    "Check that the disk is not full, that no other program keeps the file locked, and that "
    "its tables were not changed by hand."
)


def doc(session_id: str = "s-1", **fields: Any) -> dict[str, Any]:
    return {
        "id": session_id,
        "revision": 0,
        "flow": "HotelFlow",
        "expires_at": "2025-01-03T03:04:05+00:00",
        **fields,
    }


def human(position: int, text: str) -> dict[str, Any]:
    return {"position": position, "message": message_to_dict(HumanMessage(text))}


@asynccontextmanager
async def opened_with(path: str | Path, **options: Any) -> AsyncIterator[SQLiteStore]:
    store = SQLiteStore(path, **options)
    try:
        yield store
    finally:
        await store.aclose()


def opened(path: str | Path) -> Any:
    return opened_with(path)


def open_failure(path: Path, reason: str) -> str:
    return (
        f"SQLiteStore could not open SQLite file '{path}': {reason}. Check the path is writable "
        "and is an SQLite database or does not exist yet."
    )


def test_p6_sqlite_store_is_built_outside_an_event_loop_and_touches_nothing(
    tmp_path: Path,
) -> None:
    path = tmp_path / "later" / "sessions.db"

    assert repr(SQLiteStore(path)) == f"SQLiteStore('{path}')"
    assert not path.parent.exists()


async def test_p6_sqlite_creates_a_missing_parent_directory(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "sessions.db"

    async with opened(path) as store:
        await store.create(doc())

    assert path.is_file()


async def test_p6_sqlite_keeps_sessions_as_json_text_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        await store.save(doc(flow="HotelFlow"), 0)
        await store.archive("s-1", "explore", [human(3, "Hotel in LISBON")])

    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        sessions = db.execute(
            "SELECT id, revision, json_extract(doc, '$.revision'), json_extract(doc, '$.flow'), "
            "expires_at FROM sessions"
        ).fetchall()
        archive = db.execute("SELECT session_id, namespace, position, text FROM archive").fetchall()

    assert sessions == [("s-1", 1, 1, "HotelFlow", "2025-01-03T03:04:05+00:00")]
    assert archive == [("s-1", "explore", 3, "hotel in lisbon")]


async def test_p6_sqlite_sessions_survive_a_new_store_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        await store.save(doc(current_step="PresentStep"), 0)
        await store.archive("s-1", "explore", [human(1, "budget 300")])

    async with opened(path) as restarted:
        assert await restarted.load("s-1") == doc(current_step="PresentStep", revision=1)
        assert await restarted.search_archive("s-1", "explore", "budget") == [
            human(1, "budget 300")
        ]


async def test_p6_sqlite_memory_path_keeps_sessions_in_ram(tmp_path: Path) -> None:
    async with opened(":memory:") as store:
        await store.create(doc())

        assert await store.load("s-1") == doc()
    assert list(tmp_path.iterdir()) == []


async def test_p4_sqlite_stores_sharing_a_file_have_exactly_one_winner(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as a, opened(path) as b, opened(path) as c:
        await a.create(doc())
        for revision in range(20):
            saves = [s.save(doc(writer=n), revision) for n, s in enumerate((a, b, c))]
            results = await asyncio.gather(*saves, return_exceptions=True)

            assert sorted(results, key=lambda r: isinstance(r, Exception))[0] == revision + 1
            conflicts = [r for r in results if isinstance(r, SessionConflictError)]
            assert len(conflicts) == 2
            assert {(r.expected_revision, r.actual_revision) for r in conflicts} == {
                (revision, revision + 1)
            }
            winner = results.index(revision + 1)
            assert await c.load("s-1") == doc(writer=winner, revision=revision + 1)


async def test_p6_sqlite_path_that_is_a_directory_raises_store_error(tmp_path: Path) -> None:
    async with opened(tmp_path) as store:
        with pytest.raises(StoreError) as caught:
            await store.create(doc())

    assert str(caught.value) == open_failure(tmp_path, "unable to open database file")
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)


async def test_p6_sqlite_parent_that_is_a_file_raises_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    path = blocker / "sessions.db"

    async with opened(path) as store:
        with pytest.raises(StoreError) as caught:
            await store.load("s-1")

    reason = f"[Errno 17] File exists: '{blocker}'"
    assert str(caught.value) == open_failure(path, reason)
    assert isinstance(caught.value.__cause__, OSError)


async def test_p6_sqlite_file_that_is_not_a_database_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are my notes, not a database" * 100)

    async with opened(path) as store:
        with pytest.raises(StoreError) as caught:
            await store.load("s-1")

    assert str(caught.value) == open_failure(path, "file is not a database")
    assert path.read_bytes() == b"these are my notes, not a database" * 100


async def test_p6_sqlite_failed_read_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        with closing(sqlite3.connect(path)) as db:
            db.execute("DROP TABLE archive")
            db.commit()

        with pytest.raises(StoreError) as caught:
            await store.search_archive("s-1", "explore", "budget")

        assert str(caught.value) == (
            "SQLiteStore could not search the archive of session 's-1' in SQLite file "
            f"'{path}': no such table: archive. {OPERATION_HINT}"
        )
        assert await store.load("s-1") == doc()


async def test_p2_sqlite_failed_write_rolls_back_and_leaves_the_store_usable(
    tmp_path: Path,
) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        with closing(sqlite3.connect(path)) as db:
            db.execute("DROP TABLE sessions")
            db.commit()

        with pytest.raises(StoreError) as caught:
            await store.save(doc(), 0)

        assert str(caught.value) == (
            f"SQLiteStore could not save session 's-1' in SQLite file '{path}': "
            f"no such table: sessions. {OPERATION_HINT}"
        )
        await store.archive("s-1", "explore", [human(1, "still works")])
        assert await store.search_archive("s-1", "explore", "works") == [human(1, "still works")]


async def test_p4_two_processes_on_one_sqlite_session_never_lose_an_update(
    tmp_path: Path,
) -> None:
    """P4: app processes sharing the file race on one session; each save is one statement."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await check_two_processes_never_lose_an_update(store, f"sqlite:///{path}", "-")


@contextmanager
def write_lock_held(path: Path) -> Iterator[sqlite3.Connection]:
    """Another connection (another process, say) holds the file's write lock meanwhile."""
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN IMMEDIATE")
        try:
            yield other
        finally:
            if other.in_transaction:
                other.execute("ROLLBACK")


async def still_waiting(task: asyncio.Future[Any]) -> bool:
    """True if `task` is not done after a moment: it waits for something (not a sync point)."""
    done, _ = await asyncio.wait({task}, timeout=0.2)
    return not done


async def test_p4_sqlite_a_save_is_judged_under_the_write_lock_after_the_other_writer(
    tmp_path: Path,
) -> None:
    """P4: a save that waits for another connection's lock compares against what that
    connection committed, never against what was stored before it waited."""
    path = tmp_path / "sessions.db"
    async with opened(path) as a, opened(path) as b:
        await a.create(doc())
        with write_lock_held(path) as other:
            other.execute("UPDATE sessions SET revision = 1 WHERE id = 's-1'")
            stale = asyncio.ensure_future(a.save(doc(writer="a"), 0))
            assert await still_waiting(stale)
            other.execute("COMMIT")

        with pytest.raises(SessionConflictError) as caught:
            await stale
        assert (caught.value.expected_revision, caught.value.actual_revision) == (0, 1)
        assert await b.load("s-1") == {**doc(), "revision": 1}  # the row's revision counts


async def test_p4_sqlite_a_conflicting_save_names_what_is_stored_under_the_lock(
    tmp_path: Path,
) -> None:
    """P4: a stale save whose session is deleted while it waits for the lock is not found."""
    path = tmp_path / "sessions.db"
    async with opened(path) as a:
        await a.create(doc())
        await a.save(doc(), 0)
        with write_lock_held(path) as other:
            other.execute("DELETE FROM sessions WHERE id = 's-1'")
            stale = asyncio.ensure_future(a.save(doc(writer="a"), 0))
            assert await still_waiting(stale)
            other.execute("COMMIT")

        with pytest.raises(SessionNotFoundError):
            await stale


async def test_p2_sqlite_a_create_whose_id_is_freed_meanwhile_creates(tmp_path: Path) -> None:
    """P2: a create that waits for the lock while another connection deletes the session
    creates it; a session deleted meanwhile is not reported as existing."""
    path = tmp_path / "sessions.db"
    async with opened(path) as a, opened(path) as b:
        await a.create(doc(writer="old"))
        with write_lock_held(path) as other:
            other.execute("DELETE FROM sessions WHERE id = 's-1'")
            create = asyncio.ensure_future(a.create(doc(writer="new")))
            assert await still_waiting(create)
            other.execute("COMMIT")

        await create
        assert await b.load("s-1") == doc(writer="new")


async def test_p3_sqlite_a_write_cancelled_while_waiting_for_the_lock_writes_nothing(
    tmp_path: Path,
) -> None:
    """P3: a save cancelled while it waits for the write lock neither commits later nor leaves
    the connection inside a transaction that would swallow every later save of the store."""
    path = tmp_path / "sessions.db"
    async with opened(path) as a, opened(path) as b:
        await a.create(doc())
        await a.save(doc(), 0)
        with write_lock_held(path):
            stale = asyncio.ensure_future(a.save(doc(writer="stale"), 1))
            assert await still_waiting(stale)
            stale.cancel()
            with pytest.raises(asyncio.CancelledError):
                await stale

        assert await a.save(doc(writer="late"), 1) == 2
        assert await b.load("s-1") == doc(writer="late", revision=2)  # committed, not pending


async def test_p6_sqlite_a_read_never_waits_for_a_write_lock_held_elsewhere(
    tmp_path: Path,
) -> None:
    """Issue 11: while another process holds the write lock and a save of one session waits
    for it, reads of other sessions (and of that one) complete at once (WAL, reader threads)."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc("s-1"))
        await store.create(doc("s-2", flow="Other"))
        with write_lock_held(path):
            waiting = asyncio.ensure_future(store.save(doc("s-1", writer="w"), 0))
            assert await still_waiting(waiting)

            reads = asyncio.gather(store.load("s-2"), store.revision("s-1"), store.load("s-1"))
            assert await asyncio.wait_for(reads, timeout=2.0) == [
                doc("s-2", flow="Other"),
                0,
                doc("s-1"),
            ]
            assert not waiting.done()
        assert await waiting == 1


async def test_p6_sqlite_a_deleted_file_raises_store_error_instead_of_writing_into_it(
    tmp_path: Path,
) -> None:
    """Issue 11: turns written into an unlinked file would be lost: the store refuses."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        for leftover in tmp_path.iterdir():
            leftover.unlink()

        with pytest.raises(StoreError) as caught:
            await store.save(doc(writer="lost"), 0)
        assert str(caught.value) == (
            f"SQLiteStore could not save session 's-1': its SQLite file '{path}' was deleted "
            "while the store had it open, so nothing was read or written. Restore the file, "
            "or restart the application so that it opens the file now at that path."
        )
        with pytest.raises(StoreError, match="was deleted while the store had it open"):
            await store.load("s-1")


async def test_p6_sqlite_a_replaced_file_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        async with opened(tmp_path / "backup.db") as backup:
            await backup.create(doc(writer="backup"))
        os.replace(tmp_path / "backup.db", path)

        with pytest.raises(StoreError) as caught:
            await store.revision("s-1")
        assert str(caught.value) == (
            "SQLiteStore could not read the revision of session 's-1': its SQLite file "
            f"'{path}' was replaced by another file while the store had it open, so nothing "
            "was read or written. Restore the file, or restart the application so that it "
            "opens the file now at that path."
        )


def test_p6_sqlite_synchronous_must_be_normal_or_full(tmp_path: Path) -> None:
    with pytest.raises(ValueError) as caught:
        SQLiteStore(tmp_path / "s.db", synchronous="OFF")  # type: ignore[arg-type]
    assert str(caught.value) == "SQLiteStore synchronous must be 'NORMAL' or 'FULL', got 'OFF'."


@pytest.mark.parametrize(("synchronous", "level"), [("NORMAL", 1), ("FULL", 2)])
async def test_p6_sqlite_synchronous_is_set_on_every_connection(
    tmp_path: Path, synchronous: Any, level: int
) -> None:
    async with opened_with(tmp_path / "s.db", synchronous=synchronous) as store:
        await store.create(doc())
        levels = {
            await store._read("read", lambda db: db.execute("PRAGMA synchronous").fetchone()[0]),
            await store._write(
                "write", lambda db, gate: db.execute("PRAGMA synchronous").fetchone()[0]
            ),
        }
    assert levels == {level}


async def test_p4_sqlite_revision_sees_another_connections_commit_at_once(tmp_path: Path) -> None:
    """P4: the engine trusts its cached session only if `revision` is current: it must see a
    save another process committed a moment ago."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        assert await store.revision("s-1") == 0
        with closing(sqlite3.connect(path)) as other:
            other.execute("UPDATE sessions SET revision = 7 WHERE id = 's-1'")
            other.commit()
        assert await store.revision("s-1") == 7
        assert await store.revision("s-2") is None


class WouldWait:
    """A connection whose reads get SQLITE_BUSY, as during a crashed writer's WAL recovery."""

    def execute(self, *args: Any) -> Any:
        busy = sqlite3.OperationalError("database is locked")
        busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
        raise busy


async def test_p6_sqlite_a_revision_read_that_would_wait_goes_to_a_reader_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with opened(tmp_path / "sessions.db") as store:
        await store.create(doc())
        monkeypatch.setattr(store, "_loop_connection", lambda action: WouldWait())
        assert await store.revision("s-1") == 0


async def test_p6_sqlite_a_failed_revision_read_raises_store_error(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        with closing(sqlite3.connect(path)) as db:
            db.execute("ALTER TABLE sessions RENAME COLUMN revision TO rev")
            db.commit()

        with pytest.raises(StoreError) as caught:
            await store.revision("s-1")
        assert str(caught.value) == (
            "SQLiteStore could not read the revision of session 's-1' in SQLite file "
            f"'{path}': no such column: revision. {OPERATION_HINT}"
        )


# --- message rows: a save writes what the turn added ------------------------------------


def message(text: str) -> dict[str, Any]:
    return message_to_dict(HumanMessage(text))


def session(memory: dict[str, list[dict[str, Any]]], **fields: Any) -> dict[str, Any]:
    spaces = {ns: {"messages": SavedMessages(m), "summary": None} for ns, m in memory.items()}
    return doc(memory=spaces, **fields)


def stored_rows(path: Path) -> list[tuple[str, int, str]]:
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute(
            "SELECT namespace, position, json_extract(message, '$.data.content') FROM messages "
            "ORDER BY namespace, position"
        ).fetchall()
    return [tuple(row) for row in rows]


async def test_p6_sqlite_a_save_writes_only_the_messages_a_turn_added(tmp_path: Path) -> None:
    """Issue 11: the cost of a save does not grow with the conversation: rows written before
    are left alone (an edit made to one behind the store's back survives the next save)."""
    path = tmp_path / "sessions.db"
    history = [message("system"), message("hi")]
    async with opened(path) as store:
        await store.create(session({"explore": history}))
        with closing(sqlite3.connect(path)) as db:
            db.execute(
                "UPDATE messages SET message = json_set(message, '$.data.content', 'untouched') "
                "WHERE position = 1"
            )
            db.commit()
        history = [*history, message("Lisbon")]
        assert await store.save(session({"explore": history}), 0) == 1

    assert stored_rows(path) == [
        ("explore", 0, "system"),
        ("explore", 1, "untouched"),
        ("explore", 2, "Lisbon"),
    ]
    with closing(sqlite3.connect(path)) as db:
        skeleton = db.execute("SELECT json_extract(doc, '$.memory.explore.messages') FROM sessions")
        assert skeleton.fetchall() == [("[]",)]


async def test_p2_sqlite_message_rows_always_load_as_saved(tmp_path: Path) -> None:
    """P2: whatever happens to a history between saves (appends, a new system prompt, a
    compaction that drops and shifts messages, a namespace gone, a plain list, another
    process saving), a fresh store loads exactly the document that was saved."""
    rng = random.Random(7)
    path = tmp_path / "sessions.db"
    spaces: dict[str, list[dict[str, Any]]] = {"a": [message("sys a")], "b": [message("sys b")]}
    async with opened(path) as store, opened(path) as other:
        await store.create(session(spaces))
        revision = 0
        for step in range(120):
            action = rng.choice(["append", "append", "prompt", "compact", "drop", "plain", "other"])
            name = rng.choice(sorted(spaces) or ["a"])
            history = list(spaces.get(name, [message(f"sys {name}")]))
            if action == "append":
                history += [message(f"{name} {step} {i}") for i in range(rng.randint(1, 4))]
            elif action == "prompt":
                history[0] = message(f"new prompt {step}")
            elif action == "compact" and len(history) > 3:
                history = [history[0], message(f"summary {step}"), *history[-2:]]
            if action == "drop" and len(spaces) > 1:
                spaces.pop(name)
            else:
                spaces[name] = history
            current = session(spaces, step=step)
            if action == "plain":
                current["memory"][name]["messages"] = list(history)
            writer = other if action == "other" else store
            revision = await writer.save(current, revision)

            async with opened(path) as fresh:
                assert await fresh.load("s-1") == session(spaces, step=step, revision=revision)


async def test_p6_sqlite_a_document_from_before_message_rows_loads_and_moves_to_rows(
    tmp_path: Path,
) -> None:
    """Files written before the `messages` table keep whole documents in the session row;
    they load as they are, and their next save moves the messages to rows."""
    path = tmp_path / "sessions.db"
    old = doc(memory={"explore": {"messages": [message("sys"), message("hi")], "summary": None}})
    with closing(sqlite3.connect(path)) as db:
        db.execute(
            "CREATE TABLE sessions (id TEXT PRIMARY KEY, revision INTEGER NOT NULL, "
            "doc TEXT NOT NULL, expires_at TEXT)"
        )
        db.execute("INSERT INTO sessions VALUES ('s-1', 0, ?, NULL)", (json.dumps(old),))
        db.commit()

    async with opened(path) as store:
        loaded = await store.load("s-1")
        assert loaded == old
        loaded["memory"]["explore"]["messages"].append(message("more"))
        assert await store.save(loaded, 0) == 1
        assert await store.load("s-1") == {**loaded, "revision": 1}
    assert [row[2] for row in stored_rows(path)] == ["sys", "hi", "more"]


async def test_p2_sqlite_delete_removes_the_message_rows(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(session({"explore": [message("sys")]}))
        await store.create(session({"explore": [message("other")]}, id="s-2"))
        assert await store.delete("s-1")
    assert stored_rows(path) == [("explore", 0, "other")]


# --- the event loop's connection: what never waits, runs without a thread ----------------


async def test_p6_sqlite_writes_that_need_not_wait_make_no_trip_to_a_thread(
    tmp_path: Path,
) -> None:
    """Issue 11: with the write lock free, a save commits on the event loop (a trip to a
    thread costs a context switch, milliseconds on a busy host); the writer thread is never
    even started."""
    async with opened(tmp_path / "sessions.db") as store:
        await store.create(doc())
        assert await store.revision("s-1") == 0
        assert await store.save(doc(step=1), 0) == 1
        await store.archive("s-1", "explore", [human(1, "budget")])
        assert await store.delete("s-1")
        assert store._writer._thread is None


async def test_p6_sqlite_synchronous_full_writes_on_the_writer_thread(tmp_path: Path) -> None:
    """A disk sync takes milliseconds: with synchronous="FULL" every write runs on a thread."""
    async with opened_with(tmp_path / "sessions.db", synchronous="FULL") as store:
        await store.create(doc())
        assert store._writer._thread is not None
        assert await store.save(doc(step=1), 0) == 1


async def test_p6_sqlite_the_wal_is_checkpointed_in_the_background(tmp_path: Path) -> None:
    """Commits on the event loop never checkpoint (that syncs the disk); the writer thread
    does, once the WAL passes 4 MB, so the WAL stays bounded however much is written."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(doc())
        for revision in range(100):  # about 20 MB written
            # A new length each time: SQLite skips rewriting pages whose bytes did not change.
            await store.save(doc(blob="x" * (200_000 + revision)), revision)
            checkpoint = store._loop._checkpoint if store._loop else None
            if checkpoint is not None:
                await checkpoint
        wal = (tmp_path / "sessions.db-wal").stat().st_size
        assert wal < 10 * 1024 * 1024
        with closing(sqlite3.connect(path)) as db:
            (revision,) = db.execute("SELECT revision FROM sessions").fetchone()
        assert revision == 100


async def test_h3_sqlite_a_hand_damaged_message_row_is_a_refusal(tmp_path: Path) -> None:
    """H3: a message row changed outside picoflow cannot be read by retrying either."""
    path = tmp_path / "sessions.db"
    async with opened(path) as store:
        await store.create(session({"explore": [message("sys"), message("hi")]}))
        with closing(sqlite3.connect(path)) as db:
            db.execute("UPDATE messages SET message = '{\"type\": ' WHERE position = 1")
            db.commit()

        with pytest.raises(StoreError) as caught:
            await store.load("s-1")
        assert caught.value.retryable is False
        assert str(caught.value) == (
            "The stored messages of session 's-1', namespace 'explore' are damaged: they are "
            "not JSON, so they were changed outside picoflow. Delete the session or restore it "
            "from a backup."
        )
