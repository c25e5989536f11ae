"""A booking flow whose one tool has effects (K8, K9), for the effects tests of every layer."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, ToolMessage

from picoflow import Flow, Step, tool
from picoflow.testing import ScriptedChatModel, tool_call


def effect_policy(messages: list[BaseMessage], tools: Any) -> Any:
    """ "book X" calls book, "look X" calls look; a tool result is answered "Done: <result>"."""
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return f"Done: {last.content}"
    text = str(last.content)
    if text.startswith("book "):
        return tool_call("book", hotel=text.split()[1])
    if text.startswith("look "):
        return tool_call("look", hotel=text.split()[1])
    return f"You said: {text}"


def failing_after_tools(messages: list[BaseMessage], tools: Any) -> Any:
    """`effect_policy`, except that the model fails once it has read a tool's result."""
    if isinstance(messages[-1], ToolMessage):
        raise RuntimeError("model down")
    return effect_policy(messages, tools)


def effect_flow(model: Any, runs: list[str], *, fails: bool = False) -> type[Flow]:
    """`EffectFlow`: `book` (effects=True) appends its key to `runs`; `look` has no effect."""

    class BookStep(Step):
        def get_prompt(self) -> str:
            return "Book what the guest asks for."

        @tool(effects=True)
        def book(self, hotel: str) -> str:
            """Book a hotel."""
            runs.append(self.tool_call_key)
            if fails:
                raise RuntimeError("the booking system answered 500")
            return f"Booked {hotel}, reference R-{len(runs)}."

        @tool
        def look(self, hotel: str) -> str:
            """Look a hotel up (no effect on the world)."""
            return f"{hotel} has rooms."

    class EffectFlow(Flow):
        def config_model(self) -> Any:
            return model if model is not None else ScriptedChatModel(policy=effect_policy)

        def define_steps(self) -> list[Step]:
            return [BookStep(self)]

    return EffectFlow
