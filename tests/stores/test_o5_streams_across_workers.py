"""O5 across workers: a stream run by one app is resumed from another app on the same store.

Each app has its own engine and its own store object, as two worker processes would: on one
SQLite file, on one MongoDB database (SecantusDB), and (for completeness) on one MemoryStore.
Only the store is shared, so the second app serves the events from the store alone.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mongo_server import MongoServer

from picoflow import Flow, FlowEngine, Step, stay, tool
from picoflow.server import create_app
from picoflow.stores import MemoryStore, SQLiteStore, Store
from picoflow.stores.mongo import MongoStore
from picoflow.testing import ScriptedChatModel, tool_call

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "server"))
from server_flows import live_server  # noqa: E402
from test_o5_resume_streams import _raw_first_event  # noqa: E402

REPLY = "Two rooms are free on the third floor."


@pytest.fixture(params=["memory", "sqlite", "mongo"])
async def twin_stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Store, Store]]:
    """Two store objects on one database, one per app (memory: one object, shared)."""
    if request.param == "memory":
        shared = MemoryStore()
        stores: tuple[Store, Store] = (shared, shared)
    elif request.param == "sqlite":
        stores = (SQLiteStore(tmp_path / "shared.db"), SQLiteStore(tmp_path / "shared.db"))
    else:
        server: MongoServer = request.getfixturevalue("mongo_server")
        database = server.fresh_database()
        stores = (MongoStore(server.uri, database), MongoStore(server.uri, database))
    yield stores
    for store in {id(s): s for s in stores}.values():
        await store.aclose()
    if request.param == "mongo":
        server.drop(database)


class LookStep(Step):
    @tool
    def look_up(self) -> Any:
        """Look the rooms up."""
        return stay("two rooms")


def slow_flow(gate: asyncio.Event | threading.Event) -> type[Flow]:
    """A flow whose answer is written only once `gate` is set (after its first event).

    An asyncio gate for apps on the test's loop; a threading one for a server in a thread.
    """

    async def policy(messages: list[Any], tool_names: list[str]) -> Any:
        if not any(m.type == "tool" for m in messages):
            return tool_call("look_up")
        if isinstance(gate, threading.Event):
            assert await asyncio.to_thread(gate.wait, 10)
        else:
            await gate.wait()
        return REPLY

    model = ScriptedChatModel(policy=policy)

    class RoomFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [LookStep(self)]

    return RoomFlow


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://worker")


def frames(text: str) -> list[str]:
    return [f"{frame}\n\n" for frame in text.split("\n\n") if frame.strip()]


def apps(stores: tuple[Store, Store], flow: type[Flow]) -> tuple[Any, Any]:
    one, other = (create_app(FlowEngine(flows=[flow], store=store)) for store in stores)
    for app in (one, other):
        app.state.picoflow.streams.poll_every = 0.01  # the test need not wait a quarter second
    return one, other


async def test_o5_a_finished_turn_is_resumed_from_another_worker_byte_for_byte(
    twin_stores: tuple[Store, Store],
) -> None:
    gate = asyncio.Event()
    gate.set()
    one, other = apps(twin_stores, slow_flow(gate))
    async with client(one) as first, client(other) as second:
        sent = await first.post("/ai/stream", json={"flowName": "RoomFlow", "message": "rooms?"})
        turn = sent.text.split("id: ")[1].split(":")[0]
        rest = await second.get(f"/ai/stream/{turn}", headers={"Last-Event-ID": f"{turn}:1"})
        last = {"Last-Event-ID": f"{turn}:{len(frames(sent.text))}"}
        finished = await second.get(f"/ai/stream/{turn}", headers=last)
    assert rest.status_code == 200
    assert frames(rest.text) == frames(sent.text)[1:]
    assert finished.status_code == 204


async def test_o5_a_running_turn_is_followed_from_another_worker_until_done(
    twin_stores: tuple[Store, Store],
) -> None:
    gate = asyncio.Event()
    one, other = apps(twin_stores, slow_flow(gate))
    opened: list[tuple[str, asyncio.Future[bool]]] = []
    started = watch_new_turns(one.state.picoflow.streams, opened)
    reads: list[bool] = []
    polled = watch_reads(other.state.picoflow.streams, reads)
    async with client(one) as first, client(other) as second:
        running = asyncio.ensure_future(
            first.post("/ai/stream", json={"flowName": "RoomFlow", "message": "rooms?"})
        )
        await asyncio.wait_for(started.wait(), 30)
        turn, stream_open = opened[0]
        assert await stream_open  # in the store: any worker finds it from now on
        following = asyncio.ensure_future(
            second.get(f"/ai/stream/{turn}", headers={"Last-Event-ID": f"{turn}:1"})
        )
        await asyncio.wait_for(polled.wait(), 30)
        assert reads and not any(reads)  # the other worker found the turn running
        gate.set()  # now the model answers, on the first worker
        sent, rest = await running, await following
    assert len(reads) >= 2  # it read the store again until `done`
    assert frames(rest.text) == frames(sent.text)[1:]
    assert '"success": true' in rest.text and "Two " in rest.text


async def test_o5_a_turn_whose_worker_stopped_writing_ends_with_stream_lost(
    twin_stores: tuple[Store, Store],
) -> None:
    """The first worker died mid-turn (here: it opened the stream and wrote one event)."""
    store: Any = twin_stores[0]
    frame = 'event: tool_call\ndata: {"name": "look_up"}\nid: DeadWorkerTurn01:1\n\n'
    await store.stream_open("DeadWorkerTurn01", None, "2999-01-01T00:00:00.000Z", "2026-12-02")
    await store.stream_append("DeadWorkerTurn01", [(1, frame)], "2999-01-01T00:00:00.000Z")
    _, other = apps(twin_stores, slow_flow(asyncio.Event()))
    other.state.picoflow.streams.silent_after = 0.05
    async with client(other) as second:
        reply = await second.get("/ai/stream/DeadWorkerTurn01")
    first, lost = frames(reply.text)
    assert first == frame
    assert lost.startswith("event: done\ndata: ") and "\nid: " not in lost
    assert '"status": 503' in lost and '"code": "stream_lost"' in lost
    assert "Send the same message again with the same Idempotency-Key" in lost


def watch_new_turns(keeper: Any, opened: list[tuple[str, Any]]) -> asyncio.Event:
    """Note each new turn's id and its store-open write; the event is set on the first."""
    started = asyncio.Event()
    new_turn = keeper.new_turn

    def noted(owner: str | None) -> Any:
        live, write = new_turn(owner)
        opened.append((live.turn_id, write))
        started.set()
        return live, write

    keeper.new_turn = noted
    return started


