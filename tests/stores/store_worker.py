"""One app process of the P4 tests: its own FlowEngine running turns on a shared session.

    python store_worker.py URL DATABASE SESSION_ID NAME TURNS [CONCURRENT_TURNS]

URL is a MongoDB URI (DATABASE names the database) or a `sqlite:///` URL (DATABASE is `-`).

It connects, prints "ready", waits for a line on stdin (so that the test starts every worker at
the same moment), runs TURNS turns with the messages NAME-00, NAME-01, ..., and prints one JSON
list: for each turn its message, `success`, `error` and
`during` (when it started and ended, wall clock). CONCURRENT_TURNS is the engine's
`concurrent_turns` ("reject" by default; "queue" gives it a turn_timeout of 60 s, O4).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

from langchain_core.messages import BaseMessage

from picoflow import Flow, FlowEngine, Step
from picoflow.stores import Store, from_url
from picoflow.stores.mongo import MongoStore
from picoflow.testing import ScriptedChatModel


def acknowledge(messages: list[BaseMessage], tool_names: list[str]) -> str:
    return f"ok: {messages[-1].content}"


MODEL = ScriptedChatModel(policy=acknowledge)


class ChatStep(Step):
    def get_prompt(self) -> str:
        return "Acknowledge every message."


class ChatFlow(Flow):
    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [ChatStep(self)]


def open_store(url: str, database: str) -> Store:
    return MongoStore(url, database) if url.startswith("mongodb") else from_url(url)


async def work(
    url: str, database: str, session_id: str, name: str, turns: int, mode: str = "reject"
) -> None:
    store = open_store(url, database)
    if mode == "queue":
        engine = FlowEngine([ChatFlow], store, concurrent_turns="queue", turn_timeout=60)
    else:
        engine = FlowEngine(flows=[ChatFlow], store=store)
    assert await engine.get_session(session_id) is not None  # connected before the start
    print("ready", flush=True)
    await asyncio.to_thread(sys.stdin.readline)
    results = []
    for turn in range(turns):
        text = f"{name}-{turn:02d}"
        started = time.time()
        result = await engine.run("ChatFlow", text, session_id)
        assert result.session_id == session_id, result
        results.append(
            {
                "text": text,
                "success": result.success,
                "error": result.error,
                "during": [started, time.time()],
            }
        )
    await engine.aclose()
    print(json.dumps(results), flush=True)


if __name__ == "__main__":
    url, database, session_id, name, turns, *mode = sys.argv[1:]
    asyncio.run(work(url, database, session_id, name, int(turns), *mode))
