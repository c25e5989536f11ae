"""Compaction: keep a namespace's history short without losing what it said (M4-M10).

For each namespace with compaction enabled whose history has reached the threshold (M4), the
oldest messages before the cut point (M5) are merged into the namespace's one rolling summary
(M6), checked for dropped facts, written to the store's archive with their original positions
(M9) and removed from the live history. Whatever goes wrong, the history stays as it was and the
session gets a warning (M8).

The work comes in two halves so that it can run inline, as the first part of saving, or in the
background after the reply (see `scheduler`): `draft_summary` asks the summariser
and changes nothing; `apply_summary` archives, checks and splices.

Only messages that are already stored are ever evicted (`stored_length`): a message written in
the current turn waits for the next one. So every archive entry names a committed message at a
position no later writer can give to another message, and archiving *before* the session is
saved is safe: if the save then fails, a later compaction writes the same entries again, which
the store keeps once (its archive is idempotent by position).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from langchain_core.messages.utils import count_tokens_approximately

from picoflow._housekeeping.condense import Condensed, condense, summary_tokens
from picoflow._housekeeping.facts import MAX_LISTED, dropped_facts
from picoflow._housekeeping.history import evict, find_cut_point, stored_length
from picoflow._housekeeping.rebuild import Rebuild, plan_rebuild, rebuilt_range
from picoflow._housekeeping.summariser import (
    SummaryModel,
    ask_summary_model,
    clip,
    summary_run_config,
    transcript_line,
)
from picoflow.errors import StoreError
from picoflow.flow import Flow
from picoflow.memory import Namespace, SummaryConfig, count_call
from picoflow.stores.base import Store

__all__ = [
    "SummaryDraft",
    "due_cuts",
    "is_over_threshold",
    "summary_request",
    "draft_summary",
    "apply_summary",
]

logger = logging.getLogger(__name__)

# M8: output that opens like this is the summariser talking, not a summary.
_REFUSALS = (
    "i cannot",
    "i can't",
    "i can not",
    "i'm sorry",
    "i am sorry",
    "sorry,",
    "i'm unable",
    "i am unable",
    "as an ai",
)


@dataclass(slots=True)
class SummaryDraft:
    """A namespace's summary, asked for but not yet applied.

    `problem` says why compaction is skipped (M8); `reply` is the summariser's answer, kept for
    token accounting (M10) even when it was unusable.
    """

    namespace: str
    cut: int
    summary: str | None = None
    reply: AIMessage | None = None
    problem: str | None = None
    condensed: Condensed | None = None  # set when the summary went over its token budget
    rebuild: Rebuild | None = None  # M12: what the summary was rebuilt from

    @property
    def replies(self) -> list[AIMessage]:
        """Every summary-model answer this draft took (M10): the summary, then condensing."""
        first = [self.reply] if self.reply is not None else []
        return first + (self.condensed.replies if self.condensed is not None else [])


def due_cuts(flow: Flow, stored: Mapping[str, Any]) -> dict[str, int]:
    """Namespaces to compact now, each with its cut (M4, M5).

    `stored` is the loaded document's `memory`: only stored messages may be evicted.
    """
    memory = flow.get_memory()
    spaces = memory.namespaces()
    due: dict[str, int] = {}
    for namespace in memory.enabled_namespaces:
        config = memory.summary_config_for(namespace)  # M11: a namespace's own thresholds
        record = spaces.get(namespace)
        if record is None or not is_over_threshold(
            config, len(record.messages), partial(count_tokens_approximately, record.messages)
        ):
            continue
        entry = stored.get(namespace) or {}
        limit = stored_length(record.messages, entry.get("messages") or [])
        cut = find_cut_point(
            record.messages, config.recent_messages, limit=limit, turns=config.whole_turns
        )
        if cut > 1:
            due[namespace] = cut
    return due


def is_over_threshold(config: SummaryConfig, length: int, tokens: Callable[[], int]) -> bool:
    """M4: the message count (system slot included), or the optional token budget.

    `tokens` is asked only when a token budget decides: counting is the expensive part.
    """
    if length >= config.min_messages:
        return True
    return config.max_tokens is not None and tokens() >= config.max_tokens


def summary_request(
    prompt: str,
    previous: str | None,
    evicted: list[BaseMessage],
    context: list[BaseMessage] | None = None,
    *,
    reread: list[BaseMessage] | None = None,
) -> list[Any]:
    """The summariser's input (M6): its instruction, then the old summary and the messages.

    The messages go in as a transcript inside one user message, not as chat turns: a request
    that ends with real turns invites the model to answer them instead of summarising, and
    some providers refuse tool calls in a request that binds no tools. `context` (a policy's
    `overlap`, M11) are the messages right after the cut: shown so the summary leads into
    them, marked as staying in the conversation. `reread` (a rebuild that keeps the previous
    summary, M12) are originals the previous summary was written from, shown so the summary
    is corrected from them where it drifted.
    """
    body = "Previous summary:\n" + (previous or "(none yet)")
    if reread:
        body += (
            "\n\nOriginal messages the previous summary was written from, oldest first (where "
            "they and the summary disagree, they are right):\n"
            + "\n".join(transcript_line(message) for message in reread)
        )
    body += "\n\nMessages to merge into it, oldest first:\n" + "\n".join(
        transcript_line(message) for message in evicted
    )
    if context:
        body += (
            "\n\nFor context only (these stay in the conversation; do not summarise them):\n"
            + "\n".join(transcript_line(message) for message in context)
        )
    return [SystemMessage(prompt), HumanMessage(body)]


async def draft_summary(
    flow: Flow, namespace: str, cut: int, model: SummaryModel, store: Store | None = None
) -> SummaryDraft:
    """Ask the summariser for the namespace's new summary; change nothing (M6, M8).

    With a policy's `rebuild_after` (M12) due and the `store` at hand, the summary is rebuilt
    from the archived originals (see `rebuild`).
    """
    memory = flow.get_memory()
    config = memory.summary_config_for(namespace)
    record = memory.space(namespace)
    overlap = getattr(memory.policy(namespace), "overlap", 0)
    context = record.messages[cut : cut + overlap] if overlap else []
    result = SummaryDraft(namespace, cut)
    result.rebuild = await _rebuild_due(flow, namespace, store)
    request = _request(config.prompt, record, cut, result.rebuild, context)
    run = summary_run_config(flow, namespace)
    result.reply, result.problem = await ask_summary_model(
        model, request, run, config.timeout, _extra(flow, namespace)
    )
    if result.reply is None:
        return result
    text = str(result.reply.text).strip()
    result.problem = _unusable(text)
    result.summary = None if result.problem else text
    budget = config.max_summary_tokens
    if result.summary is not None and budget is not None and summary_tokens(text) > budget:
        result.condensed = await condense(flow, namespace, text, model, budget)
        result.summary = result.condensed.text
    return result


async def _rebuild_due(flow: Flow, namespace: str, store: Store | None) -> Rebuild | None:
    """M12: what this summary is rebuilt from, if it is every `rebuild_after`-th one."""
    memory = flow.get_memory()
    record = memory.space(namespace)
    every = getattr(memory.policy(namespace), "rebuild_after", None)
    if not every or store is None or not record.summary:
        return None
    if (record.summary_generation + 1) % every:
        return None
    return await plan_rebuild(store, flow.get_session_id() or "", namespace, record)


def _request(
    prompt: str,
    record: Namespace,
    cut: int,
    rebuild: Rebuild | None,
    context: list[BaseMessage],
) -> list[Any]:
    """The summary request: ordinary, or rebuilt from originals with or without the old summary."""
    evicted = record.messages[1:cut]
    if rebuild is None:
        return summary_request(prompt, record.summary, evicted, context)
    if rebuild.carried:  # the archive lost the range's start: the old summary is its record
        return summary_request(prompt, record.summary, evicted, context, reread=rebuild.originals)
    return summary_request(prompt, None, [*rebuild.originals, *evicted], context)


def _unusable(text: str) -> str | None:
    if not text:
        return "the summary model returned an empty summary"
    if text.lower().startswith(_REFUSALS):
        return f"the summary model answered instead of summarising ({clip(text)!r})"
    return None


async def apply_summary(flow: Flow, result: SummaryDraft, store: Store) -> dict[str, Any]:
    """Archive, check and splice one drafted namespace; return what happened, for events.

    A skipped draft, or an archive that cannot be written, leaves the history untouched and
    records the M8 warning on the flow (so on the session and in the turn's result).
    """
    namespace = result.namespace
    record = flow.get_memory().space(namespace)
    for reply in result.replies:
        count_call(record.summary_usage, reply)  # M10, by namespace
    if result.summary is None:
        return _skip(flow, namespace, result.problem or "no summary")
    evicted = record.messages[1 : result.cut]
    first, last = record.archived + 1, record.archived + result.cut - 1
    try:
        await evict(store, flow.get_session_id() or "", namespace, record, result.cut)
    except StoreError as exc:
        return _skip(flow, namespace, f"the archive could not be written ({exc})")
    record.summary_range = _widened(record, first, last, result.rebuild)
    _check_facts(flow, namespace, _checked(evicted, result.condensed), result.summary)
    _warn_if_cut(flow, namespace, result.condensed)
    record.summary = result.summary
    record.summary_generation += 1
    logger.info(
        "compacted %d messages of %s", len(evicted), namespace, extra=_extra(flow, namespace)
    )
    return {
        "namespace": namespace,
        "outcome": "compacted",
        "evicted": len(evicted),
        "summary_generation": record.summary_generation,
    }


def _widened(record: Namespace, first: int, last: int, rebuild: Rebuild | None) -> dict[str, int]:
    """M16: the summary's range after it took positions `first..last` in.

    A namespace whose summary was forgotten (erased, T4) starts a new range: the old one
    described a summary that is gone. An extra key of the old range (`rebuilt_from_seq`) stays.
    """
    if rebuild is not None:
        return rebuilt_range(rebuild, first, last)
    known = record.summary_range if record.summary else None
    if known is None:
        return {"from_seq": first, "to_seq": last, "count": last - first + 1}
    return {**known, "to_seq": last, "count": known["count"] + last - first + 1}


def _checked(evicted: list[BaseMessage], condensed: Condensed | None) -> list[BaseMessage]:
    """What the new summary should still hold: the evicted messages, and more if condensed.

    When the summary was condensed, the summary as first written is added too: condensing may
    drop what it had kept.
    """
    if condensed is None:
        return evicted
    return [*evicted, AIMessage(condensed.original)]


def _warn_if_cut(flow: Flow, namespace: str, condensed: Condensed | None) -> None:
    if condensed is None or not condensed.cut:
        return
    budget = flow.get_memory().summary_config_for(namespace).max_summary_tokens
    flow.add_warning(
        f"Memory compaction of namespace '{namespace}': the summary model could not bring the "
        f"summary under its budget of {budget} tokens, so its oldest lines were cut. Raise "
        "max_summary_tokens, or use a summary model that follows the condense instruction."
    )


def _skip(flow: Flow, namespace: str, reason: str) -> dict[str, Any]:
    flow.add_warning(
        f"Memory compaction skipped: {reason} (namespace '{namespace}'). The history was kept "
        "in full; compaction is tried again at the end of the next turn."
    )
    return {"namespace": namespace, "outcome": "skipped", "reason": reason}


def _check_facts(flow: Flow, namespace: str, evicted: list[BaseMessage], summary: str) -> None:
    """Warn about values the summary lost that no step's state holds either."""
    states = [
        {k: v for k, v in state.items() if k != "_transient"}
        for state in flow._session.states.values()
    ]
    lost = dropped_facts(evicted, summary, states)
    if not lost:
        return
    record = flow.get_memory().space(namespace)
    record.dropped_facts += len(lost)
    shown = ", ".join(repr(value) for value in lost[:MAX_LISTED])
    more = f" and {len(lost) - MAX_LISTED} more" if len(lost) > MAX_LISTED else ""
    flow.add_warning(
        f"Memory compaction of namespace '{namespace}': summary dropped: {shown}{more}. These "
        "values of the evicted messages are neither in the new summary nor in any step's state; "
        "they stay in the archive. Save values the flow relies on with save_state(), or "
        "extend the summary prompt."
    )


def _extra(flow: Flow, namespace: str) -> dict[str, Any]:
    return {"session_id": flow.get_session_id(), "namespace": namespace}
