"""V3: `run_steps` options: `max_concurrency` (a cap) and `failure_policy` (retain-successes)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

LIVE = {"now": 0, "most": 0}
CAP: dict[str, Any] = {"value": None, "policy": "atomic", "fail": False}


async def _policy(messages: list[Any], tools: list[str]) -> Any:
    if "fan_out" in tools:
        return tool_call("fan_out") if messages[-1].type == "human" else str(messages[-1].text)
    if CAP["fail"] and messages[0].text == "I am B":
        raise ValueError("B cannot answer")
    LIVE["now"] += 1
    LIVE["most"] = max(LIVE["most"], LIVE["now"])
    await asyncio.sleep(0)  # a yield, so children that run together overlap here
    await asyncio.sleep(0)
    LIVE["now"] -= 1
    return "child answer"


class A(Step):
    pass


class B(Step):
    def get_prompt(self) -> str:
        return "I am B"


class C(Step):
    pass


class Parent(Step):
    @tool
    async def fan_out(self) -> str:
        """Ask the three children."""
        replies = await self.run_steps(
            [A, B, C], max_concurrency=CAP["value"], failure_policy=CAP["policy"]
        )
        return " / ".join(r if isinstance(r, str) else f"{type(r).__name__}: {r}" for r in replies)


class CapFlow(Flow):
    def config_model(self) -> Any:
        return ScriptedChatModel(policy=_policy)

    def define_steps(self) -> list[Step]:
        return [Parent(self), A(self), B(self), C(self)]


async def _run(cap: Any, policy: Any = "atomic", fail: bool = False) -> Any:
    LIVE.update(now=0, most=0)
    CAP.update(value=cap, policy=policy, fail=fail)
    return await FlowEngine([CapFlow], store=MemoryStore()).run("CapFlow", "go")


@pytest.mark.parametrize(("cap", "most"), [(None, 3), (3, 3), (2, 2), (1, 1)])
async def test_v3_max_concurrency_caps_the_children_running_at_once(cap: Any, most: int) -> None:
    result = await _run(cap)
    assert (result.success, result.message) == (
        True,
        "child answer / child answer / child answer",
    ), result.message
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


@pytest.mark.parametrize("cap", [None, 1])
async def test_v3_retain_successes_puts_a_failing_childs_exception_in_its_place(cap: Any) -> None:
    result = await _run(cap, "retain-successes", fail=True)
    assert result.success, result.message
    assert result.message.startswith("child answer / ")
    assert result.message.endswith(" / child answer")
    assert "B cannot answer" in result.message


async def test_v3_atomic_is_the_default_a_failing_child_fails_the_turn() -> None:
    result = await _run(None, fail=True)
    assert result.success is False
    assert "B cannot answer" in result.message


async def test_v3_failure_policy_must_be_known() -> None:
    result = await _run(None, "best-effort")
    assert (result.success, result.error) == (False, "ValueError")
    assert result.message == (
        "The turn failed and the session was not changed: ValueError: "
        "Parent.run_steps(failure_policy='best-effort'): the policy is 'atomic' (a failing "
        "child fails the turn) or 'retain-successes' (its exception takes its place in the "
        "results)."
    )
