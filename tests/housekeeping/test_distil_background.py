"""Step distillation in background mode: after the reply, committed onto the newest revision.

With `set_summary_config(..., background=True)` the distillation of a step left this turn runs
after the reply, and its value is applied to the session as it is by then (P4): a newer turn
that only appended keeps it, a newer distillation of the step drops it, a conflicting commit
writes nothing, and a task that dies hands its steps to the next turn end. The inline half is
in test_distil.py, which also holds the flow and the scripted distiller these tests share.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from test_compaction_background import ConflictOnce
from test_distil import (
    LYON,
    LYON_VALUE,
    SKIPPED_TAIL,
    Brain,
    StayCriteria,
    chat,
    contents,
    ids,
    trip_flow,
)

from picoflow import Flow, FlowEngine, Step, StoreError, go, tool
from picoflow._housekeeping.scheduler import Housekeeping
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


def background_engine(brain: Brain, store: Any = None, **distil: Any) -> FlowEngine:
    flow = trip_flow(brain, config={"background": True}, **distil)
    return FlowEngine(flows=[flow], store=store or MemoryStore())


async def test_distil_background_reply_first_then_committed_on_an_unmoved_revision() -> None:
    """step distillation, M10: the reply returns while the distiller is still held."""
    brain = Brain(LYON, held=1)
    engine = background_engine(brain, erase=True)
    first, second = await chat(engine, "Lyon please", "done")
    assert second.message == "re Continue." and second.usage["summary"]["calls"] == 0
    await brain.started.wait()  # the turn is back; the distiller is waiting
    doc = await engine.get_session(first.session_id)
    assert doc["revision"] == 1 and "criteria" not in doc["steps"]["Explore"]["state"]
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert doc["revision"] == 2
    assert doc["steps"]["Explore"]["state"]["criteria"]["value"] == {"city": "Lyon", "nights": 2}
    assert contents(doc) == [] and doc["memory"]["explore"]["archived"] == 5  # all stored
    assert doc["usage"]["summary"]["calls"] == 1
    await engine.aclose()


async def test_distil_background_commits_on_top_of_another_process_turn() -> None:
    """background distillation, P4: a newer turn that only appended does not lose it."""
    brain = Brain(LYON, held=1)
    store = MemoryStore()
    engine = background_engine(brain, store, erase=True)

    other_process = background_engine(brain, store, erase=True)  # the same flow elsewhere
    first, _ = await chat(engine, "Lyon please", "done")
    await brain.started.wait()
    await chat(other_process, "thanks", session_id=first.session_id)  # revision 1 -> 2
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    entry = doc["steps"]["Explore"]["state"]["criteria"]
    assert (doc["revision"], entry["value"], entry["generation"]) == (3, LYON_VALUE, 1)
    assert contents(doc) == []  # the distilled messages went to the archive
    assert len(await store.search_archive(first.session_id, "explore", "")) == 5


async def test_distil_background_draft_is_dropped_when_the_step_was_distilled_meanwhile() -> None:
    """step distillation, P4: never applied over a newer distillation of the step."""
    brain = Brain(LYON, held=1)
    store = MemoryStore()
    engine = background_engine(brain, store, erase=True)
    first, _ = await chat(engine, "Lyon please", "done")
    await brain.started.wait()
    doc = await store.load(first.session_id)  # another writer stores its own value first
    assert doc is not None
    theirs = {"value": {"city": "Paris", "nights": 1}, "generation": 1}
    doc["steps"]["Explore"]["state"]["criteria"] = theirs
    await store.save(doc, doc["revision"])
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert doc["revision"] == 2 and doc["steps"]["Explore"]["state"]["criteria"] == theirs
    assert len(contents(doc)) == 5
    assert await store.search_archive(first.session_id, "explore", "") == []


async def test_distil_background_commit_that_conflicts_writes_nothing() -> None:
    """step distillation, P2: a conflicting commit is dropped, state untouched."""
    brain = Brain(LYON, held=1)
    store = ConflictOnce()
    engine = background_engine(brain, store)
    first, _ = await chat(engine, "Lyon please", "done")
    await brain.started.wait()
    store.armed = True
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert doc["revision"] == 1 and "criteria" not in doc["steps"]["Explore"]["state"]


async def test_distil_background_newer_turn_queues_behind_the_running_task() -> None:
    """background distillation: a newer turn here waits its turn; nothing is redone."""
    brain = Brain(LYON, '{"city": "Lyon", "nights": 4}', held=1)
    engine = background_engine(brain)
    first, _ = await chat(engine, "Lyon please", "done")
    await brain.started.wait()
    await chat(engine, "thanks", session_id=first.session_id)  # queued, nothing cancelled
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    entry = doc["steps"]["Explore"]["state"]["criteria"]
    assert (doc["revision"], entry["value"]["nights"], entry["generation"]) == (3, 2, 1)
    assert entry["source_message_ids"] == ids(doc)
    assert len(brain.distil_requests()) == 1


class OutageAfterSave(MemoryStore):
    """A store outage that hits the background task's first read of the session.

    Once armed, the next save marks the outage; the first read from another asyncio task (the
    background task that the save starts, not the turns that go on) then fails, after waiting
    for `go` if one is set.
    """

    def __init__(self, go: asyncio.Event | None = None) -> None:
        super().__init__()
        self.go = go
        self.armed = False
        self._saver: asyncio.Task[Any] | None = None

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        revision = await super().save(doc, expected_revision)
        if self.armed:
            self.armed, self._saver = False, asyncio.current_task()
        return revision

    async def revision(self, session_id: str) -> int | None:
        await self._outage()
        return await super().revision(session_id)

    async def load(self, session_id: str) -> Any:
        await self._outage()
        return await super().load(session_id)

    async def _outage(self) -> None:
        if self._saver is None or asyncio.current_task() is self._saver:
            return
        self._saver = None
        if self.go is not None:
            await self.go.wait()
        raise StoreError("the store is briefly unreachable")


async def test_distil_background_task_that_fails_is_retried_at_the_next_turn_end() -> None:
    """background distillation: a task that dies (a store outage, not a model failure)
    hands its steps to the next turn end instead of losing them."""
    brain = Brain(LYON)
    store = OutageAfterSave()
    engine = background_engine(brain, store)
    (first,) = await chat(engine, "Lyon please")
    store.armed = True
    await chat(engine, "done", session_id=first.session_id)  # leaves Explore; the task fails
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert "criteria" not in doc["steps"]["Explore"]["state"] and brain.distil_requests() == []
    await chat(engine, "thanks", session_id=first.session_id)
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert doc["steps"]["Explore"]["state"]["criteria"]["value"] == LYON_VALUE


async def test_distil_carried_work_is_kept_for_a_bounded_number_of_idle_sessions(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """background distillation: after an outage fails many sessions' tasks, the work carried
    for sessions that never return is dropped oldest first, with a warning, not kept forever."""
    monkeypatch.setattr(Housekeeping, "keep_at_most", 2)
    brain = Brain(LYON, LYON)  # two distillations: the sessions whose work was kept
    store = OutageAfterSave()
    engine = background_engine(brain, store)
    sessions = []
    for _ in range(3):
        (first,) = await chat(engine, "Lyon please")
        store.armed = True
        await chat(engine, "done", session_id=first.session_id)  # leaves Explore; task fails
        await engine.wait_for_background()
        sessions.append(first.session_id)
    dropped = [r for r in caplog.records if "dropped the carried-over" in r.getMessage()]
    assert [r.session_id for r in dropped] == [sessions[0]]  # type: ignore[attr-defined]
    for session_id in sessions:
        await chat(engine, "thanks", session_id=session_id)
    await engine.wait_for_background()
    states = [(await engine.get_session(i))["steps"]["Explore"]["state"] for i in sessions]
    assert ["criteria" in state for state in states] == [False, True, True]


async def test_distil_background_failure_is_recorded_on_the_session() -> None:
    """step distillation, M8: the warning is committed with the session."""
    brain = Brain(RuntimeError("down"))
    engine = background_engine(brain, erase=True)
    first, second = await chat(engine, "Lyon please", "done")
    assert second.warnings == []
    await engine.wait_for_background()
    doc = await engine.get_session(first.session_id)
    assert [w["message"] for w in doc["warnings"]] == [
        "Step distillation skipped: Explore: the summary model raised RuntimeError: down"
        + SKIPPED_TAIL
    ]
    assert doc["revision"] == 2 and len(contents(doc)) == 5
    assert "criteria" not in doc["steps"]["Explore"]["state"]


class Chained:
    """Steps S1 -> S2 -> S3 -> S4, each distilled when left; 'done' moves on."""

    def __init__(self) -> None:
        self.distilled: list[str] = []
        self.model = ScriptedChatModel(policy=self.reply)

    def reply(self, messages: list[Any], tools: list[str]) -> Any:
        meta = self.model.requests[-1].metadata
        if meta["picoflow_purpose"] == "distil":
            self.distilled.append(meta["picoflow_step"])
            return json.dumps({"city": meta["picoflow_step"], "nights": 1})
        last = messages[-1]
        return tool_call("done") if last.content == "done" and tools else f"re {last.content}"

    def flow(self) -> type[Flow]:
        model = self.model

        class S4(Step):
            pass

        def stage(name: str, after: type[Step]) -> type[Step]:
            def done(self: Step) -> Any:
                """Move on."""
                return go(after)

            return type(name, (Step,), {"done": tool(done)})

        s3 = stage("S3", S4)
        s2 = stage("S2", s3)
        s1 = stage("S1", s2)

        class ChainFlow(Flow):
            def __init__(self) -> None:
                super().__init__()
                memory = self.get_memory().set_summary_model(model)
                memory.set_summary_config(8, 4, background=True)

            def config_model(self) -> Any:
                return model

            def define_steps(self) -> list[Step]:
                staged = [cls(self).distil_on_exit(StayCriteria) for cls in (s1, s2, s3)]
                return [*staged, S4(self)]

        return ChainFlow


class OutageThenSlowSave(OutageAfterSave):
    """`OutageAfterSave` whose failing read waits for `go`; one turn's save waits for it too."""

    def __init__(self) -> None:
        super().__init__(asyncio.Event())
        self.save_waiting = asyncio.Event()
        self.hold_save = False

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        if self.hold_save:
            assert self.go is not None
            self.hold_save = False
            self.save_waiting.set()
            await self.go.wait()
        return await super().save(doc, expected_revision)


