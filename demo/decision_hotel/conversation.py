"""What the offline models read of the messages they are sent, as an LLM reads them.

A model sees its system prompt, the namespace's messages and the tool results; nothing else.
These helpers find in them the newest thing the guest said (an opener the framework added to
move the conversation along is no such thing), the model's own earlier tool calls (what it
captured before, which a revision keeps), and the prompt's facts (``CURRENT_DATE``).
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

_CURRENT_DATE = re.compile(r"CURRENT_DATE: (\d{4}-\d{2}-\d{2})")


def is_opener(message: BaseMessage) -> bool:
    """A message the framework or a step added to start a step, not the guest's words."""
    return message.additional_kwargs.get("origin") == "navigation"


def latest_request(messages: list[BaseMessage]) -> str | None:
    """The guest's newest words still to act on, or None.

    None when the newest human message is an opener, or when a tool call came after it: in a
    shared namespace, a request another step already captured or handed on (and that brought
    the conversation here) is not this step's to read again.
    """
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.tool_calls:
            return None
        if isinstance(message, HumanMessage):
            return None if is_opener(message) else message.text
    return None


def tool_feedback(messages: list[BaseMessage], tools: list[str]) -> str | None:
    """What the model's own last tool call answered, when that is what it must reply to.

    In a shared namespace the newest message may be another step's tool result (the capture
    that moved the conversation here), or its own "ok": neither asks for a reply to it.
    """
    last = messages[-1] if messages else None
    if not isinstance(last, ToolMessage) or last.text == "ok":
        return None
    calls = {
        call["id"]: call["name"]
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    }
    return last.text if calls.get(last.tool_call_id) in tools else None


def earlier_calls(messages: list[BaseMessage], name: str) -> list[dict[str, Any]]:
    """The arguments of every earlier call of tool `name`, oldest first."""
    return [
        dict(call["args"])
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
        if call["name"] == name
    ]


def last_reply(messages: list[BaseMessage]) -> str:
    """The model's last text reply before the guest's newest message ("" when none)."""
    seen_request = False
    for message in reversed(messages):
        if isinstance(message, HumanMessage) and not is_opener(message):
            if seen_request:
                return ""
            seen_request = True
        elif seen_request and isinstance(message, AIMessage) and message.text:
            return message.text
    return ""


def stated_date(text: str) -> date:
    """The ``CURRENT_DATE`` a prompt states; the real date when it states none."""
    found = _CURRENT_DATE.search(text)
    return date.fromisoformat(found.group(1)) if found else date.today()
