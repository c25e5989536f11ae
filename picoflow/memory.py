"""Conversation memory: named histories shared by the steps that use them (M1-M3, M7).

Each namespace is a list of LangChain messages whose index 0 is the system slot, rewritten from
the executing step's `get_prompt()` before every model call (M2). A namespace may carry one
rolling summary of the messages compaction evicted; it is injected into the *request* as a second
system message, never into the stored history (M7). Compaction itself lives in
`_housekeeping.compaction`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from ._live_history import LiveHistory
from .models import ModelLike, ModelSpec, parse_model

__all__ = [
    "Memory",
    "Namespace",
    "SummaryConfig",
    "validate_namespace",
    "request_messages",
    "MEMORY_PREFIX",
    "DEFAULT_SUMMARY_PROMPT",
    "CONDENSE_PROMPT",
]

MEMORY_PREFIX = "Conversation memory for this step:\n"
# M6: the summariser's instruction. It is sent as the system message; the previous memory and
# the evicted messages follow in one user message (see `_housekeeping.compaction.summary_request`).
DEFAULT_SUMMARY_PROMPT = (
    "You write the running summary of a conversation between a user and an assistant. You "
    "receive the previous summary (it may be empty) and the oldest messages, which are about to "
    "be removed from the conversation. Write the updated summary: merge the previous summary and "
    "these messages into one self-contained text. Keep every still-relevant decision, fact, "
    "constraint, preference, identifier, number, date and open question, and copy names, "
    "numbers, codes, e-mail addresses and URLs exactly as written. Drop greetings, small talk "
    "and anything the messages show is no longer true. Invent nothing: write only what the "
    "previous summary or the messages state. Reply with the summary text only."
)
CONDENSE_PROMPT = (
    "You shorten the running summary of a conversation between a user and an assistant: it has "
    "grown past its budget of {budget} tokens. Rewrite it in at most {budget} tokens. Keep every "
    "still-relevant decision, fact, constraint, preference, identifier, number, date and open "
    "question, copied exactly as written; where a value was changed, keep only its latest "
    "value. Merge repetitions, drop history that no longer matters, and invent nothing. Reply "
    "with the shortened summary text only."
)
_NAMESPACE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,127}$")
_RESERVED = frozenset({"__proto__", "constructor", "prototype"})


def validate_namespace(namespace: Any) -> str:
    """Return the namespace if it is valid (M1), else raise `ValueError` saying why.

    Namespaces are persisted as keys of the session document and of the archive, so they are
    restricted to names every store (and every JSON consumer) keeps unchanged.
    """
    if namespace in _RESERVED:
        raise ValueError(
            f"Invalid memory namespace {namespace!r}: '__proto__', 'constructor' and "
            "'prototype' are reserved (they break JavaScript readers of the session). "
            "Choose another name."
        )
    if not isinstance(namespace, str) or not _NAMESPACE.match(namespace):
        raise ValueError(
            f"Invalid memory namespace {namespace!r}: a namespace starts with a letter, then "
            "letters, digits, '_' or '-', at most 128 characters (e.g. 'hotel-explore')."
        )
    return namespace


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _seconds(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value > 0


@dataclass(frozen=True)
class SummaryConfig:
    """When compaction runs and what it keeps (M3).

    A namespace is compacted at the end of a turn once its history (system slot included) has
    `min_messages` messages (or, if `max_tokens` is set, that many approximate tokens); the
    newest `recent_messages` stay verbatim. Keep `recent_messages` well below `min_messages` (a
    quarter to a half): the margin is what stops compaction from running on every turn.
    `background=True` returns the turn's reply first and summarises afterwards. A summariser
    that has not answered after `timeout` seconds counts as failed (M8). `prompt` is the
    summariser's instruction (M6), `DEFAULT_SUMMARY_PROMPT` unless you pass your own.
    `whole_turns=True` moves the M5 cut back to the start of a user turn, so the history that
    stays opens with the user's message (Anthropic and Gemini require that); off by default,
    where the cut is exactly M5's. `max_summary_tokens` bounds the summary itself: a summary
    over it is condensed by the summary model (up to three times, with `CONDENSE_PROMPT`) and,
    if the model cannot bring it under, cut to fit, oldest lines first; so the prompt stays
    bounded whatever the summariser does. Values lost on the way are reported by the
    dropped-fact check.
    """

    min_messages: int = 16
    recent_messages: int = 8
    background: bool = False
    max_tokens: int | None = None
    timeout: float = 60.0
    prompt: str = DEFAULT_SUMMARY_PROMPT
    whole_turns: bool = False
    max_summary_tokens: int | None = None

    def __post_init__(self) -> None:
        if not _whole(self.min_messages) or self.min_messages < 8:
            raise ValueError(
                f"min_messages must be an integer of at least 8, got {self.min_messages!r}."
            )
        top = self.min_messages - 2
        if not _whole(self.recent_messages) or not 1 <= self.recent_messages <= top:
            raise ValueError(
                f"recent_messages must be an integer from 1 to min_messages - 2 ({top}), "
                f"got {self.recent_messages!r}."
            )
        if self.max_tokens is not None and (not _whole(self.max_tokens) or self.max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive integer, got {self.max_tokens!r}.")
        if self.max_summary_tokens is not None and (
            not _whole(self.max_summary_tokens) or self.max_summary_tokens < 16
        ):
            raise ValueError(
                "max_summary_tokens must be an integer of at least 16 (or None for no budget), "
                f"got {self.max_summary_tokens!r}."
            )
        if not _seconds(self.timeout):
            raise ValueError(f"timeout must be a number of seconds > 0, got {self.timeout!r}.")
        if not isinstance(self.whole_turns, bool):
            raise ValueError(f"whole_turns must be True or False, got {self.whole_turns!r}.")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(
                f"prompt must be a non-empty string (the summariser's instruction), got "
                f"{self.prompt!r}. Omit it to use DEFAULT_SUMMARY_PROMPT."
            )


@dataclass(slots=True)
class Namespace:
    """One history: messages (index 0 = system slot), its summary, and eviction bookkeeping."""

    messages: list[BaseMessage] = field(default_factory=lambda: LiveHistory([SystemMessage("")]))
    summary: str | None = None
    summary_generation: int = 0
    # Messages that have left the history (evicted to the archive, or erased): the message at
    # index i >= 1 has the original position `archived + i`, which archive entries keep (M9).
    archived: int = 0
    # values summaries lost (see `_housekeeping.facts`), counted over the session
    dropped_facts: int = 0
    # Housekeeping calls made for this namespace (summaries, distillations of its steps), so a
    # session's summary cost can be told apart by namespace (M10): calls and token counts.
    summary_usage: dict[str, int] = field(default_factory=dict)
    # The messages and their stored dicts as of the last load or save: a save re-serialises only
    # what differs from them (see session._dump_messages), so its cost does not grow with history.
    synced: tuple[list[BaseMessage], list[dict[str, Any]]] = field(default=([], []), repr=False)

    def __post_init__(self) -> None:
        if type(self.messages) is not LiveHistory:  # knows what changed since a save
            self.messages = LiveHistory(self.messages)


class Memory:
    """A flow's namespaces and its compaction policy; configure it in `Flow.__init__` (F1)."""

    def __init__(self) -> None:
        self._spaces: dict[str, Namespace] = {}
        self._summary_model: ModelSpec | BaseChatModel | None = None
        self._config = SummaryConfig()
        self._enabled: list[str] = []

    def set_summary_model(self, model: ModelLike) -> Memory:
        """The model that writes summaries; a cheap one is usually right."""
        self._summary_model = parse_model(model, "set_summary_model")
        return self

    def set_summary_config(
        self,
        min_messages: int = 16,
        recent_messages: int = 8,
        *,
        background: bool = False,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        prompt: str = DEFAULT_SUMMARY_PROMPT,
        whole_turns: bool = False,
        max_summary_tokens: int | None = None,
    ) -> Memory:
        """Set the thresholds (see `SummaryConfig`); invalid values raise `ValueError` now.

        Args:
            min_messages: Compact once a history (system slot included) is this long (M4).
            recent_messages: How many of the newest messages stay verbatim (M5).
            background: Return the turn's reply first, then summarise in a background task.
            max_tokens: Also compact once the history has this many approximate tokens.
            timeout: Seconds the summariser may take before compaction is skipped (M8).
            prompt: The summariser's instruction (M6); see `DEFAULT_SUMMARY_PROMPT`.
            whole_turns: Cut only at the start of a user turn (for Anthropic and Gemini).
            max_summary_tokens: The summary's own budget; a longer one is condensed.
        """
        self._config = SummaryConfig(
            min_messages,
            recent_messages,
            background,
            max_tokens,
            timeout,
            prompt,
            whole_turns,
            max_summary_tokens,
        )
        return self

    def enable_summary(self, namespace: str) -> Memory:
        """Compact this namespace at the end of each turn once it is long enough (M4)."""
        validate_namespace(namespace)
        if namespace not in self._enabled:
            self._enabled.append(namespace)
        return self

    @property
    def summary_model(self) -> ModelSpec | BaseChatModel | None:
        """The summariser selection, or None."""
        return self._summary_model

    @property
    def summary_config(self) -> SummaryConfig:
        """The thresholds in force."""
        return self._config

    @property
    def enabled_namespaces(self) -> list[str]:
        """Namespaces with compaction on, in the order they were enabled."""
        return list(self._enabled)

    def space(self, namespace: str) -> Namespace:
        """The namespace record, created (with an empty system slot) on first use."""
        record = self._spaces.get(namespace)
        if record is None:
            record = self._spaces[namespace] = Namespace()
        return record

    def messages(self, namespace: str) -> list[BaseMessage]:
        """The live history list of a namespace (index 0 is the system slot)."""
        return self.space(namespace).messages

    def summary(self, namespace: str) -> str | None:
        """The namespace's rolling summary, or None."""
        record = self._spaces.get(namespace)
        return record.summary if record else None

    def namespaces(self) -> dict[str, Namespace]:
        """Every namespace that has been used, by name."""
        return self._spaces

    def erase(self, namespace: str) -> None:
        """Empty a history in place and forget its summary (T4).

        Erased messages are not archived, but they keep their positions: messages written
        afterwards get new ones, so an archive position always names one message (M9).
        """
        record = self.space(namespace)
        record.archived += len(record.messages) - 1
        del record.messages[1:]
        record.messages[0] = SystemMessage("")
        record.summary = None


