"""PicoFlow's stored messages as LangChain messages, with every tool call answered.

PicoFlow stores a message as `{type, content, id, tool_calls?, tool_call_id?, status?, name?,
additional_kwargs?, timestamp?}` (the LangChain JS fields; a few exports use LangChain's
`{"lc": 1, "type": "constructor", ...}` form, read too). What changes on the way:

- `additional_kwargs` keeps only `direct: true` on AI messages (picoflow's marker for a direct
  reply, R5); PicoFlow's `direct: false` on human messages and `stopTool` on tool messages
  carry no meaning here. Per-message `timestamp`s are dropped (the id holds the time).
- Content that is not text (a structured-output object, a list of parts) becomes text.
- A tool call without a result (PicoFlow could leave one, e.g. a handler returning nothing
  usable) gets an error result saying so, and a tool result answering no call is dropped:
  providers reject such histories, and picoflow never keeps them (R6, V8).
- Index 0 is the system slot (M2); a history that does not start with a system message gets
  an empty one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from picoflow.import_picoflow._report import ImportReport

__all__ = ["convert_history", "NO_RESULT"]

NO_RESULT = "No result was recorded for this tool call (imported from PicoFlow)."
_KINDS = {
    "human": "human",
    "user": "human",
    "ai": "ai",
    "assistant": "ai",
    "system": "system",
    "tool": "tool",
}
_CLASSES = {
    "HumanMessage": "human",
    "AIMessage": "ai",
    "AIMessageChunk": "ai",
    "SystemMessage": "system",
    "ToolMessage": "tool",
}


class _Reader:
    """Reads one namespace's messages and counts what it had to change, for the report."""

    def __init__(self, renames: dict[str, str]) -> None:
        self.renames = renames
        self.counts: Counter[str] = Counter()

    def message(self, item: Any) -> BaseMessage | None:
        kind, fields = _kind_and_fields(item)
        if kind is None:
            self.counts["unknown"] += 1
            return None
        if "timestamp" in fields:
            self.counts["timestamp"] += 1
        content = self.content(fields.get("content"))
        message_id = self.message_id(fields.get("id"))
        extra = fields.get("additional_kwargs") or {}
        if kind == "human":
            return HumanMessage(content, id=message_id)
        if kind == "system":
            return SystemMessage(content, id=message_id)
        if kind == "tool":
            status = "error" if fields.get("status") == "error" else "success"
            call_id = str(fields.get("tool_call_id") or "")
            name = fields.get("name") or None
            return ToolMessage(
                content, tool_call_id=call_id, status=status, name=name, id=message_id
            )
        calls = self.tool_calls(fields.get("tool_calls") or extra.get("tool_calls") or [])
        marker = {"direct": True} if extra.get("direct") is True else {}
        return AIMessage(content, id=message_id, tool_calls=calls, additional_kwargs=marker)

    def content(self, value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            self.counts["parts"] += 1
            return "".join(_part_text(part) for part in value)
        self.counts["structured"] += 1
        return json.dumps(value, ensure_ascii=False)

    def message_id(self, value: Any) -> str | None:
        """The id, with a renamed step's prefix renamed too (T5: it attributes the message)."""
        if not isinstance(value, str) or not value:
            return None
        head, sep, rest = value.partition("|")
        return f"{self.renames[head]}{sep}{rest}" if sep and head in self.renames else value

    def tool_calls(self, raw: Iterable[Any]) -> list[ToolCall]:
        calls: list[ToolCall] = []
        for call in raw:
            function = call.get("function") if isinstance(call.get("function"), dict) else None
            name = function["name"] if function else call.get("name")
            args = function.get("arguments") if function else call.get("args")
            calls.append(
                ToolCall(name=str(name), args=self.arguments(args), id=call.get("id") or None)
            )
        return calls

    def arguments(self, args: Any) -> dict[str, Any]:
        if isinstance(args, str):
            self.counts["string_args"] += 1
            try:
                args = json.loads(args) if args.strip() else {}
            except json.JSONDecodeError:
                return {"input": args}
        if args is None:
            return {}
        return args if isinstance(args, dict) else {"input": args}


def _kind_and_fields(item: Any) -> tuple[str | None, dict[str, Any]]:
    if not isinstance(item, dict):
        return None, {}
    if item.get("lc") == 1 and item.get("type") == "constructor":
        class_name = (item.get("id") or [""])[-1]
        return _CLASSES.get(class_name), dict(item.get("kwargs") or {})
    return _KINDS.get(str(item.get("type") or item.get("role"))), item


def _part_text(part: Any) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, dict) and isinstance(part.get("text"), str):
        return str(part["text"])
    return ""


