"""Background compaction: the reply first, the summary after, committed only on an unmoved revision.

The summariser is held on an asyncio.Event, so "the turn returned while the summariser was still
running" is a fact the test arranges, not a timing it hopes for.
"""

from __future__ import annotations

import asyncio
from typing import Any

from support.flows import RecordingStore
from test_compaction import Chat, Other, chat_flow, texts

from picoflow import Flow, FlowEngine, SessionConflictError, Step
from picoflow._housekeeping.scheduler import Housekeeping
from picoflow.memory import DEFAULT_SUMMARY_PROMPT
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.testing import ScriptedChatModel


class Summariser:
    """Replies "re <text>"; summary calls take `summaries` in order, the first `held` of them
    only after `release` is set (`started` tells the test one is waiting)."""

    def __init__(self, *summaries: str | Exception, held: int = 1) -> None:
        self.summaries = list(summaries)
        self.held = held
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.model = ScriptedChatModel(policy=self.reply)

    async def reply(self, messages: list, tools: list[str]) -> str:
        if messages[0].content != DEFAULT_SUMMARY_PROMPT:
            return f"re {messages[-1].content}"
        item = self.summaries.pop(0)
        if self.held > 0:
            self.held -= 1
            self.started.set()
            await self.release.wait()
        if isinstance(item, Exception):
            raise item
        return item


def background_engine(brain: Summariser, store: Any = None) -> FlowEngine:
    flow = chat_flow(brain.model, background=True)
    return FlowEngine(flows=[flow], store=store or MemoryStore())


async def turns(engine: FlowEngine, first: int, last: int, session_id: str | None) -> str:
    for number in range(first, last + 1):
        result = await engine.run("ChatFlow", f"m{number}", session_id=session_id)
        assert result.success and result.warnings == [], result
        session_id = result.session_id
    assert session_id is not None
    return session_id


async def test_background_reply_comes_first_and_the_summary_is_committed_after() -> None:
    brain = Summariser("S1")
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)  # the 4th turn is due: its reply is back...
    await brain.started.wait()  # ...while the summariser is still working
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (3, None)
    assert len(doc["memory"]["chat"]["messages"]) == 9
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    chat = doc["memory"]["chat"]
    assert (doc["revision"], chat["summary"], chat["summary_generation"]) == (4, "S1", 1)
    assert texts(doc) == ["m3", "re m3", "m4", "re m4"]
    assert doc["usage"]["summary"]["calls"] == 1 and doc["usage"]["model"]["calls"] == 4
    archived = await engine.store.search_archive(session_id, "chat", "")
    assert [e["position"] for e in archived] == [4, 3, 2, 1]
    await engine.aclose()


async def test_background_pending_summary_leaves_the_next_turn_the_raw_history() -> None:
    """M4, background compaction: the next turn sees the raw history; the summary lands after it."""
    brain = Summariser("S-rev3", "unused")
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    await turns(engine, 5, 5, session_id)  # runs while the first summary is pending
    (sent,) = [r.messages for r in brain.model.requests if r.messages[-1].content == "m5"]
    assert [m.content for m in sent[1:]] == [
        "m1", "re m1", "m2", "re m2", "m3", "re m3", "m4", "re m4", "m5",
    ]  # fmt: skip
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    chat = doc["memory"]["chat"]
    # The summary drafted on revision 3 (m1..re m2) still covers the start of revision 4,
    # which only appended m5: it is committed on top of it as revision 5, not thrown away.
    assert (doc["revision"], chat["summary"], chat["summary_generation"]) == (5, "S-rev3", 1)
    assert texts(doc) == ["m3", "re m3", "m4", "re m4", "m5", "re m5"]
    assert await engine.store.search_archive(session_id, "chat", "m1") != []
    assert len([r for r in brain.model.requests if "re m1" in r.messages[-1].content]) == 1
    await engine.aclose()


async def test_background_task_reads_the_session_the_turn_just_saved_without_loading() -> None:
    """Background compaction: the task drafts from and commits onto the engine's copy of the session
    it has just saved (checked with `revision()`), instead of loading and parsing it twice."""
    brain = Summariser("S1", held=0)
    store = RecordingStore()
    engine = background_engine(brain, store)
    session_id = await turns(engine, 1, 4, None)
    await engine.wait_for_background()
    doc = await store.load(session_id)
    assert doc is not None and doc["memory"]["chat"]["summary"] == "S1"
    assert store.calls == ["create", "save", "save", "save", "save", "load"]  # the last: ours


async def test_background_commit_logs_the_summary_lag(caplog: Any) -> None:
    """Background compaction: how long compaction work waited, per session, with what it changed."""
    brain = Summariser("S1")
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    with caplog.at_level("INFO", logger="picoflow._housekeeping.scheduler"):
        brain.release.set()
        await engine.wait_for_background()
    (record,) = [r for r in caplog.records if r.getMessage().startswith("background housekeeping")]
    assert record.session_id == session_id and record.namespaces == ["chat"]
    assert record.summary_lag_seconds > 0
    assert record.getMessage().startswith("background housekeeping committed revision 4, ")


