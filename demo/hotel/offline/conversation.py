"""How the offline model reads a request, the way an LLM would: prompt, memory, exchange.

Everything comes from the messages themselves — the step's system prompt (filled with the
flow's state), the compaction memory block, the guest's and the assistant's messages, tool
calls and tool results — plus the names of the bound tools. Nothing comes from run metadata, so
the model behaves the same behind an OpenAI-compatible HTTP endpoint.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from demo.hotel.formats import LIST_OPENER, TODAY, OfferLine, read_label, read_offers
from demo.reading import corrections

MEMORY_PREFIX = "Conversation memory for this step:"
"""How picoflow introduces a namespace's summary (SPEC M7)."""

SUMMARY_ROLES = {"Guest": "guest", "Assistant": "said", "Search": "call", "Result": "result"}
"""Line prefixes of the offline summary, and the event each one stands for."""

_CALL_LINE = re.compile(r"^(?P<tool>\w+) (?P<args>\{.*\})$")


@dataclass(frozen=True)
class Event:
    """One thing that happened in the conversation.

    The guest spoke ("guest"), the flow opened the list ("opener"), the assistant spoke
    ("said"), called a tool ("call", with ``tool`` and ``args``) or read a tool's result
    ("result").
    """

    kind: str
    text: str = ""
    tool: str | None = None
    args: dict[str, Any] | None = None
    later: bool = False  # a later part of the same guest message ("..., no wait, 200")


Offer = OfferLine
"""A hotel line of the step's prompt."""


@dataclass(frozen=True)
class Conversation:
    """A request split into what the model needs to decide."""

    prompt: str
    memory: str
    messages: tuple[BaseMessage, ...]
    tools: frozenset[str]

    @classmethod
    def read(cls, messages: Sequence[BaseMessage], tools: Sequence[str]) -> Conversation:
        """Split the leading system messages (prompt, memory block) from the exchange."""
        head = 0
        while head < len(messages) and isinstance(messages[head], SystemMessage):
            head += 1
        systems = [str(m.text) for m in messages[:head]]
        memory = [s.removeprefix(MEMORY_PREFIX).strip() for s in systems[1:]]
        return cls(
            prompt=systems[0] if systems else "",
            memory="\n".join(m for m in memory if m),
            messages=tuple(messages[head:]),
            tools=frozenset(tools),
        )

    def guest_text(self) -> str:
        """What the guest's newest message finally says ("" if there is none, or if the flow
        wrote it): its last part, once corrections are read (`demo.reading.expand`)."""
        found = next((m for m in reversed(self.messages) if isinstance(m, HumanMessage)), None)
        text = str(found.text) if found is not None else ""
        if not text or text == LIST_OPENER:
            return ""
        said = [event.text for event in self.events() if event.kind == "guest"]
        return said[-1] if said else corrections.settle(text)

    def forwarded(self) -> bool:
        """Whether the newest guest message is the first thing in this step's fresh memory.

        PresentStep and CompareStep start afresh on entry, so such a message was handed over by
        the other one: it must not be handed back, or the two would pass it to and fro.
        """
        events = [e for e in self.events() if e.kind != "guest"]
        guests = [m for m in self.messages if isinstance(m, HumanMessage)]
        return not events and len(guests) == 1 and not self.memory

    def opened(self) -> bool:
        """Whether the newest message is the flow's own opener of the list, not the guest."""
        found = next((m for m in reversed(self.messages) if isinstance(m, HumanMessage)), None)
        return found is not None and str(found.text) == LIST_OPENER

    def tool_result(self) -> Event | None:
        """The tool result the model must answer now, if the request ends with one."""
        if not self.messages or not isinstance(self.messages[-1], ToolMessage):
            return None
        return self.events()[-1]

    def events(self) -> list[Event]:
        """What happened, oldest first: the memory block's lines, then the messages."""
        found = [event for line in self.memory.splitlines() if (event := _memory_event(line))]
        names = _tool_names(self.messages)
        for message in self.messages:
            found.extend(_message_events(message, names))
        return _in_parts(found)

    def today(self) -> date:
        """Today's date as the prompt states it (the real date if it does not)."""
        value = read_label(self.prompt, TODAY)
        return date.fromisoformat(value[:10]) if value else date.today()

    def label(self, name: str) -> str | None:
        """The value of a "Name: value" line of the prompt."""
        return read_label(self.prompt, name)

    def offers(self) -> list[Offer]:
        """The numbered hotels the prompt lists, in the order shown."""
        return read_offers(self.prompt)


def _in_parts(events: list[Event]) -> list[Event]:
    """Each guest message as its parts, said in order (`demo.reading.expand`): "250 a night,
    no wait, 200" is read as two messages, the second correcting the first."""
    found: list[Event] = []
    read: list[str] = []
    for event in events:
        if event.kind != "guest":
            found.append(event)
            continue
        pieces = corrections.expand([event.text], read)
        read.extend(pieces)
        found.extend(Event("guest", piece, later=n > 0) for n, piece in enumerate(pieces))
    return found


def _memory_event(line: str) -> Event | None:
    role, _, text = line.partition(": ")
    kind = SUMMARY_ROLES.get(role.strip())
    if kind is None or not text:
        return None
    if kind == "call":
        match = _CALL_LINE.match(text.strip())
        if match is None:
            return None
        return Event("call", tool=match["tool"], args=_json_object(match["args"]))
    return Event(kind, text.strip())


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _tool_names(messages: Sequence[BaseMessage]) -> dict[str, str]:
    """Tool name by call id: over HTTP a tool result carries only the id of its call."""
    return {
        str(call["id"]): call["name"]
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    }


def _message_events(message: BaseMessage, names: dict[str, str]) -> list[Event]:
    text = str(message.text).strip()
    if isinstance(message, HumanMessage):
        return [Event("opener" if text == LIST_OPENER else "guest", text)]
    if isinstance(message, ToolMessage):
        return [Event("result", text, tool=message.name or names.get(message.tool_call_id))]
    if isinstance(message, AIMessage):
        events = [Event("said", text)] if text else []
        return events + [_call_event(call) for call in message.tool_calls]
    return []


def _call_event(call: ToolCall) -> Event:
    return Event("call", tool=call["name"], args=dict(call["args"]))
