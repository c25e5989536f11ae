"""O4: `FlowEngine(concurrent_turns="reject" | "queue")` and the store leases behind "queue".

Two engines on one store stand for two workers: each has its own lock and caches, only the store
is shared (`test_o4_two_processes_*` below run real processes). The first turn is held inside
its model call on an `asyncio.Event`; a `LeaseSpy` around the store logs every lease attempt, so
a test knows the second turn was refused (it is waiting) before it lets the first one go. No
test sleeps to synchronise.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from mongo_server import MongoServer
from two_writers import check_two_processes_queue_every_turn

import picoflow.engine._leases
from picoflow import Flow, FlowEngine, Step, StoreError
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore
from picoflow.testing import ScriptedChatModel

STORES = pytest.mark.parametrize("store", ["memory", "sqlite", "mongo"], indirect=True)
DEADLINE_FAILED = (
    "The turn took longer than its deadline of 0.3 s and was stopped; the session was not "
    "changed. Send the message again."
)


class ChatStep(Step):
    pass


class Held:
    """A model that answers "ok: <message>", holding the messages named "slow..." on an event."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()  # a held call has started
        self.seen: list[list[str]] = []  # the texts of each call's messages

        async def reply(messages: list[BaseMessage], tools: list[str]) -> str:
            text = str(messages[-1].content)
            self.seen.append([str(m.content) for m in messages])
            if text.startswith("slow"):
                self.entered.set()
                await self.gate.wait()
            return f"ok: {text}"

        self.model = ScriptedChatModel(policy=reply)

    def flow(self) -> type[Flow]:
        model = self.model

        class ChatFlow(Flow):
            def config_model(self) -> Any:
                return model

            def define_steps(self) -> list[Step]:
                return [ChatStep(self)]

        return ChatFlow


class LeaseLog:
    """Every lease attempt of the spies that share it, as (engine name, granted)."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, bool]] = []
        self.changed = asyncio.Event()
        self.spies: dict[str, LeaseSpy] = {}

    def add(self, name: str, granted: bool) -> None:
        self.entries.append((name, granted))
        self.changed.set()

    async def until(self, condition: Callable[[], bool]) -> None:
        """Wait (on lease attempts, not on time) until `condition()` holds; fail after 10 s."""
        async with asyncio.timeout(10):
            while not condition():
                self.changed.clear()
                await self.changed.wait()

    def refused(self, name: str) -> int:
        return sum(1 for who, granted in self.entries if who == name and not granted)


class LeaseSpy:
    """`store`, with every lease attempt logged in `log` under `name`."""

    def __init__(self, store: Store, name: str, log: LeaseLog) -> None:
        self._store = store
        self._name = name
        self._log = log
        log.spies[name] = self
        self.fail: Exception | None = None  # raised by every acquire while set

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        if self.fail is not None:
            self._log.changed.set()  # an attempt, though not one that is logged
            raise self.fail
        granted: bool = await self._store.acquire_lease(  # type: ignore[attr-defined]
            session_id, holder, seconds
        )
        self._log.add(self._name, granted)
        return granted

    async def release_lease(self, session_id: str, holder: str) -> None:
        if self.fail is not None:
            raise self.fail
        await self._store.release_lease(session_id, holder)  # type: ignore[attr-defined]


def humans(doc: dict[str, Any] | None) -> list[str]:
    assert doc is not None
    return [
        m["data"]["content"] for m in doc["memory"]["ChatStep"]["messages"] if m["type"] == "human"
    ]


def workers(
    store: Store, held: Held, mode: str = "queue", timeouts: tuple[float, float] = (10, 10)
) -> tuple[FlowEngine, FlowEngine, LeaseLog]:
    """Two engines on `store` ("a" and "b"), each behind a spy; both log into one list."""
    log = LeaseLog()
    flow = held.flow()
    engines = [
        FlowEngine(
            [flow],
            LeaseSpy(store, name, log),  # type: ignore[arg-type]
            concurrent_turns=mode,  # type: ignore[arg-type]
            turn_timeout=timeout,
        )
        for name, timeout in zip("ab", timeouts, strict=True)
    ]
    return engines[0], engines[1], log


async def slow_turn(engine: FlowEngine, held: Held) -> tuple[str, asyncio.Future[Any]]:
    """Start a session, then a turn of it that `held` keeps inside its model call."""
    start = await engine.run("ChatFlow", "hello")
    session_id = str(start.session_id)
    slow = asyncio.ensure_future(engine.run("ChatFlow", "slow one", session_id))
    await held.entered.wait()
    return session_id, slow


async def free(store: Store, session_id: str) -> bool:
    """Whether nobody holds the session's lease (a probe takes it and gives it back)."""
    taken: bool = await store.acquire_lease(session_id, "probe", 5)  # type: ignore[attr-defined]
    if taken:
        await store.release_lease(session_id, "probe")  # type: ignore[attr-defined]
    return taken


