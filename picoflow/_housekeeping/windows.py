"""Window policies: evict the oldest messages of a namespace without a model (M11).

`sliding_window`, `turn_window`, `token_window` and `reset` decide a cut from the history alone;
the cut then follows the rules every eviction follows (`history`): never between a tool call
and its results (M5), only messages already stored, archived with their positions first (M9).
Windows run inline at every save, in background mode too: they cost no model call.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.messages.utils import count_tokens_approximately

from picoflow._housekeeping.history import _tool_safe, evict, stored_length
from picoflow.errors import StoreError
from picoflow.flow import Flow
from picoflow.policies import MemoryPolicy, Reset, SlidingWindow, TokenWindow, TurnWindow
from picoflow.stores.base import Store

__all__ = ["window_cut", "apply_windows"]

logger = logging.getLogger(__name__)


def window_cut(
    policy: MemoryPolicy, messages: list[BaseMessage], limit: int, *, now: bool = False
) -> int:
    """Where `policy` cuts `messages` (index 0 the system slot); 1 or less evicts nothing.

    `limit` is how many leading messages are stored: nothing later may go. `now` (an
    on-demand compaction, M13) cuts to what the policy keeps without waiting for its maximum.
    """
    body = len(messages) - 1
    if isinstance(policy, SlidingWindow):
        if body <= policy.max_messages and not now:
            return 1
        cut = len(messages) - policy.keep
    elif isinstance(policy, TurnWindow):
        starts = _turn_starts(messages)
        if len(starts) <= policy.max_turns and not now:
            return 1
        cut = starts[-policy.keep_turns] if len(starts) >= policy.keep_turns else 1
    elif isinstance(policy, TokenWindow):
        if count_tokens_approximately(messages[1:]) <= policy.max_tokens and not now:
            return 1
        cut = _within_tokens(messages, _turn_starts(messages), policy.keep_tokens)
    elif isinstance(policy, Reset):
        if body <= policy.max_messages and not now:
            return 1
        starts = _turn_starts(messages)
        cut = starts[-1] if starts else len(messages)
    else:
        return 1
    return _tool_safe(messages, min(cut, limit))


def _turn_starts(messages: list[BaseMessage]) -> list[int]:
    return [i for i, message in enumerate(messages) if i and isinstance(message, HumanMessage)]


def _within_tokens(messages: list[BaseMessage], starts: list[int], budget: int) -> int:
    """The earliest turn start from which the rest fits `budget` (the newest turn always stays)."""
    if not starts:
        return 1
    cut = starts[-1]
    total = count_tokens_approximately(messages[cut:])
    for start, end in zip(reversed(starts[:-1]), reversed(starts[1:]), strict=True):
        total += count_tokens_approximately(messages[start:end])
        if total > budget:
            break
        cut = start
    return cut


async def apply_windows(
    flow: Flow, stored: Mapping[str, Any], store: Store
) -> list[dict[str, Any]]:
    """Evict what each window policy cuts; return one event per namespace that changed.

    An archive that cannot be written leaves that history whole, with a warning (as M8 does
    for summaries): the next save tries again.
    """
    memory = flow.get_memory()
    spaces = memory.namespaces()
    events = []
    for namespace, policy in memory.policies.items():
        record = spaces.get(namespace)
        if record is None or policy.needs_model:
            continue
        entry = stored.get(namespace) or {}
        limit = stored_length(record.messages, entry.get("messages") or [])
        cut = window_cut(policy, record.messages, limit)
        if cut <= 1:
            continue
        try:
            await evict(store, flow.get_session_id() or "", namespace, record, cut)
        except StoreError as exc:
            flow.add_warning(
                f"Memory window of namespace '{namespace}' skipped: the archive could not be "
                f"written ({exc}). The history was kept in full; it is tried again at the end "
                "of the next turn."
            )
            continue
        logger.info(
            "window evicted %d messages of %s",
            cut - 1,
            namespace,
            extra={"session_id": flow.get_session_id(), "namespace": namespace},
        )
        events.append({"namespace": namespace, "outcome": "windowed", "evicted": cut - 1})
    return events