async def test_background_lag_of_running_work_survives_the_session_bound(
    caplog: Any, monkeypatch: Any
) -> None:
    """Background compaction: the bound on remembered sessions never drops one whose work is
    running, so the slowest commits are not logged with a lag of zero."""
    monkeypatch.setattr(Housekeeping, "keep_at_most", 2)
    brain = Summariser("S1", "S2", "S3", held=3)
    engine = background_engine(brain)
    for _ in range(3):  # three sessions due at once; no summary can finish before the release
        await turns(engine, 1, 4, None)
    with caplog.at_level("INFO", logger="picoflow._housekeeping.scheduler"):
        brain.release.set()
        await engine.wait_for_background()
    committed = [r for r in caplog.records if r.getMessage().startswith("background house")]
    assert len(committed) == 3
    assert all(record.summary_lag_seconds > 0 for record in committed)
    await engine.aclose()


async def test_background_turns_faster_than_the_summariser_still_get_summaries() -> None:
    """Background compaction: back-to-back turns no longer starve compaction.

    Ten turns run while the first summary is held; each turn queues work instead of cancelling
    the running summary. On release it commits on top of turn 14's revision, and the queued
    work then compacts what has piled up since: the history ends short, nothing was lost.
    """
    brain = Summariser("S1", "S2", "S3", "S4")
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    await turns(engine, 5, 14, session_id)
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    chat = doc["memory"]["chat"]
    assert (chat["summary"], chat["summary_generation"]) == ("S2", 2)
    assert texts(doc) == ["m13", "re m13", "m14", "re m14"]
    archived = await engine.store.search_archive(session_id, "chat", "", page_size=100)
    assert sorted(e["position"] for e in archived) == list(range(1, 25))  # m1 .. re m12
    assert chat["archived"] == 24 and doc["revision"] == 15


async def test_background_summary_commits_on_top_of_another_process_turn() -> None:
    """Background compaction: a turn saved by another process only appended; the summary fits."""
    brain = Summariser("S-old", "S-new")
    store = MemoryStore()
    engine = background_engine(brain, store)

    class PlainChat(Flow):  # the same flow in another process, without compaction
        name = "ChatFlow"

        def config_model(self) -> Any:
            return brain.model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat"), Other(self)]

    other_process = FlowEngine(flows=[PlainChat], store=store)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    await turns(other_process, 5, 5, session_id)  # revision 3 -> 4 behind the task's back
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (5, "S-old")
    assert texts(doc) == ["m3", "re m3", "m4", "re m4", "m5", "re m5"]


async def test_background_draft_is_dropped_when_its_messages_changed_and_retried_next_turn() -> (
    None
):
    """M4, background compaction: a summary is never applied over a change to what it summarised."""
    brain = Summariser("S-old", "S-new")
    store = MemoryStore()
    engine = background_engine(brain, store)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    doc = await store.load(session_id)  # another writer removes m1 behind the task's back
    assert doc is not None
    del doc["memory"]["chat"]["messages"][1]
    await store.save(doc, doc["revision"])
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (4, None)  # never applied
    assert texts(doc)[:2] == ["re m1", "m2"]
    assert await store.search_archive(session_id, "chat", "") == []
    await turns(engine, 5, 5, session_id)  # the end of the next turn retries
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (6, "S-new")
    assert texts(doc) == ["m4", "re m4", "m5", "re m5"]


class ConflictOnce(MemoryStore):
    """Another process wins the race between the revision check and the save, once."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        if self.armed:
            self.armed = False
            raise SessionConflictError(doc["id"], expected_revision, expected_revision + 1)
        return await super().save(doc, expected_revision)


async def test_background_commit_that_conflicts_is_dropped_without_writing() -> None:
    brain = Summariser("S1", "S2")
    store = ConflictOnce()
    engine = background_engine(brain, store)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    store.armed = True
    brain.release.set()
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (3, None)
    await turns(engine, 5, 5, session_id)
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert (doc["revision"], doc["memory"]["chat"]["summary"]) == (5, "S2")


async def test_background_failure_is_recorded_on_the_session() -> None:
    brain = Summariser(RuntimeError("summariser down"), held=0)
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)
    await engine.wait_for_background()
    doc = await engine.get_session(session_id)
    assert [w["message"] for w in doc["warnings"]] == [
        "Memory compaction skipped: the summary model raised RuntimeError: summariser down "
        "(namespace 'chat'). The history was kept in full; compaction is tried again at the "
        "end of the next turn."
    ]
    assert doc["revision"] == 4 and len(doc["memory"]["chat"]["messages"]) == 9


async def test_background_stream_has_no_compaction_events() -> None:
    brain = Summariser("S1", held=0)
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 3, None)
    events = [e async for e in engine.stream("ChatFlow", "m4", session_id=session_id)]
    assert [e.kind for e in events] == ["token", "token", "done"]
    await engine.aclose()


async def test_background_aclose_waits_for_the_commit(tmp_path: Any) -> None:
    path = str(tmp_path / "sessions.db")
    brain = Summariser("S1")
    engine = background_engine(brain, SQLiteStore(path))
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    closing = asyncio.create_task(engine.aclose())
    brain.release.set()
    await closing
    reopened = SQLiteStore(path)
    doc = await reopened.load(session_id)
    assert doc is not None and doc["memory"]["chat"]["summary"] == "S1"
    await reopened.aclose()


async def test_background_end_session_cancels_the_pending_summary() -> None:
    brain = Summariser("S1")
    engine = background_engine(brain)
    session_id = await turns(engine, 1, 4, None)
    await brain.started.wait()
    assert await engine.end_session(session_id) is True
    await engine.wait_for_background()
    assert await engine.get_session(session_id) is None
    assert await engine.store.search_archive(session_id, "chat", "") == []
