"""Compaction on demand (M13): what `FlowEngine.compact` does to a loaded session.

A turn compacts a namespace only once it passes its policy's maximum (M4); a caller that asks
(before a long task, or from a scheduler, M14) compacts it now to what the policy keeps. The
answer has the shapes of the hosted memory API the seeds describe.
"""

from __future__ import annotations

from typing import Any

from picoflow._housekeeping.compaction import apply_summary, draft_summary
from picoflow._housekeeping.history import evict, find_cut_point, stored_length
from picoflow._housekeeping.summariser import SummaryModel
from picoflow._housekeeping.windows import window_cut
from picoflow.flow import Flow
from picoflow.memory import Namespace, count_call
from picoflow.policies import Summarise
from picoflow.stores.base import JSONDict, Store

__all__ = ["NOTHING_TO_COMPACT", "compact_now", "compactable"]

NOTHING_TO_COMPACT: dict[str, Any] = {
    "ok": True,
    "compacted": False,
    "message": "Nothing to compact",
}


def compactable(flow: Flow, namespace: str | None) -> list[str]:
    """The namespaces to compact: the one named (it must have a policy), or all with one.

    Raises:
        ValueError: the named namespace has no policy, so nothing says what to keep.
    """
    policies = flow.get_memory().policies
    if namespace is None:
        return list(policies)
    if namespace not in policies:
        known = ", ".join(policies) or "none"
        raise ValueError(
            f"Namespace '{namespace}' of flow {flow.name} has no memory policy, so there is "
            f"nothing that says what to keep (namespaces with one: {known}). Give it one with "
            "get_memory().set_policy(...) or enable_summary(...)."
        )
    return [namespace]


async def compact_now(
    flow: Flow,
    stored: JSONDict,
    namespaces: list[str],
    store: Store,
    model: SummaryModel | None,
    usage: dict[str, dict[str, int]],
) -> dict[str, Any]:
    """Compact each namespace to what its policy keeps; the M13 answer (nothing saved here).

    `stored` is the loaded document's `memory`. A summary the model could not write leaves its
    namespace as it was, with the M8 warning on the flow, and counts as nothing compacted.
    """
    memory = flow.get_memory()
    count, last, summary_id = 0, 0, None
    for namespace in namespaces:
        record = memory.namespaces().get(namespace)
        if record is None:
            continue
        policy = memory.policies[namespace]
        entry = stored.get(namespace) or {}
        limit = stored_length(record.messages, entry.get("messages") or [])
        if isinstance(policy, Summarise):
            cut = await _summarise_now(
                flow, namespace, record, limit, model=model, store=store, usage=usage
            )
            if cut > 1:
                summary_id = _summary_id(flow, namespace, record)
        else:
            cut = window_cut(policy, record.messages, limit, now=True)
            if cut > 1:
                await evict(store, flow.get_session_id() or "", namespace, record, cut)
        if cut > 1:
            count += cut - 1
            last = max(last, record.archived)
    if not count:
        return dict(NOTHING_TO_COMPACT)
    return {
        "compacted": True,
        "summary_message_id": summary_id,
        "compacted_count": count,
        "to_sequence": last,
    }


async def _summarise_now(
    flow: Flow,
    namespace: str,
    record: Namespace,
    limit: int,
    *,
    model: SummaryModel | None,
    store: Store,
    usage: dict[str, dict[str, int]],
) -> int:
    """Summarise the namespace's older messages now; where it cut, or 0 if nothing changed.

    Without a model there is nothing to write the summary with, so nothing is compacted; the
    summary calls count towards the session's usage even when the summary is not applied (M10).
    """
    config = flow.get_memory().summary_config_for(namespace)
    cut = find_cut_point(
        record.messages, config.recent_messages, limit=limit, turns=config.whole_turns
    )
    if cut <= 1 or model is None:
        return 0
    draft = await draft_summary(flow, namespace, cut, model, store)
    for reply in draft.replies:
        count_call(usage["summary"], reply)  # M10
    applied = await apply_summary(flow, draft, store)
    return cut if applied["outcome"] == "compacted" else 0


def _summary_id(flow: Flow, namespace: str, record: Namespace) -> str:
    """The id the hosted memory API gives the summary just written (M13)."""
    return f"{flow.get_session_id()}:{namespace}:summary:{record.summary_generation}"
