"""Compaction: keep a namespace's history short without losing what it said (M4-M10).

For each namespace with compaction enabled whose history has reached the threshold (M4), the
oldest messages before the cut point (M5) are merged into the namespace's one rolling summary
(M6), checked for dropped facts, written to the store's archive with their original positions
(M9) and removed from the live history. Whatever goes wrong, the history stays as it was and the
session gets a warning (M8).

The work comes in two halves so that it can run inline, as the first part of saving, or in the
background after the reply (see `_housekeeping`): `draft` asks the summariser and changes
nothing; `apply` archives, checks and splices.

Only messages that are already stored are ever evicted (`stored_length`): a message written in
the current turn waits for the next one. So every archive entry names a committed message at a
position no later writer can give to another message, and archiving *before* the session is
saved is safe: if the save then fails, a later compaction writes the same entries again, which
the store keeps once (its archive is idempotent by position).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.runnables import RunnableConfig

from ._facts import MAX_LISTED, dropped_facts
from .errors import StoreError
from .flow import Flow
from .memory import Namespace, SummaryConfig, count_call
from .stores.base import ArchiveEntry, Store

__all__ = [
    "Draft",
    "due_cuts",
    "find_cut_point",
    "stored_length",
    "summary_request",
    "summary_run_config",
    "draft",
    "ask_summary_model",
    "transcript_line",
    "apply",
    "archive_entries",
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
class Draft:
    """A namespace's summary, asked for but not yet applied.

    `problem` says why compaction is skipped (M8); `reply` is the summariser's answer, kept for
    token accounting (M10) even when it was unusable.
    """

    namespace: str
    cut: int
    summary: str | None = None
    reply: AIMessage | None = None
    problem: str | None = None


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
    """The latest user message at or before `cut` (after index 1); else 1 (wait) if a user
    message comes later, else `cut` itself.

    A user message never sits between a tool call and its results, so this keeps M5.
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


def due_cuts(flow: Flow, stored: Mapping[str, Any]) -> dict[str, int]:
    """Namespaces to compact now, each with its cut (M4, M5).

    `stored` is the loaded document's `memory`: only stored messages may be evicted.
    """
    memory = flow.get_memory()
    config = memory.summary_config
    spaces = memory.namespaces()
    due: dict[str, int] = {}
    for namespace in memory.enabled_namespaces:
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


def summary_request(prompt: str, previous: str | None, evicted: list[BaseMessage]) -> list[Any]:
    """The summariser's input (M6): its instruction, then the old summary and the messages.

    The messages go in as a transcript inside one user message, not as chat turns: a request
    that ends with real turns invites the model to answer them instead of summarising, and
    some providers refuse tool calls in a request that binds no tools.
    """
    body = (
        "Previous summary:\n"
        + (previous or "(none yet)")
        + "\n\nMessages to merge into it, oldest first:\n"
        + "\n".join(transcript_line(message) for message in evicted)
    )
    return [SystemMessage(prompt), HumanMessage(body)]


def transcript_line(message: BaseMessage) -> str:
    """One message as a line of the transcript a housekeeping call reads."""
    text = str(message.text)
    if isinstance(message, ToolMessage):
        return f"Tool result ({message.name or 'tool'}): {text}"
    if isinstance(message, AIMessage):
        calls = [f"{c['name']}({_json_args(c.get('args'))})" for c in message.tool_calls]
        said = f"Assistant: {text}" if text else "Assistant:"
        return said + (" [called " + ", ".join(calls) + "]" if calls else "")
    role = {"human": "User", "system": "System"}.get(message.type, message.type)
    return f"{role}: {text}"


def _json_args(args: Any) -> str:
    return json.dumps(args or {}, ensure_ascii=False, default=str)


def summary_run_config(
    flow: Flow, namespace: str, step: str | None = None, purpose: str = "summary"
) -> RunnableConfig:
    """Run metadata and tags of a summary call (M10), like `_turn.model_config` for replies.

    A step distillation is a summary call too, of purpose `distil`, attributed to the step
    left (`step`) rather than the current one. The `nostream` tag keeps the call out of
    LangGraph-style message streams; picoflow's own stream never sees it, because the
    summariser is called with `ainvoke`.
    """
    step = step or flow._current
    metadata = {
        "picoflow_session_id": flow.get_session_id(),
        "picoflow_flow": flow.name,
        "picoflow_step": step,
        "picoflow_namespace": namespace,
        "picoflow_purpose": purpose,
    }
    tags = ["picoflow", "picoflow:summary"]
    tags += [f"picoflow:{purpose}"] if purpose != "summary" else []
    tags += [f"picoflow:step:{step}", f"picoflow:namespace:{namespace}", "nostream"]
    subject = namespace if purpose == "summary" else step
    return RunnableConfig(metadata=metadata, tags=tags, run_name=f"{flow.name}.{purpose}.{subject}")


