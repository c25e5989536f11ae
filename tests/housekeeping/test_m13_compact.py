"""M12-M16: rebuilding drifted summaries, compaction on demand, preview flags, summary ranges."""

from __future__ import annotations

from typing import Any

import pytest
from support.vkit import STORES, make_store

from picoflow import (
    Flow,
    FlowEngine,
    SessionNotFoundError,
    Step,
    sliding_window,
    summarise,
)
from picoflow.policies import MemoryPolicy
from picoflow.testing import ScriptedChatModel


class Chat(Step):
    pass


def _flow(policy: MemoryPolicy, model: ScriptedChatModel) -> type[Flow]:
    class CompactFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            self.get_memory().set_summary_model(model).set_policy("chat", policy)

        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    return CompactFlow


def _model() -> ScriptedChatModel:
    counter = iter(range(1, 1000))

    def reply(messages: Any, tools: Any) -> str:
        return f"summary {next(counter)}" if "Previous summary" in messages[-1].text else "ok"

    return ScriptedChatModel(policy=reply)


async def _talk(engine: FlowEngine, count: int, session: str | None = None) -> str:
    for i in range(count):
        result = await engine.run("CompactFlow", f"message {i}", session_id=session)
        assert result.success, result.message
        session = result.session_id
    assert session is not None
    return session


@pytest.mark.parametrize("kind", STORES)
async def test_m13_compact_now_returns_both_shapes(kind: str, tmp_path: Any) -> None:
    engine = FlowEngine([_flow(summarise(16, 4), _model())], store=make_store(kind, tmp_path))
    session = await _talk(engine, 4)  # 8 messages: under the threshold, so nothing compacted yet
    doc = await engine.get_session(session)
    assert doc is not None and doc["memory"]["chat"]["summary"] is None
    result = await engine.compact(session)
    assert result["compacted"] is True
    assert result["compacted_count"] == 4  # 8 messages, the newest 4 stay
    assert result["to_sequence"] == 4
    assert result["summary_message_id"] == f"{session}:chat:summary:1"
    after = await engine.get_session(session)
    assert after is not None
    assert after["revision"] == doc["revision"] + 1
    assert after["memory"]["chat"]["summary"] == "summary 1"
    assert after["memory"]["chat"]["summary_range"] == {"from_seq": 1, "to_seq": 4, "count": 4}
    assert after["usage"]["summary"]["calls"] == 1
    again = await engine.compact(session, "chat")
    assert again == {"ok": True, "compacted": False, "message": "Nothing to compact"}


async def test_m13_compact_of_windows_and_bad_input() -> None:
    engine = FlowEngine([_flow(sliding_window(20, keep=2), _model())])
    session = await _talk(engine, 3)
    result = await engine.compact(session)
    assert result == {
        "compacted": True,
        "summary_message_id": None,
        "compacted_count": 4,
        "to_sequence": 4,
    }
    with pytest.raises(ValueError, match="Namespace 'other' of flow CompactFlow has no memory"):
        await engine.compact(session, "other")
    with pytest.raises(SessionNotFoundError):
        await engine.compact("A" * 24)
    with pytest.raises(SessionNotFoundError):
        await engine.compact(session, owner="someone-else")


@pytest.mark.parametrize("kind", STORES)
async def test_m16_summary_range_grows_with_each_compaction(kind: str, tmp_path: Any) -> None:
    engine = FlowEngine([_flow(summarise(8, 2), _model())], store=make_store(kind, tmp_path))
    session = await _talk(engine, 12)
    doc = await engine.get_session(session)
    assert doc is not None
    chat = doc["memory"]["chat"]
    assert chat["summary_generation"] >= 2
    assert chat["summary_range"]["from_seq"] == 1
    assert chat["summary_range"]["to_seq"] == chat["archived"]
    assert chat["summary_range"]["count"] == chat["archived"]


@pytest.mark.parametrize("kind", STORES)
async def test_m12_rebuild_after_writes_the_summary_from_the_archived_originals(
    kind: str, tmp_path: Any
) -> None:
    model = _model()
    engine = FlowEngine(
        [_flow(summarise(8, 2, rebuild_after=2), model)], store=make_store(kind, tmp_path)
    )
    session = await _talk(engine, 12)
    bodies = [
        r.messages[-1].text
        for r in model.requests
        if r.metadata.get("picoflow_purpose") == "summary"
    ]
    assert len(bodies) >= 2
    first, second = bodies[0], bodies[1]
    assert "(none yet)" in first
    # the second summary is a rebuild: no previous summary, and the first summary's originals
    assert "(none yet)" in second and "message 0" in second
    doc = await engine.get_session(session)
    assert doc is not None
    assert doc["memory"]["chat"]["summary_range"]["from_seq"] == 1


async def test_m15_preview_counts_and_flags() -> None:
    engine = FlowEngine([_flow(summarise(8, 2), _model())])
    session = await _talk(engine, 2)
    preview = await engine.preview(session)
    assert preview is not None
    assert preview.message_count == len(preview) == 5
    assert (preview.truncated, preview.compacted) == (False, False)
    session = await _talk(engine, 3, session)
    preview = await engine.preview(session, message="next")
    assert preview is not None
    assert preview.truncated and preview.compacted
    assert preview.message_count == len(preview)
    assert preview[-1].text == "next"