# --- the option --------------------------------------------------------------------------------


def test_o4_concurrent_turns_must_be_reject_or_queue() -> None:
    with pytest.raises(ValueError) as caught:
        FlowEngine([Held().flow()], MemoryStore(), concurrent_turns="wait")  # type: ignore[arg-type]
    assert str(caught.value) == (
        "concurrent_turns must be 'reject' (a turn of a session running on another worker "
        "fails with a conflict) or 'queue' (it waits for that turn), got 'wait'."
    )


def test_o4_queue_needs_a_turn_deadline_to_bound_the_wait() -> None:
    with pytest.raises(ValueError) as caught:
        FlowEngine([Held().flow()], MemoryStore(), concurrent_turns="queue")
    assert str(caught.value) == (
        "concurrent_turns='queue' makes a turn wait while its session runs on another worker, "
        "and the turn's deadline bounds that wait: give the engine a turn_timeout, e.g. "
        "FlowEngine(..., concurrent_turns='queue', turn_timeout=60)."
    )


class NoLeases:
    """A store of one's own that keeps sessions but no leases."""

    def __init__(self) -> None:
        self._inner = MemoryStore()
        for name in ("create", "load", "revision", "save", "delete", "archive", "aclose"):
            setattr(self, name, getattr(self._inner, name))
        self.search_archive = self._inner.search_archive


def test_o4_queue_needs_a_store_that_keeps_leases() -> None:
    with pytest.raises(ValueError) as caught:
        FlowEngine(
            [Held().flow()],
            NoLeases(),  # type: ignore[arg-type]
            concurrent_turns="queue",
            turn_timeout=5,
        )
    assert str(caught.value) == (
        "concurrent_turns='queue' needs a store that keeps session leases; NoLeases has no "
        "acquire_lease()/release_lease(). Use MemoryStore, SQLiteStore or MongoStore, or add "
        "those two methods to your store."
    )
    FlowEngine([Held().flow()], NoLeases(), turn_timeout=5)  # type: ignore[arg-type]  # reject


async def test_o4_reject_is_the_default_and_takes_no_lease() -> None:
    log = LeaseLog()
    engine = FlowEngine([Held().flow()], LeaseSpy(MemoryStore(), "a", log))  # type: ignore[arg-type]
    first = await engine.run("ChatFlow", "hello")
    again = await engine.run("ChatFlow", "more", first.session_id)
    assert first.success and again.success
    assert log.entries == []  # "reject" costs no store call


# --- the store leases ----------------------------------------------------------------------------


@STORES
async def test_o4_a_lease_has_one_holder_until_it_is_released(store: Any) -> None:
    assert await store.acquire_lease("s-1", "a", 30)
    assert not await store.acquire_lease("s-1", "b", 30)
    assert await store.acquire_lease("s-1", "a", 30)  # its holder renews it
    assert await store.acquire_lease("s-2", "b", 30)  # another session's lease is another
    await store.release_lease("s-1", "b")  # not b's to release: it stays
    assert not await store.acquire_lease("s-1", "b", 30)
    await store.release_lease("s-1", "a")
    assert await store.acquire_lease("s-1", "b", 30)
    await store.release_lease("s-3", "a")  # nothing to release is fine


