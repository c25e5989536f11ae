"""SPEC section 10 failure paths on every store: the stored session is exactly as before (P3).

Each case runs one good turn, then a turn that fails in one of the V rules' ways; the document
the store returns afterwards must be identical, byte for byte, to the one before.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel
from support.failed_turns import apart_from_error

from picoflow import Flow, FlowEngine, LogicStep, ModelSpec, Step, go, stay, tool
from picoflow.stores import Store
from picoflow.testing import ScriptedChatModel, structured, text, tool_call, transient_error


class Answer(BaseModel):
    value: int


class HubStep(Step):
    @tool
    def to_logic(self) -> Any:
        """Enter the logic steps."""
        self.save_state({"touched": True})
        return go(StayLogic)

    @tool
    def to_cycle(self) -> Any:
        """Enter a logic cycle."""
        return go(PingLogic)

    @tool
    async def nest_rogue(self) -> Any:
        """A child that moves the cursor."""
        return await self.run_step(RogueChild, "go")

    @tool
    async def nest_pair(self) -> Any:
        """Two children, one fails."""
        return await self.run_steps([QuietChild, FailingChild])

    @tool
    def to_structured(self) -> Any:
        """Ask for a structured answer."""
        return go(StructuredStep)


class StayLogic(LogicStep):
    async def run_logic(self) -> Any:
        return stay()


class PingLogic(LogicStep):
    async def run_logic(self) -> Any:
        return go(PongLogic)


class PongLogic(LogicStep):
    async def run_logic(self) -> Any:
        return go(PingLogic)


class RogueChild(Step):
    @tool
    def move(self) -> Any:
        """Move."""
        return go(HubStep)


class QuietChild(Step):
    def on_enter(self) -> None:
        self.save_state({"entered": True})


class FailingChild(Step):
    pass


class StructuredStep(Step):
    output_schema = Answer


class RetryFlow(Flow):
    max_tool_rounds = 3
    timeout = 30.0

    def config_model(self) -> Any:
        return ModelSpec("scripted", "m", retry_attempts=1, timeout=self.timeout)

    def define_steps(self) -> list[Step]:
        return [
            HubStep(self),
            StayLogic(self),
            PingLogic(self),
            PongLogic(self),
            RogueChild(self),
            QuietChild(self),
            FailingChild(self),
            StructuredStep(self),
        ]


class TimeoutFlow(RetryFlow):
    name = "RetryFlow"
    timeout = 0.05


async def _hello_then_hang(sent: list[Any], tools: list[str]) -> str:
    """Answers the first turn; the second turn's calls never answer (each times out)."""
    if sent[-1].text == "hi":
        return "Hello."
    await asyncio.Event().wait()
    return "unreachable"


# (the failing turn's script for each step, the expected TurnResult.error)
CASES: dict[str, tuple[dict[str, list[Any]], str]] = {
    "v1_stay_from_logic": ({"HubStep": [tool_call("to_logic")]}, "FlowDefinitionError"),
    "v1_logic_cycle": ({"HubStep": [tool_call("to_cycle")]}, "ToolLoopError"),
    "v2_child_moves_cursor": (
        {"HubStep": [tool_call("nest_rogue")], "RogueChild": [tool_call("move")]},
        "FlowDefinitionError",
    ),
    "v3_failing_child": (
        {
            "HubStep": [tool_call("nest_pair")],
            "QuietChild": ["fine"],
            "FailingChild": [ValueError("child broke")],
        },
        "ValueError",
    ),
    "v4_never_validates": (
        {
            "HubStep": [tool_call("to_structured")],
            "StructuredStep": [structured({"value": "x"})] * 2,
        },
        "ToolLoopError",
    ),
    "v9_retries_exhausted": (
        {"HubStep": [transient_error("server_error")] * 2},
        "ModelUnavailableError",
    ),
}


async def _never_sleep(seconds: float) -> None:
    return None


@pytest.mark.parametrize("case", [*CASES, "v9_timeout"])
async def test_v_failed_turn_leaves_the_stored_session_byte_identical(
    store: Store, case: str
) -> None:
    scripts: dict[str, list[Any]] = {"HubStep": [text("Hello.")]}
    failing, error = CASES.get(case, ({}, "ModelUnavailableError"))
    for step, items in failing.items():
        scripts.setdefault(step, []).extend(items)
    if case == "v9_timeout":
        flow, model = TimeoutFlow, ScriptedChatModel(policy=_hello_then_hang)
    else:
        flow, model = RetryFlow, ScriptedChatModel(script=scripts)
    engine = FlowEngine(
        flows=[flow], store=store, providers={"scripted": lambda spec: model}, sleep=_never_sleep
    )
    first = await engine.run("RetryFlow", "hi")
    assert first.success, first.message
    before = json.dumps(apart_from_error(await store.load(first.session_id)), sort_keys=True)
    failed = await engine.run("RetryFlow", "now fail", session_id=first.session_id)
    assert (failed.success, failed.completed, failed.error) == (False, False, error)
    after = await store.load(first.session_id)
    assert json.dumps(apart_from_error(after), sort_keys=True) == before  # U5: the error alone
    assert after is not None and [e["error"] for e in after["error"]] == [error]
    await engine.aclose()
