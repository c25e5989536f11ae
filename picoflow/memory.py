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
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, SystemMessage

from picoflow._internal.live_history import LiveHistory
from picoflow._internal.summary_config import CONDENSE_PROMPT, DEFAULT_SUMMARY_PROMPT, SummaryConfig
from picoflow.models import ModelLike, ModelSpec, parse_model

if TYPE_CHECKING:
    from picoflow.policies import MemoryPolicy

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
    # M16: the positions the summary covers, `{"from_seq", "to_seq", "count"}`, once it has one.
    summary_range: dict[str, int] | None = None
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
        self._enabled: list[str] = []  # namespaces whose policy is a summary
        self._policies: dict[str, MemoryPolicy] = {}  # every namespace with a policy (M11)

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
        """Compact this namespace at the end of each turn once it is long enough (M4).

        The same as `set_policy(namespace, summarise())`: the flow's summary config applies.
        """
        from picoflow.policies import Summarise

        return self.set_policy(namespace, Summarise())

    def set_policy(self, namespace: str, policy: MemoryPolicy) -> Memory:
        """Keep `namespace` bounded by `policy` (M11), one of picoflow's policy builders.

        `summarise(...)`, `sliding_window(...)`, `turn_window(...)`, `token_window(...)` or
        `reset(...)`. A later call for the same namespace replaces its policy.

        Raises:
            ValueError: the namespace is not a valid name (M1).
            TypeError: `policy` is not one of the policy builders' results.
        """
        from picoflow.policies import MemoryPolicy, Summarise

        validate_namespace(namespace)
        if not isinstance(policy, MemoryPolicy):
            raise TypeError(
                f"set_policy() takes a memory policy, got {type(policy).__name__}: use "
                "summarise(), sliding_window(n), turn_window(n), token_window(n) or reset(n) "
                "from picoflow."
            )
        self._policies[namespace] = policy
        if isinstance(policy, Summarise):
            if namespace not in self._enabled:
                self._enabled.append(namespace)
        elif namespace in self._enabled:
            self._enabled.remove(namespace)
        return self

    def policy(self, namespace: str) -> MemoryPolicy | None:
        """The namespace's policy, or None (it grows until a step erases it)."""
        return self._policies.get(namespace)

    @property
    def policies(self) -> dict[str, MemoryPolicy]:
        """Every namespace with a policy, in the order the policies were set."""
        return dict(self._policies)

    @property
    def has_windows(self) -> bool:
        """Whether any namespace has a policy that needs no model (a window or a reset)."""
        return any(not policy.needs_model for policy in self._policies.values())

    def summary_config_for(self, namespace: str) -> SummaryConfig:
        """The thresholds of one summarised namespace: its own, else the flow's."""
        policy = self._policies.get(namespace)
        config = getattr(policy, "config", None)
        return config if isinstance(config, SummaryConfig) else self._config

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
        record.summary_range = None  # M16: no summary, so no range it covers


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