def count_call(counters: dict[str, int], reply: BaseMessage) -> None:
    """Add one model call and its reply's token counts to `counters` (M10).

    The one place usage is counted: a turn's `usage["model"]`/`usage["summary"]` and a
    namespace's `summary_usage` all go through it. Missing counters start at 0.
    """
    counters["calls"] = counters.get("calls", 0) + 1
    meta = getattr(reply, "usage_metadata", None) or {}
    for key in ("input_tokens", "output_tokens", "total_tokens"):
        counters[key] = counters.get(key, 0) + int(meta.get(key, 0) or 0)
    for side, detail, key in _DETAIL_COUNTERS:  # only the counters the provider reports
        reported = (meta.get(side) or {}).get(detail)
        if reported is not None:
            counters[key] = counters.get(key, 0) + int(reported)


# LangChain's usage_metadata details -> our counters: reasoning tokens are part of the output
# tokens, cached (cache-read) and cache-creation tokens part of the input tokens.
_DETAIL_COUNTERS = (
    ("output_token_details", "reasoning", "reasoning_tokens"),
    ("input_token_details", "cache_read", "cached_input_tokens"),
    ("input_token_details", "cache_creation", "cache_creation_input_tokens"),
)


def request_messages(record: Namespace, system: SystemMessage) -> list[BaseMessage]:
    r"""What the model receives for a namespace: the stored history is never changed (M7).

    >>> from langchain_core.messages import HumanMessage
    >>> ns = Namespace(messages=[SystemMessage(""), HumanMessage("hi")], summary="Likes tea.")
    >>> [m.content for m in request_messages(ns, SystemMessage("Be kind."))]
    ['Be kind.', 'Conversation memory for this step:\nLikes tea.', 'hi']
    """
    block = memory_block(record.summary)
    if not record.messages:
        return [system, *([block] if block else [])]
    request = record.messages[:]  # one copy of the history, however long it is
    request[0] = system
    if block:
        request.insert(1, block)
    return request


def memory_block(summary: str | None) -> SystemMessage | None:
    """The system message that carries a namespace's summary into its requests (M7)."""
    return SystemMessage(MEMORY_PREFIX + summary) if summary else None
