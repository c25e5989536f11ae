"""Cutting a namespace's history: where a cut may fall (M5), and where evicted messages go (M9).

Compaction and step distillation both remove a leading run of a namespace's messages. They share
the rules here: a cut never separates a tool call from its results, only messages the session
already stored may go (`stored_length`), and what goes is archived with its positions first.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage, message_to_dict

from picoflow._internal.state import now_iso
from picoflow.memory import Namespace
from picoflow.stores.base import ArchiveEntry, Store

__all__ = ["find_cut_point", "stored_length", "evict", "archive_entries"]


def find_cut_point(
    messages: list[BaseMessage],
    recent_messages: int,
    *,
    limit: int | None = None,
    turns: bool = False,
) -> int:
    """Where to cut a history so that `messages[1:cut]` can be evicted (M5).

    Start at `len(messages) - recent_messages` (or `limit`, if that is earlier) and move earlier
    until the cut separates no AI message with tool calls from any of its tool results
    (parallel calls included): that is M5, and the default. With `turns`
    (`SummaryConfig.whole_turns`), then move on to the start of a user turn, so that
    the history that stays opens with the user's message: Anthropic and Gemini refuse a
    conversation whose first message is the assistant's. If no user turn starts in that range
    but one starts later (a turn longer than the window), nothing is evicted yet: a later turn
    end reaches it. If the history holds no later user message at all (a step that only works
    through tools, entered without a message), the tool-safe cut stands, or it would never be
    compacted. A result of 1 or less means there is nothing to evict; index 0, the system
    slot, is never evicted.

    >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    >>> call = AIMessage("", tool_calls=[{"name": "search", "args": {}, "id": "c1"}])
    >>> history = [
    ...     SystemMessage(""),                           # 0  system slot
    ...     HumanMessage("Hotels in Lyon?"),             # 1
    ...     call,                                        # 2  asks for a tool...
    ...     ToolMessage("3 hotels", tool_call_id="c1"),  # 3  ...and gets its result
    ...     AIMessage("Three hotels match."),            # 4
    ...     HumanMessage("The cheapest one?"),           # 5
    ...     AIMessage("Hotel Bellecour."),               # 6
    ... ]
    >>> find_cut_point(history, recent_messages=3)  # 7 - 3 = 4: evict 1..3
    4
    >>> find_cut_point(history, recent_messages=2, limit=3)  # 3 would split 2 from 3: move to 2
    2
    >>> find_cut_point(history, recent_messages=3, turns=True)  # 4 opens with the assistant,
    ... # and a user turn starts later (5): wait
    1
    >>> find_cut_point(history, recent_messages=1, turns=True)  # 6: back to the turn at 5
    5
    >>> find_cut_point(history[:5], recent_messages=1, turns=True)  # no later user turn
    4
    """
    cut = len(messages) - recent_messages
    if limit is not None:
        cut = min(cut, limit)
    cut = _tool_safe(messages, cut)
    return _turn_start(messages, cut) if turns else cut


def _tool_safe(messages: list[BaseMessage], cut: int) -> int:
    """The latest cut at or before `cut` that separates no tool call from its results."""
    calls_at: dict[str, int] = {}
    for index, message in enumerate(messages):
        for call in getattr(message, "tool_calls", None) or []:
            calls_at[str(call.get("id"))] = index
    # A result at j whose call is at i forbids every cut in (i, j]; walk down past them.
    spans = [
        (calls_at[m.tool_call_id], j)
        for j, m in enumerate(messages)
        if isinstance(m, ToolMessage) and m.tool_call_id in calls_at
    ]
    moved = True
    while moved and cut > 1:
        moved = False
        for start, end in spans:
            if start < cut <= end:
                cut, moved = start, True
    return cut


def _turn_start(messages: list[BaseMessage], cut: int) -> int:
    """The latest user message at or before `cut` (after index 1).

    If there is none: 1 (wait) if a user message comes later, else `cut` itself. A user
    message never sits between a tool call and its results, so this keeps M5.
    """
    if cut >= len(messages):
        return cut  # nothing stays after the cut, so nothing opens it
    for index in range(cut, 1, -1):
        if isinstance(messages[index], HumanMessage):
            return index
    later = any(isinstance(m, HumanMessage) for m in messages[cut + 1 :])
    return 1 if later else cut


def stored_length(messages: list[BaseMessage], stored: list[dict[str, Any]]) -> int:
    """How many leading messages (system slot included) are the ones the session stored.

    `stored` is the namespace's `messages` list of the loaded document. Messages are matched by
    id, so an erase or any edit in this turn ends the stored prefix where it happened.
    """
    count = 1
    for message, data in zip(messages[1:], stored[1:], strict=False):
        stored_id = data.get("data", {}).get("id")
        if message.id is None and stored_id is None:
            if message_to_dict(message) != data:
                break
        elif message.id != stored_id:
            break
        count += 1
    return count


async def evict(store: Store, session_id: str, namespace: str, record: Namespace, cut: int) -> None:
    """Archive `messages[1:cut]` with their positions (M9), then remove them from the history.

    Raises:
        StoreError: the archive could not be written; the history is unchanged.
    """
    await store.archive(session_id, namespace, archive_entries(record, cut, now_iso()))
    del record.messages[1:cut]
    record.archived += cut - 1


def archive_entries(record: Namespace, cut: int, compacted_at: str) -> list[ArchiveEntry]:
    """`messages[1:cut]` with their original positions in the namespace (M9).

    Each carries `compacted_at` (M16), the time of the compaction that evicted it: a reader
    of the archive (a person, `conversation_search`) sees when a message left the context.
    """
    return [
        {
            "position": record.archived + index,
            "message": message_to_dict(message),
            "compacted_at": compacted_at,
        }
        for index, message in enumerate(record.messages[1:cut], start=1)
    ]
