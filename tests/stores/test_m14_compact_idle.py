"""M14 `engine.compact_idle(older_than)` on every store, and M16's `compacted_at` through it.

Sessions are made idle by writing an old `updated_at` into the stored document (what an hour
of silence leaves behind), never by sleeping.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step, StoreError, summarise
from picoflow.stores import MemoryStore, MongoStore
from picoflow.stores.base import Store
from picoflow.testing import ScriptedChatModel


class Chat(Step):
    pass


def _model() -> ScriptedChatModel:
    def reply(messages: Any, tools: Any) -> str:
        return "the summary" if "Previous summary" in messages[-1].text else "ok"

    return ScriptedChatModel(policy=reply)


MODEL = _model()


class IdleFlow(Flow):
    def __init__(self) -> None:
        super().__init__()
        self.get_memory().set_summary_model(MODEL).set_policy("chat", summarise(16, 4))

    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [Chat(self).use_memory("chat")]


def _stamp(moment: datetime) -> str:
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


async def _talk(engine: FlowEngine, turns: int, session: str | None = None) -> str:
    for i in range(turns):
        result = await engine.run("IdleFlow", f"message {i}", session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


async def _idle(store: Store, session_id: str, hours: float) -> dict[str, Any]:
    """Make the stored session look last saved `hours` ago; return it as stored."""
    doc = await store.load(session_id)
    assert doc is not None
    doc["updated_at"] = _stamp(datetime.now(UTC) - timedelta(hours=hours))
    doc["revision"] = await store.save(doc, doc["revision"])
    return doc


async def _sessions(engine: FlowEngine, store: Store, turns: list[int], hours: float) -> list[str]:
    """One session per entry of `turns` (that many turns each), idle for `hours` (oldest first)."""
    made = []
    for index, count in enumerate(turns):
        session = await _talk(engine, count)
        await _idle(store, session, hours + len(turns) - index)
        made.append(session)
    return made


async def test_m14_idle_sessions_are_compacted_recent_and_empty_ones_are_not(
    store: Store,
) -> None:
    engine = FlowEngine([IdleFlow], store=store)
    first, second, short = await _sessions(engine, store, [4, 4, 1], hours=2)
    recent = await _talk(engine, 4)  # saved just now: not idle
    before = {s: await store.load(s) for s in (first, second, short, recent)}
    started = _stamp(datetime.now(UTC))

    report = await engine.compact_idle(timedelta(hours=1))

    assert report == {
        "looked_at": 3,
        "compacted": 2,
        "compacted_ids": [first, second],  # oldest first
        "compacted_count": 8,  # 8 messages each, the newest 4 stay
        "nothing_to_compact": 1,  # one turn: nothing beyond what the policy keeps
        "skipped": 0,
        "failed": [],
    }
    for session in (first, second):
        doc, old = await store.load(session), before[session]
        assert doc is not None and old is not None
        assert doc["revision"] == old["revision"] + 1
        assert doc["memory"]["chat"]["summary"] == "the summary"
        assert doc["memory"]["chat"]["summary_range"] == {"from_seq": 1, "to_seq": 4, "count": 4}
        # compaction is not activity: the session stays idle and expires when it would have
        assert (doc["updated_at"], doc["expires_at"]) == (old["updated_at"], old["expires_at"])
        archived = await store.search_archive(session, "chat", "", page_size=50)
        assert [entry["position"] for entry in archived] == [4, 3, 2, 1]
        stamps = {entry["compacted_at"] for entry in archived}  # M16: one compaction, one time
        assert len(stamps) == 1 and started <= stamps.pop() <= _stamp(datetime.now(UTC))
    for session in (short, recent):
        assert await store.load(session) == before[session]  # untouched
    again = await engine.compact_idle(3600)
    assert again["looked_at"] == 3 and again["compacted"] == 0
    assert again["nothing_to_compact"] == 3


async def test_m14_pages_through_more_sessions_than_one_page(store: Store) -> None:
    engine = FlowEngine([IdleFlow], store=store)
    made = await _sessions(engine, store, [3] * 7, hours=2)
    listing = store.idle_sessions  # type: ignore[attr-defined]
    pages: list[int] = []

    async def counted(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        page: list[dict[str, Any]] = await listing(*args, **kwargs)
        pages.append(len(page))
        return page

    store.idle_sessions = counted  # type: ignore[attr-defined]
    report = await engine.compact_idle(timedelta(minutes=30), page_size=3)

    assert pages == [3, 3, 1]
    assert report["looked_at"] == 7 and report["compacted_ids"] == made
    assert report["compacted_count"] == 7 * 2  # 6 messages each, the newest 4 stay


def _hook(store: Store, name: str, before: Callable[[str], Awaitable[None]]) -> None:
    """Run `before(session_id)` ahead of the store's `name` call for any session."""
    original = getattr(store, name)

    async def hooked(session_id: str, *args: Any, **kwargs: Any) -> Any:
        await before(session_id)
        return await original(session_id, *args, **kwargs)

    setattr(store, name, hooked)


