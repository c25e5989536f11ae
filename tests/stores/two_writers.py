"""P4 across processes: two app processes run turns on one session; no update is lost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from store_worker import ChatFlow
from support.flows import transcript

from picoflow import FlowEngine
from picoflow.stores import Store

WORKER = Path(__file__).with_name("store_worker.py")
# The workers import this checkout's picoflow, whatever the interpreter has installed.
ROOT = Path(__file__).resolve().parents[2]
TURNS_EACH = 50


async def check_two_processes_never_lose_an_update(store: Store, url: str, database: str) -> None:
    """Two workers race 50 turns each on one session that `store` sees too.

    Every turn either succeeds and is kept, in its worker's order, or fails with a conflict
    and leaves nothing; the stored revision counts exactly the successes.
    """
    engine = FlowEngine(flows=[ChatFlow], store=store)
    created = await engine.run("ChatFlow", "first")
    assert created.success
    session_id = created.session_id
    assert session_id is not None

    names = ["alpha", "beta"]
    turns = _race(names, [url, database, session_id])

    doc = await store.load(session_id)
    assert doc is not None
    stored = [text for kind, text in transcript(doc, "ChatStep") if kind == "human"]
    succeeded = [t["text"] for results in turns for t in results if t["success"]]
    failed = [t for results in turns for t in results if not t["success"]]
    assert failed, "the workers never collided: this run tested nothing"
    assert {t["error"] for t in failed} <= {"SessionConflictError"}
    assert stored[0] == "first"
    assert sorted(stored[1:]) == sorted(succeeded)  # every success is kept, nothing else
    for name, results in zip(names, turns, strict=True):
        mine = [t["text"] for t in results if t["success"]]
        assert [text for text in stored if text.startswith(name)] == mine  # in its order
    assert doc["revision"] == len(succeeded)
    assert len(succeeded) + len(failed) == TURNS_EACH * len(names)
    await engine.aclose()


async def check_two_processes_queue_every_turn(store: Store, url: str, database: str) -> None:
    """O4: the same race with `concurrent_turns="queue"`: no turn fails, none is lost.

    Each worker's turn waits for the session's lease while the other's runs, then runs on
    what that one saved, so all 100 turns succeed, each worker's in its order.
    """
    engine = FlowEngine(flows=[ChatFlow], store=store)
    created = await engine.run("ChatFlow", "first")
    assert created.success and created.session_id is not None
    names = ["alpha", "beta"]
    turns = _race(names, [url, database, created.session_id], "queue")

    doc = await store.load(created.session_id)
    assert doc is not None
    stored = [text for kind, text in transcript(doc, "ChatStep") if kind == "human"]
    assert [t for results in turns for t in results if not t["success"]] == []
    assert sorted(stored[1:]) == sorted(t["text"] for results in turns for t in results)
    for name in names:
        mine = [f"{name}-{turn:02d}" for turn in range(TURNS_EACH)]
        assert [text for text in stored if text.startswith(name)] == mine
    alpha, beta = ([t["during"] for t in results] for results in turns)
    overlapping = [(a, b) for a in alpha for b in beta if a[0] < b[1] and b[0] < a[1]]
    assert overlapping, "no two turns ran at once: this run tested nothing"
    assert doc["revision"] == TURNS_EACH * len(names)
    await engine.aclose()


def _race(names: list[str], args: list[str], mode: str = "reject") -> list[list[dict[str, Any]]]:
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), *args, name, str(TURNS_EACH), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,  # each conflict is logged as a warning
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        for name in names
    ]
    turns = []
    try:
        for worker in workers:
            assert worker.stdout is not None
            assert worker.stdout.readline() == "ready\n", worker.communicate()[1]
        for worker in workers:  # all are connected: start them together
            assert worker.stdin is not None
            worker.stdin.write("go\n")
            worker.stdin.flush()
        for worker in workers:
            out, err = worker.communicate(timeout=120)
            assert worker.returncode == 0, err
            turns.append(json.loads(out))
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.communicate()
    return turns
