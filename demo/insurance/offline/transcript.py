"""How the offline model reads a request, as an LLM would: the prompt's facts and the history.

The facts are the ``NAME: <JSON>`` lines the flow writes into every prompt (the saved
application, the current date, the quote). The history is the namespace's messages, the
rolling summary's lines first when compaction replaced older ones: both become one list of
`Event`s, so a stage reads the same whether its start is still in memory or summarised.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from demo.insurance.prompts import OPENERS

MEMORY_PREFIX = "Conversation memory for this step:"
"""How picoflow introduces a namespace's summary (SPEC M7)."""

_FACT = re.compile(r"^(?P<name>[A-Z][A-Z_]+): (?P<value>.*)$", re.MULTILINE)
_LINE = re.compile(
    r"^(?P<role>User|Assistant|Tool result \((?P<tool>\w+)\)|System): ?(?P<text>.*)$"
)
_CALLED = re.compile(r"\s*\[called (?P<calls>.*)\]\s*$")
_CALL_NAME = re.compile(r"(\w+)\(")
OPENER_TEXTS = frozenset(OPENERS.values())


@dataclass(frozen=True)
class Event:
    """One thing in the history: the customer spoke ("human"), a stage began ("opener"), the
    assistant spoke ("ai"), called a tool ("call") or read its result ("result")."""

    kind: str
    text: str = ""
    tool: str = ""
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """A tool result that is no error and no correction request: the call was accepted."""
        return self.kind == "result" and self.text.strip() == "ok"


def facts(prompt: str) -> dict[str, Any]:
    """The ``NAME: <JSON>`` lines of a prompt, decoded (a line that is no JSON is its text)."""
    found: dict[str, Any] = {}
    for match in _FACT.finditer(prompt):
        try:
            found[match["name"]] = json.loads(match["value"])
        except ValueError:
            found[match["name"]] = match["value"]
    return found


def events(messages: Sequence[BaseMessage]) -> list[Event]:
    """The whole history as events: the summary's lines, then the live messages."""
    found: list[Event] = []
    for message in messages[1:]:
        text = str(message.text)
        if isinstance(message, SystemMessage) and text.startswith(MEMORY_PREFIX):
            found.extend(summary_events(text[len(MEMORY_PREFIX) :]))
        elif isinstance(message, HumanMessage):
            found.append(Event("opener" if text.strip() in OPENER_TEXTS else "human", text))
        elif isinstance(message, ToolMessage):
            found.append(Event("result", text, message.name or ""))
        elif isinstance(message, AIMessage):
            if text.strip():
                found.append(Event("ai", text))
            for call in message.tool_calls:
                found.append(Event("call", "", call["name"], dict(call.get("args") or {})))
    return _name_results(found)


def summary_events(summary: str) -> list[Event]:
    """The events a summary's transcript lines stand for (a line without a role continues the
    one before it)."""
    found: list[Event] = []
    for raw in summary.strip().splitlines():
        match = _LINE.match(raw.strip())
        if match is None:
            if found and found[-1].kind in ("human", "ai", "result"):
                last = found.pop()
                found.append(Event(last.kind, f"{last.text}\n{raw.strip()}", last.tool, last.args))
            continue
        found.extend(_line_events(match))
    return found


def _line_events(match: re.Match[str]) -> list[Event]:
    role, text = match["role"], match["text"].strip()
    if match["tool"]:
        return [Event("result", text, match["tool"])]
    if role == "User":
        return [Event("opener" if text in OPENER_TEXTS else "human", text)]
    if role != "Assistant":
        return []
    called = _CALLED.search(text)
    said = text[: called.start()].strip() if called else text
    found = [Event("ai", said)] if said else []
    if called:
        found.extend(Event("call", "", name, args) for name, args in _calls(called["calls"]))
    return found


def _calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    decoder, found, position = json.JSONDecoder(), [], 0
    while (name := _CALL_NAME.search(text, position)) is not None:
        try:
            args, position = decoder.raw_decode(text, name.end())
        except json.JSONDecodeError:
            break
        found.append((name.group(1), args if isinstance(args, dict) else {}))
    return found


def _name_results(found: list[Event]) -> list[Event]:
    """Give each tool result the name of the call it answers (calls and results pair in order)."""
    named, pending = [], []
    for event in found:
        if event.kind == "call":
            pending.append(event.tool)
        elif event.kind == "result" and pending:
            event = Event("result", event.text, pending.pop(0), event.args)
        named.append(event)
    return named


def since_boundary(history: Sequence[Event]) -> list[Event]:
    """The events of the current stage: after the last opener or accepted capture, so a stage
    sharing the intake namespace does not read the others' answers."""
    start = 0
    for index, event in enumerate(history):
        if event.kind == "opener" or (event.ok and event.tool.startswith("capture_")):
            start = index + 1
    return list(history[start:])


def last_call(history: Sequence[Event]) -> Event | None:
    """The newest tool call, if any."""
    return next((event for event in reversed(history) if event.kind == "call"), None)


def human_texts(history: Sequence[Event]) -> list[str]:
    """What the customer said, in order."""
    return [event.text for event in history if event.kind == "human"]