async def draft(flow: Flow, namespace: str, cut: int, model: BaseChatModel) -> Draft:
    """Ask the summariser for the namespace's new summary; change nothing (M6, M8)."""
    config = flow.get_memory().summary_config
    record = flow.get_memory().space(namespace)
    request = summary_request(config.prompt, record.summary, record.messages[1:cut])
    result = Draft(namespace, cut)
    run = summary_run_config(flow, namespace)
    result.reply, result.problem = await ask_summary_model(
        model, request, run, config.timeout, _extra(flow, namespace)
    )
    if result.reply is None:
        return result
    text = str(result.reply.text).strip()
    result.problem = _unusable(text)
    result.summary = None if result.problem else text
    return result


async def ask_summary_model(
    model: BaseChatModel,
    request: list[Any],
    run: RunnableConfig,
    timeout: float,
    extra: dict[str, Any],
) -> tuple[AIMessage | None, str | None]:
    """The reply of a housekeeping call (a summary or a distillation), or why there is none.

    This is the one place where the summary model may fail without failing the turn (M8):
    its callers leave the session as it was and turn the reason into a warning.
    """
    try:
        async with asyncio.timeout(timeout):
            reply = await model.ainvoke(request, config=run)
    except TimeoutError:
        return None, f"the summary model did not answer within {timeout:g} s"
    except Exception as exc:  # M8: a failing summariser never fails the turn
        # The M8 warning names the error; the traceback is for whoever debugs the provider.
        logger.info("summary model failed", exc_info=True, extra=extra)
        return None, f"the summary model raised {type(exc).__name__}: {exc}"
    return (reply if isinstance(reply, AIMessage) else AIMessage(str(reply.text))), None


def _unusable(text: str) -> str | None:
    if not text:
        return "the summary model returned an empty summary"
    if text.lower().startswith(_REFUSALS):
        return f"the summary model answered instead of summarising ({clip(text)!r})"
    return None


def clip(text: str) -> str:
    """At most 80 characters of a model's reply, for a warning that quotes it."""
    return text if len(text) <= 80 else text[:77] + "..."


async def evict(store: Store, session_id: str, namespace: str, record: Namespace, cut: int) -> None:
    """Archive `messages[1:cut]` with their positions (M9), then remove them from the history.

    Raises:
        StoreError: the archive could not be written; the history is unchanged.
    """
    await store.archive(session_id, namespace, archive_entries(record, cut))
    del record.messages[1:cut]
    record.archived += cut - 1


async def apply(flow: Flow, result: Draft, store: Store) -> dict[str, Any]:
    """Archive, check and splice one drafted namespace; return what happened, for events.

    A skipped draft, or an archive that cannot be written, leaves the history untouched and
    records the M8 warning on the flow (so on the session and in the turn's result).
    """
    namespace = result.namespace
    record = flow.get_memory().space(namespace)
    if result.reply is not None:
        count_call(record.summary_usage, result.reply)  # M10, by namespace
    if result.summary is None:
        return _skip(flow, namespace, result.problem or "no summary")
    evicted = record.messages[1 : result.cut]
    try:
        await evict(store, flow.get_session_id() or "", namespace, record, result.cut)
    except StoreError as exc:
        return _skip(flow, namespace, f"the archive could not be written ({exc})")
    _check_facts(flow, namespace, evicted, result.summary)
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


def archive_entries(record: Namespace, cut: int) -> list[ArchiveEntry]:
    """`messages[1:cut]` with their original positions in the namespace (M9)."""
    return [
        {"position": record.archived + index, "message": message_to_dict(message)}
        for index, message in enumerate(record.messages[1:cut], start=1)
    ]


def _skip(flow: Flow, namespace: str, reason: str) -> dict[str, Any]:
    flow.add_warning(
        f"Memory compaction skipped: {reason} (namespace '{namespace}'). The history was kept "
        "in full; compaction is tried again at the end of the next turn."
    )
    return {"namespace": namespace, "outcome": "skipped", "reason": reason}


def _check_facts(flow: Flow, namespace: str, evicted: list[BaseMessage], summary: str) -> None:
    """Warn about values the summary lost that no step's state holds either."""
    states = [
        {k: v for k, v in state.items() if k != "_transient"} for state in flow._states.values()
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