def watch_reads(keeper: Any, reads: list[bool]) -> asyncio.Event:
    """Note whether each store read found the turn ended; the event is set on the first."""
    polled = asyncio.Event()
    read = keeper.read

    async def noted(turn_id: str, after: int) -> Any:
        found = await read(turn_id, after)
        reads.append(found is not None and found.ended)
        polled.set()
        return found

    keeper.read = noted
    return polled


async def test_o5_a_long_silent_turn_keeps_its_followers_with_heartbeats(
    twin_stores: tuple[Store, Store],
) -> None:
    """A tool call that takes longer than `silent_after` is not a dead worker: the writer's
    empty batches move the expiry on, and the follower waits for the answer."""
    gate = asyncio.Event()
    one, other = apps(twin_stores, slow_flow(gate))
    writer, follower = one.state.picoflow.streams, other.state.picoflow.streams
    writer.heartbeat_every = 0.02
    follower.silent_after = 0.5  # the turn stays silent for longer than this
    beats = count_heartbeats(twin_stores[0], 40)  # well over half a second of silence
    sent, followed = await follow_a_gated_turn(one, other, gate, beats)
    assert frames(followed.text) == frames(sent.text)
    assert "stream_lost" not in followed.text


async def follow_a_gated_turn(
    one: Any, other: Any, gate: asyncio.Event, quiet: asyncio.Event
) -> tuple[httpx.Response, httpx.Response]:
    """Stream a `slow_flow` turn from `one`, follow it from `other`, and open its gate once
    `quiet` is set; the stream as sent and as followed."""
    opened: list[tuple[str, asyncio.Future[bool]]] = []
    started = watch_new_turns(one.state.picoflow.streams, opened)
    async with client(one) as first, client(other) as second:
        running = asyncio.ensure_future(
            first.post("/ai/stream", json={"flowName": "RoomFlow", "message": "rooms?"})
        )
        await asyncio.wait_for(started.wait(), 30)
        turn, stream_open = opened[0]
        assert await stream_open
        following = asyncio.ensure_future(second.get(f"/ai/stream/{turn}"))
        await asyncio.wait_for(quiet.wait(), 30)
        gate.set()
        return await running, await following


