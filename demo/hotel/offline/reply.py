"""The two things the offline model can answer: words for the guest, or tool calls."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolCall


def say(text: str) -> AIMessage:
    """A reply to the guest."""
    return AIMessage(content=text)


def call(name: str, **args: Any) -> AIMessage:
    """A tool call (its id is given when the model sends the reply)."""
    return AIMessage(content="", tool_calls=[ToolCall(name=name, args=args, id=None)])
