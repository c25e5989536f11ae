"""A real uvicorn server on a free loopback port, driven over TCP as a PicoFlow client would."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import httpx
from server_flows import GREETING, TABLE, api, chat_flow, live_server

from picoflow import Flow, Step, stay, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


async def picoflow_client_turn(client: httpx.AsyncClient, session: str | None, text: str) -> Any:
    """What a PicoFlow client does each turn: send the id it has, keep the id it gets back.

    PicoFlow's JS client and chat-ui parse every reply as JSON, whatever it holds.
    """
    headers = {"CHAT_SESSION_ID": session} if session else {}
    reply = await client.post(
        "/ai/run", json={"flowName": "ChatFlow", "message": text}, headers=headers
    )
    assert reply.headers["CHAT_SESSION_ID"]  # set whenever a session exists
    reply.json()
    return reply


async def test_a_whole_conversation_over_a_real_server() -> None:
    engine, app = api(chat_flow())
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            assert (await client.get("/healthcheck")).json()["status"] == "ok"
            assert (await client.get("/ai/flows")).json() == ["ChatFlow"]
            first = await picoflow_client_turn(client, None, "hello")
            session = first.headers["CHAT_SESSION_ID"]
            assert first.json()["message"] == GREETING
            table = await picoflow_client_turn(client, session, "a table, please")
            assert table.json()["contentType"] == "text/markdown"
            assert table.json()["message"] == TABLE
            assert table.headers["CHAT_SESSION_ID"] == session
            last = await picoflow_client_turn(client, session, "bye")
            assert last.json()["completed"] is True and last.json()["message"] == "Goodbye!"
            doc = live.call(engine.get_session(session))
            assert doc["sequence"] == ["GreetStep", "TableStep", "EndStep"]
            assert doc["run_status"] == "completed"
            ended = await client.post("/ai/end", headers={"CHAT_SESSION_ID": session})
            assert ended.json()["success"] is True
            assert live.call(engine.get_session(session)) is None


async def test_the_underscore_header_survives_the_wire_both_ways() -> None:
    _, app = api(chat_flow())
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            first = await picoflow_client_turn(client, None, "hello")
            raw = [name for name, _ in first.headers.raw]
            assert b"chat_session_id" in [name.lower() for name in raw]
            second = await picoflow_client_turn(client, first.json()["session"], "again")
            assert second.json()["session"] == first.json()["session"]


async def test_server_shutdown_closes_the_engine_store() -> None:
    store = MemoryStore()
    engine, app = api(chat_flow(), store=store)
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            session = (await picoflow_client_turn(client, None, "hello")).json()["session"]
        assert live.call(engine.get_session(session)) is not None
    # The lifespan closed the engine: a closed MemoryStore refuses further calls.
    result = await engine.run("ChatFlow", "hello")
    assert result.success is False and result.error == "StoreError"


class SlowStep(Step):
    @tool
    def look_up(self) -> Any:
        """Look something up before answering."""
        return stay("found it")


class SavedSignalStore(MemoryStore):
    """Tells the test, across threads, when a session was first written."""

    def __init__(self) -> None:
        super().__init__()
        self.created = threading.Event()
        self.ids: list[str] = []

    async def create(self, doc: dict[str, Any]) -> None:
        await super().create(doc)
        self.ids.append(doc["id"])
        self.created.set()


async def test_p3_a_client_leaving_mid_stream_leaves_a_whole_turn_saved() -> None:
    client_gone = threading.Event()

    async def policy(messages: list[Any], tool_names: list[str]) -> Any:
        if not any(m.type == "tool" for m in messages):
            return tool_call("look_up")
        # The reply is only written after the client has hung up.
        assert await asyncio.to_thread(client_gone.wait, 10)
        return "The answer, after the client left."

    model = ScriptedChatModel(policy=policy)

    class SlowFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [SlowStep(self)]

    store = SavedSignalStore()
    engine, app = api(SlowFlow, store=store)
    with live_server(app) as live:
        async with httpx.AsyncClient(base_url=live.url) as client:
            body = {"flowName": "SlowFlow", "message": "question"}
            async with client.stream("POST", "/ai/stream", json=body) as reply:
                lines = reply.aiter_lines()
                assert await anext(lines) == "event: tool_call"
        client_gone.set()  # the connection is closed: the server must finish the turn alone
        assert await asyncio.to_thread(store.created.wait, 10)
        doc = live.call(engine.get_session(store.ids[0]))
    said = [
        (m["type"], m["data"]["content"] or m["data"].get("tool_calls", [{}])[0].get("name"))
        for m in doc["memory"]["SlowStep"]["messages"]
        if m["type"] != "system"
    ]
    assert said == [
        ("human", "question"),
        ("ai", "look_up"),
        ("tool", "found it"),
        ("ai", "The answer, after the client left."),
    ]
    assert doc["revision"] == 0
