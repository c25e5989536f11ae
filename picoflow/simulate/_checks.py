"""What a simulated request must satisfy: provider invariants (M5) and coverage (seed 001).

Kept apart from the replay so that each check is one small function a reader can verify.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["Finding", "request_problems"]

# Finding kinds; docs/compaction-simulator.md explains each one.
ORPHAN_RESULT = "orphan_result"
UNANSWERED_CALL = "unanswered_call"
OPENS_WITH_ASSISTANT = "opens_with_assistant"
OVER_WINDOW = "over_window"
THRESHOLD_ABOVE_WINDOW = "threshold_above_window"
NEVER_TRIGGERED = "never_triggered"
NOTHING_TO_EVICT = "nothing_to_evict"
CHURN = "churn"


@dataclass(frozen=True)
class Finding:
    """Something the replay of one setting found wrong or worth knowing.

    Attributes:
        kind: What was found: `orphan_result`, `unanswered_call`, `opens_with_assistant`
            (invariant violations), `over_window`, `threshold_above_window` (coverage
            gaps), `never_triggered`, `nothing_to_evict` (settings that do nothing),
            `churn` (a setting that compacts at nearly every turn end).
        namespace: The namespace concerned; empty for a finding about the setting itself.
        message: A sentence a person can act on.
        position: The original position of the message at fault, if there is one.
        requests: How many simulated requests show the problem (0 for a static finding).
    """

    kind: str
    namespace: str
    message: str
    position: int | None = None
    requests: int = 0


def request_problems(
    live: Sequence[tuple[int, BaseMessage]],
) -> list[tuple[str, int, str]]:
    """`(kind, position, detail)` of every M5 or first-message problem of a request's history.

    `live` is what follows the system prompt and the memory block, with original positions.
    Each AI message with tool calls must be followed at once by one result per call (any
    order), and every tool result must belong to such a block: OpenAI, Anthropic and Gemini
    all refuse a request that breaks this. The first message must not be an assistant message:
    Anthropic ("first message must use the user role") and others refuse that.
    """
    problems: list[tuple[str, int, str]] = []
    if live and isinstance(live[0][1], AIMessage):
        problems.append((OPENS_WITH_ASSISTANT, live[0][0], ""))
    index = 0
    while index < len(live):
        position, message = live[index]
        calls = message.tool_calls if isinstance(message, AIMessage) else []
        if not calls:
            if isinstance(message, ToolMessage):  # outside any call's block: nobody asked
                problems.append((ORPHAN_RESULT, position, message.tool_call_id))
            index += 1
            continue
        wanted = {str(call.get("id")) for call in calls}
        end = _block_end(live, index + 1)
        answered = set()
        for result_position, result in live[index + 1 : end]:
            call_id = result.tool_call_id  # type: ignore[attr-defined]
            if call_id not in wanted:
                problems.append((ORPHAN_RESULT, result_position, call_id))
            answered.add(call_id)
        for call_id in sorted(wanted - answered):
            problems.append((UNANSWERED_CALL, position, call_id))
        index = end
    return problems


def _block_end(live: Sequence[tuple[int, BaseMessage]], start: int) -> int:
    """The index after the consecutive tool results that begin at `start`."""
    end = start
    while end < len(live) and isinstance(live[end][1], ToolMessage):
        end += 1
    return end
