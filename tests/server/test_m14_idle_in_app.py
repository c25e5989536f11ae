"""M14 in the served app: `create_app(..., compact_idle_every=...)` compacts idle sessions.

The loop runs once when the app starts and is stopped before the shutdown drains; the test
waits for that first run through an event set by the engine's own call, never by sleeping.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step, sliding_window
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

MODEL = ScriptedChatModel(policy=lambda messages, tools: "ok")


class Chat(Step):
    pass


class WindowFlow(Flow):
    def __init__(self) -> None:
        super().__init__()
        self.get_memory().set_policy("chat", sliding_window(20, keep=2))

    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [Chat(self).use_memory("chat")]


async def test_m14_the_app_compacts_idle_sessions_when_it_starts_and_stops_the_loop() -> None:
    store = MemoryStore()
    engine = FlowEngine([WindowFlow], store=store)
    session = None
    for text in ("a", "b", "c"):
        session = (await engine.run("WindowFlow", text, session_id=session)).session_id
    assert session is not None
    doc = await store.load(session)
    assert doc is not None
    doc["updated_at"] = (datetime.now(UTC) - timedelta(hours=3)).isoformat().replace("+00:00", "Z")
    await store.save(doc, doc["revision"])
    compact_idle, ran = engine.compact_idle, asyncio.Event()
    reports: list[dict[str, Any]] = []

    async def observed(older_than: Any, **kwargs: Any) -> dict[str, Any]:
        reports.append(await compact_idle(older_than, **kwargs))
        ran.set()
        return reports[-1]

    engine.compact_idle = observed  # type: ignore[method-assign]
    app = create_app(engine, compact_idle_every=timedelta(hours=2))
    async with app.router.lifespan_context(app):
        await ran.wait()
        tasks = {task.get_name() for task in asyncio.all_tasks()}
        assert "picoflow-compact-idle" in tasks  # waiting for its next run
    assert reports == [
        {
            "looked_at": 1,
            "compacted": 1,
            "compacted_ids": [session],
            "compacted_count": 4,
            "nothing_to_compact": 0,
            "skipped": 0,
            "failed": [],
        }
    ]
    assert "picoflow-compact-idle" not in {task.get_name() for task in asyncio.all_tasks()}


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"compact_idle_every": 0}, ValueError, r"create_app\(compact_idle_every=...\) must be"),
        ({"compact_idle_every": "15m"}, TypeError, r"create_app\(compact_idle_every=...\) takes"),
        (
            {"compact_idle_every": timedelta(seconds=-1)},
            ValueError,
            r"create_app\(compact_idle_every=...\) must be a positive duration",
        ),
    ],
)
def test_m14_bad_idle_settings_stop_create_app(
    options: dict[str, Any], error: type, message: str
) -> None:
    engine = FlowEngine([WindowFlow], store=MemoryStore())
    with pytest.raises(error, match=message):
        create_app(engine, **options)
