"""The offline summariser: a faithful, cumulative memory of the messages compaction evicts.

It invents nothing and keeps what a later turn needs: every guest line, every search with its
criteria, the assistant's lines that carry a number, a date or an open question, and tool results
that carry a number. Lines already in this format (a previous summary) are kept as they are, so
the memory stays cumulative (SPEC M6). Each line starts with its role — ``Guest:``,
``Assistant:``, ``Search:``, ``Result:`` — which is also how the offline model reads it back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from demo.hotel.offline.conversation import SUMMARY_ROLES

MAX_LINES = 80
"""The newest lines kept; older ones are dropped first."""

_ROLE_LINE = re.compile(
    r"^\s*(?P<role>human|user|guest|ai|assistant|bot|tool(?: result)?|function)\s*"
    r"(?:\([^)]*\))?\s*:\s*(?P<text>.*)$",
    re.IGNORECASE,
)
"""A transcript line: "User: ...", "Assistant: ...", "Tool result (capture_choices): ..."."""

_CALLED = re.compile(r"\s*\[called (?P<calls>.*)\]\s*$")
"""The tool calls an assistant line ends with: "[called capture_choices({...})]"."""

_CALL_NAME = re.compile(r"(\w+)\(")
_ROLES = {
    **dict.fromkeys(("human", "user", "guest"), "Guest"),
    **dict.fromkeys(("ai", "assistant", "bot"), "Assistant"),
    **dict.fromkeys(("tool", "tool result", "function"), "Result"),
}
_WORTH_KEEPING = re.compile(r"\d|\?|no hotel", re.IGNORECASE)


def is_summary_request(messages: Sequence[BaseMessage], tools: Sequence[str]) -> bool:
    """No tools, and the instructions (the first message) ask for a summary."""
    return not tools and bool(messages) and "summar" in str(messages[0].text).lower()


def summarize(messages: Sequence[BaseMessage]) -> str:
    """The updated memory: previous summary lines, then the evicted messages' lines."""
    instructions = str(messages[0].text).splitlines() if messages else []
    previous = [line.strip() for line in instructions if _is_summary_line(line.strip())]
    evicted = [line for message in messages[1:] for line in _lines(message) if line]
    if previous and evicted[: len(previous)] == previous:
        evicted = evicted[len(previous) :]  # a transcript that restates the previous summary
    kept = previous + evicted
    return "\n".join(kept[-MAX_LINES:]) or "Nothing to remember yet."


def _lines(message: BaseMessage) -> Iterator[str]:
    text = str(message.text).strip()
    if isinstance(message, (HumanMessage, SystemMessage)) and _is_transcript(text):
        yield from (line for raw in text.splitlines() for line in _transcript_line(raw))
    elif isinstance(message, HumanMessage):
        yield from (f"Guest: {line}" for line in _split(text))
    elif isinstance(message, ToolMessage):
        yield from (f"Result: {line}" for line in _split(text) if _WORTH_KEEPING.search(line))
    elif isinstance(message, AIMessage):
        yield from (f"Assistant: {line}" for line in _split(text) if _WORTH_KEEPING.search(line))
        for call in message.tool_calls:
            yield _search(call["name"], call["args"])


def _search(name: str, args: object) -> str:
    return f"Search: {name} {json.dumps(args, sort_keys=True)}"


def _is_summary_line(line: str) -> bool:
    return line.partition(": ")[0] in SUMMARY_ROLES


def _is_transcript(text: str) -> bool:
    """A message that carries other messages (or a previous summary) as lines of text."""
    return any(_ROLE_LINE.match(line) or _is_summary_line(line) for line in text.splitlines())


def _transcript_line(raw: str) -> list[str]:
    """One line of a transcript or of a previous summary, in this summary's format."""
    line = raw.strip()
    match = _ROLE_LINE.match(line)
    if match is None and _is_summary_line(line):
        return [line]
    if match is None:
        return [f"Note: {line}"] if line and _WORTH_KEEPING.search(line) else []
    role, text = _ROLES[match["role"].lower()], match["text"].strip()
    called = _CALLED.search(text)
    searches = [_search(name, args) for name, args in _calls(called["calls"])] if called else []
    text = text[: called.start()].strip() if called else text
    kept = [f"{role}: {text}"] if text and (role == "Guest" or _WORTH_KEEPING.search(text)) else []
    return kept + searches


def _calls(text: str) -> list[tuple[str, object]]:
    """Calls written as "capture_choices({...}), end_chat({})", as (name, arguments) pairs."""
    decoder, found, position = json.JSONDecoder(), [], 0
    while (name := _CALL_NAME.search(text, position)) is not None:
        try:
            args, position = decoder.raw_decode(text, name.end())
        except json.JSONDecodeError:
            break
        found.append((name.group(1), args))
    return found


def _split(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]