async def age_lease(store: Any, session_id: str) -> None:
    """Move the session's lease expiry into the past, as if its holder died long ago."""
    if isinstance(store, MemoryStore):
        holder, _ = store._leases[session_id]
        store._leases[session_id] = (holder, time.monotonic() - 1)
    elif isinstance(store, SQLiteStore):
        with closing(sqlite3.connect(store._path, isolation_level=None)) as db:
            db.execute(
                "UPDATE session_leases SET expires_at = ? WHERE session_id = ?",
                (time.time() - 1, session_id),
            )
    else:
        assert isinstance(store, MongoStore)
        async with store._collections("age a lease") as (sessions, _, _):
            leases = sessions.database.get_collection("sessions_leases")
            stored = await leases.find_one({"_id": session_id})
            past = stored["expires_at"].replace(year=2000)
            await leases.update_one({"_id": session_id}, {"$set": {"expires_at": past}})


@STORES
async def test_o4_the_lease_of_a_holder_that_died_is_free_once_it_expired(store: Any) -> None:
    assert await store.acquire_lease("s-1", "dead", 30)
    assert not await store.acquire_lease("s-1", "alive", 30)
    await age_lease(store, "s-1")
    assert await store.acquire_lease("s-1", "alive", 30)
    assert not await store.acquire_lease("s-1", "dead", 30)  # came back too late: not its own


@STORES
async def test_o4_bad_lease_arguments_are_refused(store: Any) -> None:
    for args, what in [
        (("", "a", 5), "session_id as a non-empty string, got ''"),
        ((None, "a", 5), "session_id as a non-empty string, got None"),
        (("s-1", "", 5), "holder as a non-empty string, got ''"),
    ]:
        with pytest.raises(ValueError) as caught:
            await store.acquire_lease(*args)
        assert str(caught.value) == (
            f"A session lease needs {what}. Pass the session's id and the token that names "
            "this turn."
        )
    for seconds in (0, -1, True, float("inf"), "5"):
        with pytest.raises(ValueError) as caught:
            await store.acquire_lease("s-1", "a", seconds)
        assert str(caught.value) == (
            f"A session lease lasts a number of seconds > 0, got {seconds!r}. Pass how long "
            "the lease holds if its holder dies without releasing it."
        )
    with pytest.raises(ValueError, match="holder as a non-empty string, got 7"):
        await store.release_lease("s-1", 7)
    assert await store.acquire_lease("s-1", "a", 5)  # nothing was taken by a refused call


async def test_o4_a_closed_store_keeps_no_leases() -> None:
    store = MemoryStore()
    await store.aclose()
    with pytest.raises(StoreError, match="MemoryStore was closed with aclose()"):
        await store.acquire_lease("s-1", "a", 5)
    with pytest.raises(StoreError, match="MemoryStore was closed with aclose()"):
        await store.release_lease("s-1", "a")


# --- the two modes, two engines on one store ------------------------------------------------------


@STORES
async def test_o4_reject_a_turn_of_a_session_saved_elsewhere_meanwhile_is_a_conflict(
    store: Store,
) -> None:
    held = Held()
    first, second, _ = workers(store, held, mode="reject")
    session_id, slow = await slow_turn(first, held)
    quick = await second.run("ChatFlow", "quick two", session_id)
    assert quick.success  # nothing told it the session was running elsewhere
    held.gate.set()
    lost = await slow
    assert not lost.success and lost.error == "SessionConflictError"
    assert humans(await store.load(session_id)) == ["hello", "quick two"]


