"""Memory policies: how each namespace is kept bounded (M11, M12).

A namespace keeps what its stage needs. Where the history matters, `summarise` folds the oldest
messages into a rolling summary (the default, `enable_summary`); where the stage's data lives in
step state, a window keeps the newest messages and drops the rest, without a model:
`sliding_window` by messages, `turn_window` by whole user turns, `token_window` by a token
budget; `reset` starts the history over once it is long (n8n's "reset instead of summarise").
Every policy archives what it evicts, with its positions (M9), so `conversation_search` still
finds it, and never separates a tool call from its result (M5).

Each builder checks its numbers at once (ByteChef's rules: the maximum above what is kept, an
overlap below it), so a mistake fails where the flow is written.

    memory.set_policy("hotel-explore", summarise(min_messages=16, recent_messages=6))
    memory.set_policy("hotel-compare", turn_window(max_turns=6, keep_turns=3))
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from picoflow._internal.summary_config import DEFAULT_SUMMARY_PROMPT, SummaryConfig

__all__ = [
    "MemoryPolicy",
    "Summarise",
    "SlidingWindow",
    "TurnWindow",
    "TokenWindow",
    "Reset",
    "summarise",
    "sliding_window",
    "turn_window",
    "token_window",
    "reset",
]


def _whole(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be a whole number of at least {least}, got {value!r}.")
    return value


@dataclass(frozen=True, slots=True)
class MemoryPolicy:
    """What keeps one namespace bounded; build one with the functions of this module."""

    @property
    def needs_model(self) -> bool:
        """Whether the policy calls the summary model."""
        return False


@dataclass(frozen=True, slots=True)
class Summarise(MemoryPolicy):
    """The rolling summary (M4-M10); `config` None uses the flow's `set_summary_config`.

    `overlap` messages after the cut are shown to the summariser as context (they stay in the
    history), so a summary written in pieces joins up with what follows it. `rebuild_after`
    (M12) rebuilds every `rebuild_after`-th summary from the archived originals: a summary of
    summaries drifts (n8n warns of it), the originals do not. Originals the archive no longer
    holds are carried by the previous summary, never forgotten (see `_housekeeping.rebuild`).
    """

    config: SummaryConfig | None = None
    overlap: int = 0
    rebuild_after: int | None = None

    @property
    def needs_model(self) -> bool:
        """A summary is written by the summary model."""
        return True


@dataclass(frozen=True, slots=True)
class SlidingWindow(MemoryPolicy):
    """Keep the newest `keep` messages once the history passes `max_messages` (no model)."""

    max_messages: int
    keep: int


@dataclass(frozen=True, slots=True)
class TurnWindow(MemoryPolicy):
    """Keep the newest `keep_turns` user turns once there are more than `max_turns`."""

    max_turns: int
    keep_turns: int


@dataclass(frozen=True, slots=True)
class TokenWindow(MemoryPolicy):
    """Keep the newest whole turns within `keep_tokens` once the history passes `max_tokens`."""

    max_tokens: int
    keep_tokens: int


@dataclass(frozen=True, slots=True)
class Reset(MemoryPolicy):
    """Start over once the history passes `max_messages`: only the latest user turn stays."""

    max_messages: int


def summarise(
    min_messages: int | None = None,
    recent_messages: int | None = None,
    *,
    overlap: int = 0,
    rebuild_after: int | None = None,
    max_tokens: int | None = None,
    max_summary_tokens: int | None = None,
    whole_turns: bool = False,
    prompt: str = DEFAULT_SUMMARY_PROMPT,
    timeout: float = 60.0,
) -> Summarise:
    """The rolling summary; thresholds given here apply to this namespace only.

    Without `min_messages`/`recent_messages` the namespace follows the flow's
    `set_summary_config` (so `set_policy(ns, summarise())` is `enable_summary(ns)`).

    Raises:
        ValueError: a threshold is out of range (see `SummaryConfig`), `overlap` is not
            below `recent_messages` (the overlap is taken from the messages that stay), or
            `rebuild_after` is not a whole number of at least 2 (or None).
    """
    config = None
    if min_messages is not None or recent_messages is not None:
        config = SummaryConfig(
            min_messages=16 if min_messages is None else min_messages,
            recent_messages=8 if recent_messages is None else recent_messages,
            max_tokens=max_tokens,
            max_summary_tokens=max_summary_tokens,
            whole_turns=whole_turns,
            prompt=prompt,
            timeout=timeout,
        )
    _whole(overlap, "overlap", 0)
    keep = config.recent_messages if config is not None else None
    if keep is not None and overlap >= keep:
        raise ValueError(
            f"overlap ({overlap}) must be below recent_messages ({keep}): the overlap is shown "
            "from the messages that stay."
        )
    if rebuild_after is not None:
        _check_rebuild_after(rebuild_after)
    return Summarise(config, overlap, rebuild_after)


def _check_rebuild_after(value: Any) -> None:
    """M12: 1 would rebuild every summary, re-reading up to 400 originals at each compaction."""
    try:
        _whole(value, "rebuild_after", 2)
    except ValueError as exc:
        raise ValueError(
            f"{exc} It counts summaries: every rebuild_after-th one is rebuilt from the archived "
            "originals (2 rebuilds every other one); None turns rebuilding off."
        ) from None


def sliding_window(max_messages: int, keep: int | None = None) -> SlidingWindow:
    """Once the history (system slot not counted) passes `max_messages`, keep the newest `keep`.

    `keep` defaults to half of `max_messages`: the gap is what stops eviction every turn.

    Raises:
        ValueError: `max_messages` below 2, or `keep` not from 1 to `max_messages - 1`.
    """
    _whole(max_messages, "max_messages", 2)
    keep = max(1, max_messages // 2) if keep is None else keep
    _whole(keep, "keep", 1)
    if keep >= max_messages:
        raise ValueError(f"keep ({keep}) must be below max_messages ({max_messages}).")
    return SlidingWindow(max_messages, keep)


def turn_window(max_turns: int, keep_turns: int | None = None) -> TurnWindow:
    """Once the history holds more than `max_turns` user turns, keep the newest `keep_turns`.

    A turn is a user message and everything after it up to the next one, so the history that
    stays always opens with the user's message.

    Raises:
        ValueError: `max_turns` below 2, or `keep_turns` not from 1 to `max_turns - 1`.
    """
    _whole(max_turns, "max_turns", 2)
    keep_turns = max(1, max_turns // 2) if keep_turns is None else keep_turns
    _whole(keep_turns, "keep_turns", 1)
    if keep_turns >= max_turns:
        raise ValueError(f"keep_turns ({keep_turns}) must be below max_turns ({max_turns}).")
    return TurnWindow(max_turns, keep_turns)


def token_window(max_tokens: int, keep_tokens: int | None = None) -> TokenWindow:
    """Once the history passes `max_tokens`, keep the newest whole turns within `keep_tokens`.

    Tokens are counted with LangChain's `count_tokens_approximately`. The newest turn always
    stays, even when it alone is over `keep_tokens`.

    Raises:
        ValueError: `max_tokens` below 16, or `keep_tokens` not from 1 to `max_tokens - 1`.
    """
    _whole(max_tokens, "max_tokens", 16)
    keep_tokens = max_tokens * 3 // 4 if keep_tokens is None else keep_tokens
    _whole(keep_tokens, "keep_tokens", 1)
    if keep_tokens >= max_tokens:
        raise ValueError(f"keep_tokens ({keep_tokens}) must be below max_tokens ({max_tokens}).")
    return TokenWindow(max_tokens, keep_tokens)


def reset(max_messages: int) -> Reset:
    """Once the history passes `max_messages`, archive all of it but the latest user turn.

    n8n's advice: reset rather than summarise where the stage's data is in step state (the
    model needs no memory of how it got there) or the task has changed.

    Raises:
        ValueError: `max_messages` below 2.
    """
    return Reset(_whole(max_messages, "max_messages", 2))
