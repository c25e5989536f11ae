"""`SummaryConfig` and the summariser's prompts: shared by `memory` and `policies` (M3, M6)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from picoflow._internal.seconds import is_seconds

__all__ = ["SummaryConfig", "DEFAULT_SUMMARY_PROMPT", "CONDENSE_PROMPT"]

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


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


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
        if not is_seconds(self.timeout):
            raise ValueError(f"timeout must be a number of seconds > 0, got {self.timeout!r}.")
        if not isinstance(self.whole_turns, bool):
            raise ValueError(f"whole_turns must be True or False, got {self.whole_turns!r}.")
        if not isinstance(self.prompt, str) or not self.prompt.strip():
            raise ValueError(
                f"prompt must be a non-empty string (the summariser's instruction), got "
                f"{self.prompt!r}. Omit it to use DEFAULT_SUMMARY_PROMPT."
            )
