"""V3: `run_steps(..., max_concurrency=N)` runs at most N children at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

LIVE = {"now": 0, "most": 0}
CAP: dict[str, Any] = {"value": None}


async def _policy(messages: list[Any], tools: list[str]) -> Any:
    if "fan_out" in tools:
        return tool_call("fan_out") if messages[-1].type == "human" else "Done."
    LIVE["now"] += 1
    LIVE["most"] = max(LIVE["most"], LIVE["now"])
    await asyncio.sleep(0)  # a yield, so children that run together overlap here
    await asyncio.sleep(0)
    LIVE["now"] -= 1
    return "child answer"


class A(Step):
    pass


class B(Step):
    pass


class C(Step):
    pass


class Parent(Step):
    @tool
    async def fan_out(self) -> str:
        """Ask the three children."""
        replies = await self.run_steps([A, B, C], max_concurrency=CAP["value"])
        return " / ".join(replies)


class CapFlow(Flow):
    def config_model(self) -> Any:
        return ScriptedChatModel(policy=_policy)

    def define_steps(self) -> list[Step]:
        return [Parent(self), A(self), B(self), C(self)]


async def _run(cap: Any) -> Any:
    LIVE.update(now=0, most=0)
    CAP["value"] = cap
    return await FlowEngine([CapFlow], store=MemoryStore()).run("CapFlow", "go")


@pytest.mark.parametrize(("cap", "most"), [(None, 3), (3, 3), (2, 2), (1, 1)])
async def test_v3_max_concurrency_caps_the_children_running_at_once(cap: Any, most: int) -> None:
    result = await _run(cap)
    assert (result.success, result.message) == (True, "Done."), result.message
    assert LIVE["most"] == most


@pytest.mark.parametrize("cap", [0, -1, 1.5, True, "2"])
async def test_v3_max_concurrency_must_be_a_positive_int(cap: Any) -> None:
    result = await _run(cap)
    assert (result.success, result.error) == (False, "ValueError")
    assert result.message == (
        "The turn failed and the session was not changed: ValueError: "
        f"Parent.run_steps(max_concurrency={cap!r}): the cap is how many children run at once, "
        "an int of 1 or more (or None for no cap)."
    )