def count_heartbeats(store: Any, wanted: int) -> asyncio.Event:
    """An event set once the store has had `wanted` empty appends (heartbeats)."""
    enough, seen = asyncio.Event(), [0]
    append = store.stream_append

    async def counted(turn_id: str, events: list[Any], *args: Any) -> None:
        await append(turn_id, events, *args)
        seen[0] += not events
        if seen[0] >= wanted:
            enough.set()

    store.stream_append = counted
    return enough


async def test_o5_a_client_that_hangs_up_leaves_the_turn_saved_and_its_events_kept(
    twin_stores: tuple[Store, Store],
) -> None:
    """On a real server: a raw client reads the first event and closes the socket."""
    client_gone = threading.Event()
    store: Any = twin_stores[0]
    engine = FlowEngine(flows=[slow_flow(client_gone)], store=store)
    with live_server(create_app(engine)) as live:
        body = b'{"flowName": "RoomFlow", "message": "rooms?"}'
        _, first = await _raw_first_event(live.url, body)
        turn = first.split("id: ")[1].split(":")[0]
        client_gone.set()  # only now does the model answer: nobody reads the original stream
        async with httpx.AsyncClient(base_url=live.url) as reader:
            whole = (await reader.get(f"/ai/stream/{turn}")).text  # follows it to `done`
        session = whole.split('"session": "')[1].split('"')[0]
        doc = live.call(engine.get_session(session))
        kept = live.call(store.stream_read(turn, 0, "2026-01-01T00:00:00.000Z"))
    said = [m["data"]["content"] for m in doc["memory"]["LookStep"]["messages"][1:]]
    assert said == ["rooms?", "", "two rooms", REPLY]
    assert frames(whole)[0] == first
    assert [frame for _, frame in kept.events] == frames(whole) and kept.ended


async def test_o5_a_follower_on_another_worker_gets_keep_alive_comments_while_it_waits(
    twin_stores: tuple[Store, Store],
) -> None:
    """The follower polls the store for a turn that is silent (its model thinks): it sends
    comments meanwhile, so a proxy keeps its connection, and the events are unchanged."""
    gate = asyncio.Event()
    one, other = apps(twin_stores, slow_flow(gate))
    writer, follower = one.state.picoflow.streams, other.state.picoflow.streams
    writer.heartbeat_every = 0.02  # the writer is alive: no stream_lost
    follower.keepalive_every = 0.02
    polled = count_reads(follower, 8)  # eight polls, 0.01 s apart: over 0.02 s of silence
    sent, followed = await follow_a_gated_turn(one, other, gate, polled)
    comments = [frame for frame in frames(followed.text) if frame.startswith(":")]
    assert comments and set(comments) == {": keep-alive\n\n"}
    assert [frame for frame in frames(followed.text) if not frame.startswith(":")] == frames(
        sent.text
    )


def count_reads(keeper: Any, wanted: int) -> asyncio.Event:
    """An event set once the keeper has read the store `wanted` times."""
    enough, seen = asyncio.Event(), [0]
    read = keeper.read

    async def counted(turn_id: str, after: int) -> Any:
        seen[0] += 1
        if seen[0] >= wanted:
            enough.set()
        return await read(turn_id, after)

    keeper.read = counted
    return enough
