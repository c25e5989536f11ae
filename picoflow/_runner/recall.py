"""`conversation_search`: the built-in tool a step gets from `Step.use_recall()` (M9).

Compaction moves old messages to the store's archive; this tool lets the model look them up
again. It searches only the archive of the executing step's own namespace, so a step never
reads another stage's conversation. Results come newest first, ten per page, as plain text the
model can read, each with its position, under a line saying when compaction moved it out of
the context (M16).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any

from langchain_core.messages import messages_from_dict
from pydantic import Field

from picoflow.step import Step
from picoflow.stores.base import ArchiveEntry, Store, abilities_of
from picoflow.tools import ToolSpec, collect_tools, tool

__all__ = ["recall_tools", "PAGE_SIZE"]

PAGE_SIZE = 10
_CLIP = 600  # characters of one message shown to the model


class _Recall:
    """`conversation_search` over one store, for one step: the tool and its handler in one."""

    def __init__(self, store: Store, step: Step) -> None:
        self._store = store
        self._step = step

    @tool
    async def conversation_search(
        self,
        query: Annotated[
            str, Field(description="Words that must all occur in the message, e.g. 'budget'.")
        ],
        page: Annotated[int, Field(ge=1, description="Result page, 1 for the newest.")] = 1,
    ) -> str:
        """Search earlier messages of this conversation that are no longer in your context.

        Use it when the user refers to something said before that you cannot see. Returns
        matching messages, newest first, ten per page.
        """
        step = self._step
        entries = await self._store.search_archive(
            step.flow.get_session_id() or "", step.namespace, query, page=page, page_size=PAGE_SIZE
        )
        text = render_results(query, page, entries)
        trimmed = abilities_of(self._store).oldest_archived
        if len(entries) < PAGE_SIZE and trimmed is not None:
            oldest = await trimmed.oldest_archived(step.flow.get_session_id() or "", step.namespace)
            if oldest is not None and oldest > 1:  # W5: archive_limit removed older messages
                text += (
                    "\nThe oldest messages of this conversation are no longer kept, so older "
                    "matches may be missing."
                )
        return text


_SPEC: ToolSpec = collect_tools(_Recall)[0]


def recall_tools(store: Store) -> Callable[[Step], list[tuple[ToolSpec, Callable[..., Any]]]]:
    """The `TurnContext.extra_tools` function: `conversation_search` for steps that opted in."""

    def for_step(step: Step) -> list[tuple[ToolSpec, Callable[..., Any]]]:
        if not step._recall:
            return []
        return [(_SPEC, _Recall(store, step).conversation_search)]

    return for_step


def render_results(query: str, page: int, entries: list[ArchiveEntry]) -> str:
    """The tool result: one line per archived message, with its position in the conversation."""
    if not entries:
        where = "" if page == 1 else f" on page {page}"
        return f"No earlier messages match {query!r}{where}."
    lines = [f"Earlier messages matching {query!r}, page {page}, newest first:"]
    shown: object = None
    for entry in entries:  # M16: when each run of results left the context, said once
        stamp = entry.get("compacted_at")
        if stamp != shown:
            lines.append(f"[compacted {_minute(stamp)}]")
            shown = stamp
        lines.append(_render(entry))
    if len(entries) == PAGE_SIZE:
        lines.append(f"More may be on page {page + 1}.")
    return "\n".join(lines)


def _render(entry: ArchiveEntry) -> str:
    message = messages_from_dict([entry["message"]])[0]
    text = str(message.text)
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        shown = ", ".join(f"{c['name']}({json.dumps(c.get('args') or {})})" for c in calls)
        text = f"{text} [called {shown}]".strip()
    role = {"human": "user", "ai": "assistant", "tool": "tool result"}.get(
        message.type, message.type
    )
    if len(text) > _CLIP:
        text = text[: _CLIP - 3] + "..."
    return f"#{entry['position']} {role}: {text}"


def _minute(stamp: object) -> str:
    """`2026-12-02T06:40:12.345Z` as `2026-12-02 06:40 UTC`: when it left the context (M16).

    To the minute: the model needs to place a message in time, not a stamp's every digit.
    Entries archived before picoflow recorded the time have none.
    """
    if not isinstance(stamp, str):
        return "at a time not recorded"
    if len(stamp) >= 16 and stamp[10] == "T" and stamp.endswith("Z"):
        return f"{stamp[:10]} {stamp[11:16]} UTC"
    return stamp