@STORES
async def test_o4_queue_the_second_turn_waits_and_runs_on_the_first_ones_result(
    store: Store,
) -> None:
    held = Held()
    first, second, log = workers(store, held)
    session_id, slow = await slow_turn(first, held)
    queued = asyncio.ensure_future(second.run("ChatFlow", "then two", session_id))
    await log.until(lambda: log.refused("b") >= 1)  # it found the lease taken: it waits
    assert not queued.done()
    held.gate.set()
    one, two = await slow, await queued
    assert (one.success, one.message) == (True, "ok: slow one")
    assert (two.success, two.message) == (True, "ok: then two")
    assert humans(await store.load(session_id)) == ["hello", "slow one", "then two"]
    assert "slow one" in held.seen[-1]  # the second turn's model saw the first one's turn
    assert await free(store, session_id)  # both released their lease


@STORES
async def test_o4_queue_a_turn_still_waiting_at_its_deadline_fails_and_saves_nothing(
    store: Store,
) -> None:
    held = Held()
    first, second, log = workers(store, held, timeouts=(10, 0.3))
    session_id, slow = await slow_turn(first, held)
    late = await second.run("ChatFlow", "too late", session_id)
    assert (late.success, late.error, late.message) == (False, "TurnTimeout", DEADLINE_FAILED)
    assert log.refused("b") >= 1
    assert not slow.done()  # the turn it waited for goes on
    held.gate.set()
    assert (await slow).success
    assert humans(await store.load(session_id)) == ["hello", "slow one"]
    refused = log.refused("b")
    again = await second.run("ChatFlow", "again", session_id)
    assert again.success and log.refused("b") == refused  # the waiter that gave up left no lease


@STORES
async def test_o4_queue_a_lease_left_by_a_dead_worker_expires_and_the_turn_runs(
    store: Any,
) -> None:
    held = Held()
    _, second, log = workers(store, held)
    start = await second.run("ChatFlow", "hello")
    session_id = str(start.session_id)
    began = time.monotonic()
    assert await store.acquire_lease(session_id, "killed-worker", 0.3)  # and then it died
    result = await second.run("ChatFlow", "still there?", session_id)
    assert result.success and result.message == "ok: still there?"
    assert log.refused("b") >= 1 and time.monotonic() - began >= 0.29
    assert humans(await store.load(session_id)) == ["hello", "still there?"]


