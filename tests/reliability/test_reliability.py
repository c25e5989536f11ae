"""Reliability scenarios (P3, P4, H6 and the store contract): 0 lost, 0 duplicated, 0 torn.

Small by default so CI runs a few of each; `pytest tests/reliability --long` runs them at the
size of the adversarial run they come from (200 concurrent turns, 40 kills per store, 10,000
sessions, a 40-turn outage conversation).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest
from checks import check_session, stored_turns
from conftest import STORES_TESTS, Sizes
from mongo_server import MongoServer, free_port
from mongo_server import _wait_for_ping as wait_for_ping
from store_worker import ChatFlow
from two_writers import WORKER as RACE_WORKER

from picoflow import FlowEngine
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore

HERE = Path(__file__).resolve().parent
KILL_WORKER = HERE / "turn_worker.py"
WORKER_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(STORES_TESTS), str(HERE)])}
STORE_KINDS = ["memory", "sqlite", "mongo"]


@asynccontextmanager
async def open_store(
    kind: str, tmp_path: Path, server: MongoServer | None
) -> AsyncIterator[tuple[Callable[[], Store], str, str]]:
    """A factory of stores on one shared place, and that place as (url, database) for workers."""
    opened: list[Store] = []
    database = "-"
    if kind == "memory":
        shared = MemoryStore()
        url = "memory:"

        def make() -> Store:
            return shared

    elif kind == "sqlite":
        url = f"sqlite:///{tmp_path / 'sessions.db'}"

        def make() -> Store:
            opened.append(SQLiteStore(tmp_path / "sessions.db"))
            return opened[-1]

    else:
        assert server is not None
        url, database = server.uri, server.fresh_database()

        def make() -> Store:
            opened.append(MongoStore(url, database))
            return opened[-1]

    try:
        yield make, url, database
    finally:
        for store in opened:
            await store.aclose()
        if kind == "mongo" and server is not None:
            server.drop(database)


def mongo_for(kind: str, request: pytest.FixtureRequest) -> MongoServer | None:
    return request.getfixturevalue("reliability_mongo") if kind == "mongo" else None


async def new_session(engine: FlowEngine) -> str:
    created = await engine.run("ChatFlow", "first")
    assert created.success and created.session_id is not None, created
    return created.session_id


# -- many concurrent turns on one session --------------------------------------------------------


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_p4_concurrent_turns_on_one_session_are_all_kept_once(
    kind: str, tmp_path: Path, sizes: Sizes, request: pytest.FixtureRequest
) -> None:
    """One engine, N turns sent at once on one session: the per-session lock serialises them,
    so every one succeeds and is stored exactly once, whole."""
    async with open_store(kind, tmp_path, mongo_for(kind, request)) as (make, _, _):
        engine = FlowEngine(flows=[ChatFlow], store=make())
        session_id = await new_session(engine)
        texts = [f"c-{n}" for n in range(sizes.concurrent_turns)]
        results = await asyncio.gather(*(engine.run("ChatFlow", t, session_id) for t in texts))
        assert [r.error for r in results if not r.success] == []
        stored = check_session(await make().load(session_id), texts, texts)
        assert sorted(stored) == sorted(texts)


@pytest.mark.parametrize("kind", ["sqlite", "mongo"])
async def test_p4_two_engines_racing_on_one_session_lose_nothing(
    kind: str, tmp_path: Path, sizes: Sizes, request: pytest.FixtureRequest
) -> None:
    """Two engines (as two app processes would) race on one session inside one event loop:
    each turn is kept whole or refused with a conflict that leaves nothing."""
    async with open_store(kind, tmp_path, mongo_for(kind, request)) as (make, _, _):
        engines = [FlowEngine(flows=[ChatFlow], store=make()) for _ in range(2)]
        session_id = await new_session(engines[0])
        texts = [f"e{n % 2}-{n}" for n in range(sizes.concurrent_turns)]
        results = await asyncio.gather(
            *(engines[n % 2].run("ChatFlow", t, session_id) for n, t in enumerate(texts))
        )
        refused = {r.error for r in results if not r.success}
        assert refused <= {"SessionConflictError"}, refused
        acked = [t for t, r in zip(texts, results, strict=True) if r.success]
        stored = check_session(await make().load(session_id), acked, texts)
        assert sorted(stored) == sorted(acked)  # a refused turn left nothing behind


# -- several processes on one session ------------------------------------------------------------


def race(url: str, database: str, session_id: str, names: list[str], turns: int) -> list[dict]:
    workers = [
        subprocess.Popen(
            [sys.executable, str(RACE_WORKER), url, database, session_id, name, str(turns)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,  # every conflict is logged as a warning
            text=True,
            env=WORKER_ENV,
        )
        for name in names
    ]
    results: list[dict] = []
    try:
        for worker in workers:
            assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
        for worker in workers:  # every worker is connected: start them together
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        for worker in workers:
            out, _ = worker.communicate(timeout=180)
            assert worker.returncode == 0
            results += json.loads(out)
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    return results


@pytest.mark.parametrize("kind", ["sqlite", "mongo"])
async def test_p4_three_processes_on_one_session_lose_nothing(
    kind: str, tmp_path: Path, sizes: Sizes, request: pytest.FixtureRequest
) -> None:
    async with open_store(kind, tmp_path, mongo_for(kind, request)) as (make, url, database):
        session_id = await new_session(FlowEngine(flows=[ChatFlow], store=make()))
        turns = max(10, sizes.concurrent_turns // 3)
        results = race(url, database, session_id, ["alpha", "beta", "gamma"], turns)
        assert {r["error"] for r in results if not r["success"]} <= {"SessionConflictError"}
        acked = [r["text"] for r in results if r["success"]]
        attempted = [r["text"] for r in results]
        stored = check_session(await make().load(session_id), acked, attempted)
        assert sorted(stored) == sorted(acked)
        for name in ("alpha", "beta", "gamma"):  # each process's turns kept in its order
            mine = [t for t in acked if t.startswith(name)]
            assert [t for t in stored if t.startswith(name)] == mine


# -- kill -9 in the middle of turns --------------------------------------------------------------


@contextmanager
def worker(
    url: str, database: str, session_ids: list[str], name: str
) -> Iterator[subprocess.Popen]:
    process = subprocess.Popen(
        [sys.executable, str(KILL_WORKER), url, database, ",".join(session_ids), name],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=WORKER_ENV,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def acks_until_killed(
    process: subprocess.Popen, after: int, name: str, sessions: list[str]
) -> tuple[dict, dict]:
    """Read acknowledgements until `after` have arrived, then kill -9 the worker mid-turn.

    The worker runs ahead of this reader, so after the kill the lines it had already written to
    the pipe are read too (the pipe keeps them); the turn after the last of them (it numbers its
    turns and round-robins over `sessions`) was in flight: it may be stored whole, or not at
    all, and counts as attempted. Returns acknowledged and attempted texts per session.
    """
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    acked: dict[str, list[str]] = {}
    attempted: dict[str, list[str]] = {}
    count = lines = 0
    for line in process.stdout:
        lines += 1
        kind, session_id, text, *_ = line.split()
        attempted.setdefault(session_id, []).append(text)
        if kind == "ack":
            acked.setdefault(session_id, []).append(text)
            count += 1
            if count == after:
                process.kill()  # SIGKILL: no clean-up, no flush, no rollback by the process
    process.wait()
    attempted.setdefault(sessions[lines % len(sessions)], []).append(f"{name}-{lines}")
    return acked, attempted


@pytest.mark.parametrize("kind", ["sqlite", "mongo"])
async def test_p3_kill_9_mid_turn_loses_and_tears_nothing(
    kind: str, tmp_path: Path, sizes: Sizes, request: pytest.FixtureRequest
) -> None:
    """A process killed with SIGKILL at any point of a turn leaves every session whole: each
    acknowledged turn stored, the turn in flight stored whole or not at all, and a new process
    continues every session."""
    async with open_store(kind, tmp_path, mongo_for(kind, request)) as (make, url, database):
        engine = FlowEngine(flows=[ChatFlow], store=make())
        sessions = [await new_session(engine) for _ in range(3)]
        acked: dict[str, list[str]] = {s: [] for s in sessions}
        attempted: dict[str, list[str]] = {s: [] for s in sessions}
        for kill in range(sizes.kills):
            with worker(url, database, sessions, f"k{kill}") as process:
                got, tried = acks_until_killed(process, 5 + kill % 7, f"k{kill}", sessions)
            for session_id in sessions:
                acked[session_id] += got.get(session_id, [])
                attempted[session_id] += tried.get(session_id, [])
        reader = make()
        for session_id in sessions:
            check_session(await reader.load(session_id), acked[session_id], attempted[session_id])
            after = await FlowEngine(flows=[ChatFlow], store=make()).run(
                "ChatFlow", "after the kills", session_id
            )
            assert after.success, after.message
            assert stored_turns(await reader.load(session_id))[-1] == "after the kills"


# -- the store dies mid-conversation -------------------------------------------------------------


class LocalMongo:
    """A SecantusDB process on a fixed port and data directory, so it can be stopped and started
    again on the same data as a real server restarts (always local, even with MONGO_URI set:
    the test must control the server)."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.port = free_port()
        self.uri = f"mongodb://127.0.0.1:{self.port}/?retryWrites=false"
        self.process: subprocess.Popen[bytes] | None = None
        (home / "secantusd.toml").write_text("")

    def start(self) -> None:
        command = [
            sys.executable,
            "-c",
            "import sys; from secantus.cli import main; sys.exit(main())",
            *("--config", str(self.home / "secantusd.toml"), "--host", "127.0.0.1"),
            *("--port", str(self.port), "--storage-path", str(self.home / "data")),
            *("--log-level", "WARNING"),
        ]
        with open(self.home / "log", "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        with open(self.home / "log", "rb") as log:
            wait_for_ping(self.uri, self.process, log)

    def stop(self) -> None:
        """SIGTERM: the server flushes and exits, as in a restart or a failover. (SecantusDB
        loses its last writes on SIGKILL, which a journaled mongod does not; that would test
        SecantusDB, not picoflow.)"""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait()


async def test_p3_store_outage_fails_turns_cleanly_and_the_conversation_resumes(
    sizes: Sizes, tmp_path: Path
) -> None:
    """MongoDB goes away mid-conversation: each turn fails with StoreError and leaves nothing;
    once the server is back on its data, the same engine continues the session with every
    acknowledged turn in place, none twice, none torn."""
    server = LocalMongo(tmp_path)
    server.start()
    try:
        store = MongoStore(server.uri, "outage", server_selection_timeout=0.5)
        engine = FlowEngine(flows=[ChatFlow], store=store)
        session_id = await new_session(engine)
        acked: list[str] = []
        attempted: list[str] = []

        async def turn(text: str) -> bool:
            attempted.append(text)
            result = await engine.run("ChatFlow", text, session_id)
            if result.success:
                acked.append(text)
            else:
                assert result.error == "StoreError", result
            return result.success

        for n in range(sizes.outage_turns):
            assert await turn(f"before-{n}")
        server.stop()
        for n in range(3):
            assert not await turn(f"during-{n}")
        server.start()
        for n in range(sizes.outage_turns):
            assert await turn(f"after-{n}")
        stored = check_session(await store.load(session_id), acked, attempted)
        assert stored == acked  # the failed turns left nothing, the order is the client's
        await engine.aclose()
    finally:
        server.stop()


# -- many sessions -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", STORE_KINDS)
async def test_p2_many_sessions_each_keep_their_own_turns(
    kind: str, tmp_path: Path, sizes: Sizes, request: pytest.FixtureRequest
) -> None:
    """Many sessions through one engine, two turns each, interleaved in batches: every session
    holds exactly its own two turns (the engine's caches are bounded; nothing crosses over)."""
    count = sizes.sessions if kind != "mongo" else min(sizes.sessions, 1_000)
    async with open_store(kind, tmp_path, mongo_for(kind, request)) as (make, _, _):
        engine = FlowEngine(flows=[ChatFlow], store=make())
        session_ids: list[str] = []
        for start in range(0, count, 50):
            batch = range(start, min(start + 50, count))
            created = await asyncio.gather(*(engine.run("ChatFlow", "first") for _ in batch))
            assert all(r.success for r in created)
            session_ids += [r.session_id for r in created if r.session_id]
        assert len(set(session_ids)) == count
        for start in range(0, count, 50):
            batch = session_ids[start : start + 50]
            results = await asyncio.gather(*(engine.run("ChatFlow", f"mine-{s}", s) for s in batch))
            assert all(r.success for r in results)
        reader = make()
        for session_id in session_ids[:: max(1, count // 200)]:
            mine = [f"mine-{session_id}"]
            assert check_session(await reader.load(session_id), mine, mine) == mine
