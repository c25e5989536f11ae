"""What the benefits offline model was sent, as one value each stage player reads.

An LLM behind an API sees only the request: the system prompt (the role, the stage's
instructions and its ``NAME: <JSON>`` inputs), the namespace's history (with the rolling
summary, when there is one) and the tool names. `hear` turns that into a `Heard`: the inputs
parsed, the stage's own messages (those after its opener, PicoFlow's stage boundary in a
shared namespace) and the parts said, in order, with corrections and withdrawals read.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from demo.benefits.reading import Said, human_texts, last_ai_text, said_in_stage, wants_to_stop
from picoflow.testing import tool_call

_FACT = re.compile(r"^(?P<name>[A-Z][A-Z_]+): (?P<value>.+)$", re.M)
MEMORY_PREFIX = "Conversation memory for this step:\n"


@dataclass
class Heard:
    """One request to the offline model, read."""

    prompt: str
    messages: list[BaseMessage]
    tools: list[str]
    facts: dict[str, Any] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    said: list[Said] = field(default_factory=list)
    last_ai: str = ""

    @property
    def today(self) -> date:
        """The prompt's CURRENT_DATE (the intake knows it), else the real date."""
        value = self.facts.get("CURRENT_DATE")
        return date.fromisoformat(value) if isinstance(value, str) else date.today()

    @property
    def last(self) -> Said | None:
        """The last part said in this stage, None when the stage has no message yet."""
        return self.said[-1] if self.said else None

    @property
    def latest(self) -> list[Said]:
        """The parts of the last message."""
        if not self.said:
            return []
        number = self.said[-1].message
        return [said for said in self.said if said.message == number]

    def withdrawn(self) -> bool:
        """Whether the last message takes a choice back (nothing may be committed on it)."""
        return any(said.withdrawn for said in self.latest)

    def kept(self) -> list[Said]:
        """The parts that still stand: every part but those that take a choice back."""
        return [said for said in self.said if not said.withdrawn]


def guard(heard: Heard, end_tool: str, hold: str) -> AIMessage | str | None:
    """The reply before any reading, or None: a withdrawn last message holds, and a clear
    wish to stop calls the stage's end tool."""
    if heard.withdrawn():
        return hold
    if any(wants_to_stop(said.text) for said in heard.latest):
        return tool_call(end_tool)
    return None


def facts_in(prompt: str) -> dict[str, Any]:
    """The stage inputs of a prompt: each ``NAME: <JSON>`` line."""
    found: dict[str, Any] = {}
    for match in _FACT.finditer(prompt):
        try:
            found[match["name"]] = json.loads(match["value"])
        except ValueError:
            continue
    return found


def remembered(messages: list[BaseMessage]) -> list[BaseMessage]:
    """The history with the summary's transcript lines put back as the messages they were."""
    out: list[BaseMessage] = []
    for message in messages:
        text = message.text if isinstance(message, SystemMessage) else ""
        if text.startswith(MEMORY_PREFIX):
            for line in text[len(MEMORY_PREFIX) :].splitlines():
                if line.startswith("User: "):
                    out.append(HumanMessage(line[len("User: ") :]))
                elif line.startswith("Assistant: "):
                    out.append(AIMessage(line[len("Assistant: ") :]))
            continue
        out.append(message)
    return out


def hear(messages: list[BaseMessage], tools: list[str], opener: str | None) -> Heard:
    """The request read for a stage whose conversation starts after `opener`."""
    prompt = messages[0].text if messages else ""
    history = remembered(messages[1:])
    texts = [text for text in human_texts(history, opener) if text.strip()]
    return Heard(
        prompt=prompt,
        messages=history,
        tools=tools,
        facts=facts_in(prompt),
        texts=texts,
        said=said_in_stage(texts),
        last_ai=last_ai_text(history),
    )
