"""A hotel-booking flow for the people-in-the-loop tests (K1-K7), driven by a policy model.

The model is a policy, not a script, so any engine in any process answers the same way: a user
message makes it call `book` (or `handoff_to_person` when the user asks for a person), and a
tool result makes it say what the result was. `book` counts its runs in a file, so a test can
tell how often the effect happened whatever process ran it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from picoflow import Flow, FlowEngine, Step, handoff, tool
from picoflow.stores import MemoryStore, Store
from picoflow.testing import ScriptedChatModel, tool_call

LIMIT = 500
RUNS_FILE = "PICOFLOW_TEST_RUNS"  # env var: where `book` appends one JSON line per run


def runs(path: Path) -> list[dict[str, Any]]:
    """Every run of `book` recorded in `path`."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def booking_policy(messages: list[BaseMessage], tool_names: list[str]) -> AIMessage | str:
    tail: list[BaseMessage] = []  # what came after the model's last own message
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.name != "operator":
            break
        tail.append(message)
    results = [m for m in tail if isinstance(m, ToolMessage)]
    if results:
        return f"Result: {results[0].content}"
    if any(isinstance(m, AIMessage) for m in tail):
        return "I have read what the operator wrote."
    text = str(messages[-1].content)
    if "person" in text:
        return tool_call("handoff_to_person", reason=text)
    if text.startswith("book "):
        _, hotel, total = text.split()
        return tool_call("book", hotel=hotel, total=int(total))
    return f"You said: {text}"


def over_limit(args: dict[str, Any], step: Step) -> bool:
    return int(args["total"]) > int(step.get_context("config.limit") or LIMIT)


class BookStep(Step):
    def get_prompt(self) -> str:
        return "Book the hotel the user asks for."

    @tool(requires_approval=over_limit)
    def book(self, hotel: str, total: int) -> str:
        """Book a hotel for the given total price."""
        path = os.environ.get(RUNS_FILE)
        if path:
            with open(path, "a") as out:
                out.write(json.dumps({"hotel": hotel, "total": total, "key": self.tool_call_key}))
                out.write("\n")
        return f"Booked {hotel} for {total}."

    @tool
    def handoff_to_person(self, reason: str) -> Any:
        """Hand the conversation to a person when the user asks for one."""
        return handoff(f"The guest asked: {reason}")


def booking_flow(model: ScriptedChatModel | None = None) -> type[Flow]:
    chat = model or ScriptedChatModel(policy=booking_policy)

    class BookingFlow(Flow):
        def config_model(self) -> Any:
            return chat

        def define_steps(self) -> list[Step]:
            return [BookStep(self)]

    return BookingFlow


def booking_engine(
    store: Store | None = None, model: ScriptedChatModel | None = None
) -> FlowEngine:
    return FlowEngine(flows=[booking_flow(model)], store=store or MemoryStore())


def human(text: str) -> HumanMessage:
    return HumanMessage(text)