@STORES
async def test_o4_queue_the_lease_is_renewed_while_a_long_turn_runs(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(picoflow.engine._leases, "LEASE_SECONDS", 0.3)  # renewed every 0.1 s
    held = Held()
    first, second, log = workers(store, held)
    session_id, slow = await slow_turn(first, held)
    queued = asyncio.ensure_future(second.run("ChatFlow", "then two", session_id))

    def refused_after_the_first_lease_ran_out() -> bool:
        a_times = [i for i, (who, _) in enumerate(log.entries) if who == "a"]
        # a took its lease at its first attempt; 3 renewals (0.1 s apart) later, 0.3 s passed
        return len(a_times) >= 4 and any(
            who == "b" and not granted for who, granted in log.entries[a_times[3] :]
        )

    await log.until(refused_after_the_first_lease_ran_out)
    assert all(granted for who, granted in log.entries if who == "a")
    assert not queued.done()
    held.gate.set()
    assert (await slow).success and (await queued).success
    assert humans(await store.load(session_id)) == ["hello", "slow one", "then two"]


@STORES
async def test_o4_queue_a_retry_that_waited_for_the_first_request_replays_it(
    store: Store,
) -> None:
    held = Held()
    first, second, log = workers(store, held)
    start = await first.run("ChatFlow", "hello")
    session_id = str(start.session_id)
    request = ("ChatFlow", "slow booking", session_id)
    original = asyncio.ensure_future(first.run(*request, idempotency_key="k-1"))
    await held.entered.wait()
    retry = asyncio.ensure_future(second.run(*request, idempotency_key="k-1"))
    await log.until(lambda: log.refused("b") >= 1)
    held.gate.set()
    one, two = await original, await retry
    assert one.success and not one.replayed
    assert two.success and two.replayed and two.message == one.message == "ok: slow booking"
    assert humans(await store.load(session_id)) == ["hello", "slow booking"]  # stored once


class Watched(MemoryStore):
    """A MemoryStore that tells when a session is read (it never awaits inside)."""

    def __init__(self) -> None:
        super().__init__()
        self.read = asyncio.Event()

    async def revision(self, session_id: str) -> int | None:
        self.read.set()
        return await super().revision(session_id)

    async def load(self, session_id: str) -> dict[str, Any] | None:
        self.read.set()
        return await super().load(session_id)


async def test_o4_a_retry_that_waited_for_the_lock_of_this_process_replays_too() -> None:
    held = Held()
    store = Watched()
    engine = FlowEngine([held.flow()], store)
    start = await engine.run("ChatFlow", "hello")
    request = ("ChatFlow", "slow booking", start.session_id)
    original = asyncio.ensure_future(engine.run(*request, idempotency_key="k-1"))
    await held.entered.wait()
    store.read.clear()
    retry = asyncio.ensure_future(engine.run(*request, idempotency_key="k-1"))
    # The retry looked for the key's record and found none (the first one runs): from that
    # read it goes straight to the session's lock, where it waits, with no await between.
    await store.read.wait()
    held.gate.set()
    one, two = await original, await retry
    assert one.success and two.replayed and two.message == one.message
    assert humans(await store.load(str(start.session_id))) == ["hello", "slow booking"]


async def test_o4_queue_a_store_that_fails_to_lease_fails_the_turn_as_a_store_error() -> None:
    held = Held()
    _, second, log = workers(MemoryStore(), held)
    start = await second.run("ChatFlow", "hello")
    log.spies["b"].fail = StoreError("MemoryStore could not take the lease: the disk is on fire.")
    failed = await second.run("ChatFlow", "more", start.session_id)
    assert (failed.success, failed.error) == (False, "StoreError")
    assert failed.message == "MemoryStore could not take the lease: the disk is on fire."


async def test_o4_queue_a_lease_that_cannot_be_renewed_or_released_fails_no_saved_turn(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(picoflow.engine._leases, "LEASE_SECONDS", 0.3)
    held, store = Held(), MemoryStore()
    first, _, log = workers(store, held)
    session_id, slow = await slow_turn(first, held)
    log.spies["a"].fail = StoreError("MemoryStore is unreachable.")
    await log.until(lambda: "could not renew the session's lease" in caplog.text)
    held.gate.set()
    result = await slow
    assert result.success and humans(await store.load(session_id)) == ["hello", "slow one"]
    assert "could not release the session's lease (it expires by itself)" in caplog.text
    assert not await free(store, session_id)  # still there, until it expires


async def test_o4_queue_turns_of_one_engine_wait_on_its_lock_not_on_the_lease() -> None:
    held = Held()
    first, _, log = workers(MemoryStore(), held)
    session_id, slow = await slow_turn(first, held)
    queued = asyncio.ensure_future(first.run("ChatFlow", "then two", session_id))
    held.gate.set()
    assert (await slow).success and (await queued).success
    assert log.refused("a") == 0  # one engine never competes with itself for a lease


# --- two processes on one store ----------------------------------------------------------------


async def test_o4_two_processes_on_sqlite_queue_their_turns_and_lose_none(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SQLiteStore(path)
    try:
        await check_two_processes_queue_every_turn(store, f"sqlite:///{path}", "-")
    finally:
        await store.aclose()


async def test_o4_two_processes_on_mongo_queue_their_turns_and_lose_none(
    mongo: MongoStore, mongo_server: MongoServer, mongo_database: str
) -> None:
    await check_two_processes_queue_every_turn(mongo, mongo_server.uri, mongo_database)
