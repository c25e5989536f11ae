"""The requests of a namespace: its newest human message and a few before it (D4).

A decision step gives its provider `request` and `prior_requests`; a model step or a logic step
that wants the same view (what did the user just ask, and before that?) reads it with
`Flow.get_conversation(namespace)` instead of copying messages into state. A human message the
framework adds to move the conversation along (the "Continue." opener of a step entered without
a message, EndStep's closing cue) is marked `additional_kwargs={"origin": "navigation"}` and is
not a request; a message forwarded with `go(...).with_message(...)` has no such mark and is one.
An opener of your own (`on_crossing`) is left out the same way when it carries the mark.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import BaseMessage, HumanMessage

__all__ = ["Conversation", "NAVIGATION_ORIGIN", "conversation_in", "is_navigation"]

NAVIGATION_ORIGIN = "navigation"


@dataclass(frozen=True, slots=True)
class Conversation:
    """What the user asked in one namespace (D4).

    Attributes:
        request: the newest human message's text; "" when the user has said nothing there.
        prior_requests: up to `max_prior_requests` earlier human messages, oldest first.
    """

    request: str
    prior_requests: list[str] = field(default_factory=list)


def is_navigation(message: BaseMessage) -> bool:
    """True for a message the framework added to move along, not one the user sent (D4)."""
    return message.additional_kwargs.get("origin") == NAVIGATION_ORIGIN


def conversation_in(messages: Sequence[BaseMessage], max_prior_requests: int = 4) -> Conversation:
    """The requests among `messages` (a namespace's history, its system slot first).

    Raises:
        ValueError: `max_prior_requests` is not a whole number of 0 or more.
    """
    if isinstance(max_prior_requests, bool) or not isinstance(max_prior_requests, int):
        raise ValueError(
            f"max_prior_requests must be a whole number of 0 or more, got {max_prior_requests!r}."
        )
    if max_prior_requests < 0:
        raise ValueError(f"max_prior_requests must be 0 or more, got {max_prior_requests}.")
    said = [
        str(m.text) for m in messages[1:] if isinstance(m, HumanMessage) and not is_navigation(m)
    ]
    if not said:
        return Conversation("", [])
    earlier = said[max(0, len(said) - 1 - max_prior_requests) : -1]
    return Conversation(said[-1], earlier)
