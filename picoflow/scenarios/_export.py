"""From a stored session to a scenario (X5): a conversation that happened becomes a test.

The session document has no list of turns, so the export rebuilds them from the messages of
every namespace and the archive (compaction moves old messages there, M9), merged into one
timeline by the time in each message id (T5). A turn starts with a human message that follows
a reply (an AI message without tool calls), or with the flow's opening when the first thing
stored is a reply or the default opener ("Continue.", what a session opened with an empty
message stores); human messages that follow a tool result are crossings (T3), not the user.
Each turn records the step the session was in after it (the step that wrote the last reply),
the tools called in it, whether the session completed, and on the last turn the final state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from picoflow.step import DEFAULT_OPENER
from picoflow.stores import Store, from_url

__all__ = ["ExportError", "export_session", "export_to_file", "scenario_from_messages"]

_PAGE = 100
_SCALARS = (str, int, float, bool, type(None))
_LONG_NUMBER = re.compile(r"\d{5,}")


class ExportError(ValueError):
    """A session that cannot be exported (unknown id, nothing a user said)."""


async def export_session(store: Store, session_id: str) -> dict[str, Any]:
    """The scenario (as JSON data) of a stored session."""
    doc = await store.load(session_id)
    if doc is None:
        raise ExportError(
            f"No session {session_id!r} in this store; give the id of a stored session and "
            "the store it is in (--store URL)."
        )
    timelines = [
        [*await _archived(store, session_id, name), *record.get("messages", [])]
        for name, record in (doc.get("memory") or {}).items()
    ]
    return scenario_from_messages(doc, _merge(timelines))


async def export_to_file(session_id: str, store_url: str, out: Path | None) -> Path:
    """Export from the store a URL names and write the scenario file; its path."""
    store = from_url(store_url)
    try:
        scenario = await export_session(store, session_id)
    finally:
        await store.aclose()
    path = out or Path(f"{scenario['flowName']}-{session_id[:12]}.scenario.json")
    path.write_text(json.dumps(scenario, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def scenario_from_messages(doc: dict[str, Any], timeline: list[dict[str, Any]]) -> dict[str, Any]:
    """The scenario of a session whose messages, in order, are `timeline`."""
    turns: list[dict[str, Any]] = []
    previous: dict[str, Any] | None = None
    for message in timeline:
        if _starts_turn(message, previous):
            turns.append({"input": _input_of(message, first=previous is None)})
            turns[-1]["_messages"] = []
        if turns:
            turns[-1]["_messages"].append(message)
        previous = message
    if not turns:
        raise ExportError(f"Session {doc.get('id')!r} has no turns to export.")
    exported = [_turn(turn.pop("_messages"), turn) for turn in turns]
    completed = doc.get("run_status") == "completed"
    for turn in exported:
        turn["completed"] = False
    exported[-1]["completed"] = completed
    exported[-1]["expect"]["state"] = _state_checks(doc.get("steps") or {})
    scenario: dict[str, Any] = {
        "flowName": doc.get("flow"),
        "name": f"session {doc.get('id')} exported",
    }
    config = (doc.get("context") or {}).get("config")
    if config:
        scenario["config"] = config
    scenario["turns"] = exported
    return scenario


def _starts_turn(message: dict[str, Any], previous: dict[str, Any] | None) -> bool:
    kind = message.get("type")
    if previous is None:
        return kind in ("human", "ai")
    return kind == "human" and _is_reply(previous)


def _input_of(message: dict[str, Any], *, first: bool) -> str:
    """What the user sent; a session opened with no message stored the step's opener (T3)."""
    if message.get("type") != "human":
        return ""
    text = _content(message)
    return "" if first and text == DEFAULT_OPENER else text


def _is_reply(message: dict[str, Any]) -> bool:
    return message.get("type") == "ai" and not message.get("data", {}).get("tool_calls")


def _turn(messages: list[dict[str, Any]], turn: dict[str, Any]) -> dict[str, Any]:
    tools = [
        str(call.get("name"))
        for message in messages
        if message.get("type") == "ai"
        for call in message.get("data", {}).get("tool_calls") or []
    ]
    replies = [m for m in messages if _is_reply(m)]
    expect: dict[str, Any] = {"tools": tools}
    if replies:
        expect = {"step": _step_of(replies[-1]), **expect}
    return {**turn, "expect": expect}


def _state_checks(steps: dict[str, Any]) -> dict[str, Any]:
    r"""Final state as checks: scalars compared exactly, lists and timestamps only present.

    A string with a run of five or more digits is checked by its shape instead
    (`"HF-290642"` becomes `{"matches": "^HF\-\d{6}$"}`): such codes (confirmation numbers,
    order ids) are often derived from the session id, so a re-run in a new session differs.
    """
    checks: dict[str, Any] = {}
    for step, record in steps.items():
        _flatten(record.get("state") or {}, step, checks, depth=0)
    return checks


def _flatten(state: dict[str, Any], prefix: str, into: dict[str, Any], depth: int) -> None:
    for key, value in state.items():
        if key.startswith("_") or not isinstance(key, str) or "." in key:
            continue
        path = f"{prefix}.{key}"
        if isinstance(value, dict) and value and depth < 2:
            _flatten(value, path, into, depth + 1)
        elif isinstance(value, str) and _LONG_NUMBER.search(value):
            into[path] = {"matches": _shape(value)}
        elif isinstance(value, _SCALARS) and not _is_timestamp(value):
            into[path] = value
        else:
            into[path] = {"present": True}


def _shape(value: str) -> str:
    r"""A pattern that holds for `value` with its digits free: "HF-290642" -> "^HF\-\d{6}$"."""
    parts = re.split(r"(\d+)", value)
    return (
        "^"
        + "".join(f"\\d{{{len(part)}}}" if part.isdigit() else re.escape(part) for part in parts)
        + "$"
    )


def _is_timestamp(value: Any) -> bool:
    return isinstance(value, str) and len(value) >= 19 and value[10:11] == "T" and value[4] == "-"


def _merge(timelines: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One timeline from the namespaces', each kept in its own order.

    The next message is the earliest head; on a tie (ids carry milliseconds) a tool or AI
    message goes before a human one, then the namespace of the message just taken: a crossing
    comes after the tool result that caused it, a user message after the reply before it.
    """
    queues = [[m for m in line if m.get("type") != "system"] for line in timelines]
    merged: list[dict[str, Any]] = []
    last = -1
    while any(queues):
        heads = [i for i, queue in enumerate(queues) if queue]
        best = min(heads, key=lambda i: (_time(queues[i][0]), _rank(queues[i][0]), i != last))
        merged.append(queues[best].pop(0))
        last = best
    return merged


def _time(message: dict[str, Any]) -> str:
    parts = str(message.get("data", {}).get("id") or "").split("|")
    return parts[1] if len(parts) == 3 else ""


def _rank(message: dict[str, Any]) -> int:
    return 1 if message.get("type") == "human" else 0


def _step_of(message: dict[str, Any]) -> str | None:
    parts = str(message.get("data", {}).get("id") or "").split("|")
    return parts[0] if len(parts) == 3 else None


def _content(message: dict[str, Any]) -> str:
    content = message.get("data", {}).get("content", "")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) if isinstance(p, dict) else str(p) for p in content)
    return str(content)


async def _archived(store: Store, session_id: str, namespace: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    page = 1
    while batch := await store.search_archive(
        session_id, namespace, "", page=page, page_size=_PAGE
    ):
        entries.extend(batch)
        page += 1
    return [entry["message"] for entry in sorted(entries, key=lambda e: e["position"])]
