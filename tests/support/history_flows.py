"""The echo flow the history tests share (tests/stores/test_history.py, the server's W tests).

Its model echoes the last message, fails on "fail", and waits at `GATE` while the gate is
closed, so a test can hold a turn mid-way and race it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from langchain_core.messages import BaseMessage

from picoflow import Flow, Step
from picoflow.testing import ScriptedChatModel


class Gate:
    """Holds a model call until the test opens it, so a turn can be raced mid-way."""

    def __init__(self) -> None:
        self.closed = False
        self.entered = asyncio.Event()
        self.opened = asyncio.Event()


GATE = Gate()


async def echo(messages: list[BaseMessage], tool_names: list[str]) -> str:
    text = str(messages[-1].content)
    if text == "fail":
        raise RuntimeError("the model is down")
    if GATE.closed:
        GATE.entered.set()
        await GATE.opened.wait()
    return f"echo: {text}"


MODEL = ScriptedChatModel(policy=echo)


class ChatStep(Step):
    def get_prompt(self) -> str:
        return "Echo every message."


class ChatFlow(Flow):
    def config_model(self) -> Any:
        return MODEL

    def define_steps(self) -> list[Step]:
        return [ChatStep(self)]


def humans(doc: dict[str, Any] | None) -> list[str]:
    """The user's messages of a session document, in order."""
    assert doc is not None
    messages = doc["memory"]["ChatStep"]["messages"]
    return [m["data"]["content"] for m in messages if m["type"] == "human"]
