"""H6: a turn has a deadline; past it the turn fails, nothing is saved, the lock is released.

Each test hangs a model or a tool on an event nobody sets, so the only way out is the engine's
`turn_timeout`; runs once per store (the `store` fixture), because "nothing saved" is a claim
about what each store holds afterwards.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from support.failed_turns import apart_from_error

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.stores import MemoryStore, Store
from picoflow.testing import ScriptedChatModel, tool_call

DEADLINE = 0.2
FAILED = (
    "The turn took longer than its deadline of 0.2 s and was stopped; the session was not "
    "changed. Send the message again."
)


class Desk(Step):
    """A step whose tool can be made to hang."""

    hang: asyncio.Event | None = None

    @tool
    async def search(self, city: str) -> str:
        """Search hotels in a city."""
        self.save_state({"searched": city})
        if Desk.hang is not None:
            await Desk.hang.wait()
        return f"3 hotels in {city}"


def desk_flow(model: ScriptedChatModel) -> type[Flow]:
    class DeskFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Desk(self)]

    return DeskFlow


def hanging_model(gate: asyncio.Event, hang_on: set[int]) -> ScriptedChatModel:
    """Replies "reply N" to call N, but waits on `gate` first for the calls in `hang_on`."""
    calls = 0

    async def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        nonlocal calls
        calls += 1
        if calls in hang_on:
            await gate.wait()
        return f"reply {calls}"

    return ScriptedChatModel(policy=policy)


async def snapshot(store: Store, session_id: str) -> str:
    """The stored session, apart from the error a failed turn writes (U5)."""
    return json.dumps(apart_from_error(await store.load(session_id)), sort_keys=True)


@pytest.mark.parametrize("store", ["memory", "sqlite", "mongo"], indirect=True)
async def test_h6_hung_model_fails_the_turn_and_saves_nothing(store: Store) -> None:
    gate = asyncio.Event()
    engine = FlowEngine(
        flows=[desk_flow(hanging_model(gate, {2}))], store=store, turn_timeout=DEADLINE
    )
    first = await engine.run("DeskFlow", "hello")
    assert first.success and first.message == "reply 1"
    before = await snapshot(store, first.session_id)
    stuck = await engine.run("DeskFlow", "are you there?", session_id=first.session_id)
    assert (stuck.success, stuck.error, stuck.message) == (False, "TurnTimeout", FAILED)
    assert stuck.session_id == first.session_id
    assert await snapshot(store, first.session_id) == before
    after = await engine.run("DeskFlow", "again", session_id=first.session_id)  # lock released
    assert after.success and after.message == "reply 3"


@pytest.mark.parametrize("store", ["memory", "sqlite", "mongo"], indirect=True)
async def test_h6_hung_tool_fails_a_new_session_and_creates_nothing(store: Store) -> None:
    model = ScriptedChatModel(script=[tool_call("search", city="Bend"), "unused"])
    engine = FlowEngine(flows=[desk_flow(model)], store=store, turn_timeout=DEADLINE)
    created: list[str] = []
    create = store.create

    async def recording_create(doc: dict[str, Any]) -> None:
        created.append(doc["id"])
        await create(doc)

    store.create = recording_create  # type: ignore[method-assign]
    Desk.hang = asyncio.Event()
    try:
        result = await engine.run("DeskFlow", "hotels in Bend")
    finally:
        Desk.hang = None
    assert (result.success, result.error, result.session_id) == (False, "TurnTimeout", None)
    assert created == []


async def test_h6_stream_ends_with_the_failure_and_the_next_turn_runs() -> None:
    gate = asyncio.Event()
    model = hanging_model(gate, {1})
    engine = FlowEngine(flows=[desk_flow(model)], store=MemoryStore(), turn_timeout=DEADLINE)
    events = [event async for event in engine.stream("DeskFlow", "hello")]
    assert [e.kind for e in events] == ["done"]
    result = events[0].result
    assert result is not None and (result.success, result.error) == (False, "TurnTimeout")
    again = await engine.run("DeskFlow", "hello")
    assert again.success and again.message == "reply 2"


async def test_h6_turns_within_the_deadline_are_untouched() -> None:
    model = ScriptedChatModel(script=[tool_call("search", city="Bend"), "Found 3."])
    engine = FlowEngine(flows=[desk_flow(model)], store=MemoryStore(), turn_timeout=30)
    result = await engine.run("DeskFlow", "hotels in Bend")
    assert result.success and result.message == "Found 3."
    doc = await engine.get_session(result.session_id)
    assert doc is not None and doc["steps"]["Desk"]["state"]["searched"] == "Bend"


async def test_h6_a_timeout_raised_by_flow_code_is_not_the_deadline() -> None:
    """Only the engine's own deadline reports "TurnTimeout"; a TimeoutError from a hook is a
    failure of flow code like any other (P3)."""

    class Late(Desk):
        async def on_start(self) -> None:
            raise TimeoutError("upstream api")

    class LateFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=["unused"])

        def define_steps(self) -> list[Step]:
            return [Late(self)]

    engine = FlowEngine(flows=[LateFlow], store=MemoryStore(), turn_timeout=30)
    result = await engine.run("LateFlow", "hi")
    assert (result.success, result.error) == (False, "TimeoutError")


@pytest.mark.parametrize("bad", [0, -1, "5", True, float("nan")])
def test_h6_turn_timeout_must_be_positive_seconds(bad: object) -> None:
    with pytest.raises(ValueError) as info:
        FlowEngine(flows=[], store=MemoryStore(), turn_timeout=bad)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"turn_timeout must be a number of seconds > 0 or None (no deadline), got {bad!r}."
    )