def convert_history(
    raw: Any, where: str, renames: dict[str, str], report: ImportReport
) -> list[BaseMessage]:
    """One namespace's history in picoflow's form; `where` names it in the report."""
    reader = _Reader(renames)
    items = raw if isinstance(raw, list) else []
    messages = [m for m in map(reader.message, items) if m is not None]
    if not messages or not isinstance(messages[0], SystemMessage):
        messages.insert(0, SystemMessage(""))
        if items:
            report.changed.append(
                f"{where}: the history did not start with a system message; "
                "an empty system slot was put first"
            )
    messages = _answer_every_call(messages, reader.counts)
    _note(reader.counts, where, report)
    return messages


def _answer_every_call(messages: list[BaseMessage], counts: Counter[str]) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    waiting: list[str] = []  # ids of the latest AI message's calls that have no result yet
    for message in messages:
        if isinstance(message, ToolMessage):
            if not message.tool_call_id and waiting:
                message = message.model_copy(update={"tool_call_id": waiting[0]})
            if message.tool_call_id in waiting:
                waiting.remove(message.tool_call_id)
                out.append(message)
            else:
                counts["orphan"] += 1
            continue
        out += _missing_results(waiting, counts)
        if isinstance(message, AIMessage) and message.tool_calls:
            message = _with_call_ids(message, len(out), counts)
            waiting = [str(call["id"]) for call in message.tool_calls]
        else:
            waiting = []
        out.append(message)
    return out + _missing_results(waiting, counts)


def _missing_results(waiting: list[str], counts: Counter[str]) -> list[BaseMessage]:
    counts["unanswered"] += len(waiting)
    return [ToolMessage(NO_RESULT, tool_call_id=call_id, status="error") for call_id in waiting]


def _with_call_ids(message: AIMessage, position: int, counts: Counter[str]) -> AIMessage:
    if all(call.get("id") for call in message.tool_calls):
        return message
    calls = []
    for index, call in enumerate(message.tool_calls):
        if not call.get("id"):
            counts["call_id"] += 1
            call = {**call, "id": f"imported_{position}_{index}"}
        calls.append(call)
    return message.model_copy(update={"tool_calls": calls})


_NOTES = {
    "unknown": ("lost", "{n} message(s) of an unknown type were dropped"),
    "orphan": ("lost", "{n} tool result(s) answering no tool call were dropped"),
    "unanswered": (
        "changed",
        "{n} tool call(s) had no result; each got an error result saying so",
    ),
    "structured": ("changed", "{n} structured (object) message content(s) became JSON text"),
    "parts": ("changed", "{n} multi-part message content(s) became their text"),
    "string_args": ("changed", "{n} tool call argument string(s) were parsed as JSON"),
    "call_id": ("changed", "{n} tool call(s) without an id got one"),
    "timestamp": ("changed", "{n} per-message timestamp(s) were dropped (ids keep the time)"),
}


def _note(counts: Counter[str], where: str, report: ImportReport) -> None:
    for key, (kind, template) in _NOTES.items():
        if counts[key]:
            getattr(report, kind).append(f"{where}: " + template.format(n=counts[key]))