async def test_distil_background_queued_steps_survive_a_task_ending_as_a_turn_saves() -> None:
    """background distillation: the running task ends in the same loop step in which a
    newer turn's save resumes; the steps queued behind it still get distilled."""
    chain = Chained()
    store = OutageThenSlowSave()
    engine = FlowEngine(flows=[chain.flow()], store=store)
    session_id = (await engine.run("ChainFlow", "hi")).session_id
    store.armed = True
    await engine.run("ChainFlow", "done", session_id=session_id)  # leaves S1: the task waits
    await engine.run("ChainFlow", "done", session_id=session_id)  # leaves S2: queued
    store.hold_save = True
    third = asyncio.create_task(engine.run("ChainFlow", "done", session_id=session_id))
    await store.save_waiting.wait()  # S3 left; its save waits with the failing task
    store.go.set()
    assert (await third).success
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert doc["steps"]["S2"]["state"]["distilled"]["value"]["city"] == "S2"
    assert doc["steps"]["S3"]["state"]["distilled"]["value"]["city"] == "S3"
    assert "distilled" not in doc["steps"]["S1"]["state"]  # its task failed: next turn end
    await engine.run("ChainFlow", "more", session_id=session_id)
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert doc["steps"]["S1"]["state"]["distilled"]["value"]["city"] == "S1"