async def test_m14_a_turn_after_the_listing_wins(store: Store) -> None:
    engine = FlowEngine([IdleFlow], store=store)
    busy, quiet = await _sessions(engine, store, [4, 4], hours=2)
    listing = store.idle_sessions  # type: ignore[attr-defined]

    async def then_a_turn(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        page: list[dict[str, Any]] = await listing(*args, **kwargs)
        await _talk(engine, 1, busy)  # the guest comes back between the listing and the lock
        return page

    store.idle_sessions = then_a_turn  # type: ignore[attr-defined]
    report = await engine.compact_idle(timedelta(hours=1))

    assert report["compacted_ids"] == [quiet] and report["skipped"] == 1
    doc = await store.load(busy)
    assert doc is not None and doc["memory"]["chat"]["summary"] is None
    assert len(doc["memory"]["chat"]["messages"]) == 11  # system + 5 turns, nothing evicted


async def test_m14_a_turn_of_another_process_saved_meanwhile_wins(store: Store) -> None:
    """Another engine (another process) saves during the compaction: its turn stays, whole."""
    engine, other = FlowEngine([IdleFlow], store=store), FlowEngine([IdleFlow], store=store)
    raced, quiet = await _sessions(engine, store, [4, 4], hours=2)
    done: set[str] = set()

    async def other_turn_first(session_id: str) -> None:
        if session_id == raced and session_id not in done:
            done.add(session_id)
            await _talk(other, 1, raced)

    _hook(store, "archive", other_turn_first)
    report = await engine.compact_idle(timedelta(hours=1))

    assert report["compacted_ids"] == [quiet] and report["skipped"] == 1
    assert report["failed"] == []
    doc = await store.load(raced)
    assert doc is not None and doc["memory"]["chat"]["summary"] is None
    assert len(doc["memory"]["chat"]["messages"]) == 11  # the other turn, never merged


async def test_m14_one_failing_session_does_not_stop_the_others(store: Store) -> None:
    engine = FlowEngine([IdleFlow], store=store)
    archive_fails, unreadable, fine = await _sessions(engine, store, [4, 4, 4], hours=2)

    async def refuse(session_id: str) -> None:
        if session_id == archive_fails:
            raise StoreError("the disk is full")

    async def broken(session_id: str) -> None:
        if session_id == unreadable:
            raise RuntimeError("the network went away")

    _hook(store, "archive", refuse)
    _hook(store, "revision", broken)
    report = await engine.compact_idle(timedelta(hours=1))

    assert report["compacted_ids"] == [fine]
    failed = {item["session_id"]: item["error"] for item in report["failed"]}
    assert list(failed) == [archive_fails, unreadable]
    assert failed[archive_fails].startswith(
        "Memory compaction skipped: the archive could not be written (the disk is full)"
    )
    assert failed[unreadable] == "RuntimeError: the network went away"
    doc = await store.load(archive_fails)
    assert doc is not None and doc["memory"]["chat"]["summary"] is None


async def test_m14_expired_and_unserved_sessions_are_skipped(store: Store) -> None:
    engine = FlowEngine([IdleFlow], store=store)
    expired, unserved = await _sessions(engine, store, [4, 4], hours=2)
    doc = await store.load(expired)
    assert doc is not None
    doc["expires_at"] = _stamp(datetime.now(UTC) - timedelta(minutes=5))
    await store.save(doc, doc["revision"])
    doc = await store.load(unserved)
    assert doc is not None
    doc["flow"] = "RetiredFlow"  # a flow this engine does not serve
    await store.save(doc, doc["revision"])

    report = await engine.compact_idle(timedelta(hours=1))

    counts = (report["looked_at"], report["skipped"], report["compacted"])
    if counts == (1, 1, 0):
        # MongoDB's TTL monitor may sweep the expired session before the walk lists it (a
        # sweep runs every 60 s); no other store deletes a session on its own.
        assert isinstance(store, MongoStore)
    else:
        assert counts == (2, 2, 0)


@pytest.mark.parametrize(
    ("older_than", "error", "message"),
    [
        (0, ValueError, "must be a positive duration"),
        (-5, ValueError, "must be a positive duration"),
        (timedelta(0), ValueError, "must be a positive duration"),
        (float("nan"), ValueError, "must be a positive duration"),
        ("1h", TypeError, "takes a timedelta or a number of seconds"),
        (True, TypeError, "takes a timedelta or a number of seconds"),
        (None, TypeError, "takes a timedelta or a number of seconds"),
    ],
)
async def test_m14_bad_older_than_is_refused(older_than: Any, error: type, message: str) -> None:
    engine = FlowEngine([IdleFlow], store=MemoryStore())
    with pytest.raises(error, match=message):
        await engine.compact_idle(older_than)


@pytest.mark.parametrize("page_size", [0, 1001, True, 2.5])
async def test_m14_bad_page_size_is_refused(page_size: Any) -> None:
    engine = FlowEngine([IdleFlow], store=MemoryStore())
    with pytest.raises(ValueError, match=r"compact_idle\(page_size=...\) takes a whole number"):
        await engine.compact_idle(60, page_size=page_size)


async def test_m14_a_store_that_cannot_list_idle_sessions_says_so() -> None:
    class Plain:
        """A store of its own that keeps sessions but lists none (delegates to a MemoryStore)."""

        def __init__(self) -> None:
            self._inner = MemoryStore()

        def __getattr__(self, name: str) -> Any:
            if name == "idle_sessions":
                raise AttributeError(name)
            return getattr(self._inner, name)

    engine = FlowEngine([IdleFlow], store=Plain())  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="Plain cannot list idle sessions"):
        await engine.compact_idle(60)
