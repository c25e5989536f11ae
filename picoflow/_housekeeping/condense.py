"""The summary's own budget: a summary over `max_summary_tokens` is condensed, then cut to fit.

A rolling summary is bounded only if the summariser is terse: one that keeps everything it was
given grows with the conversation, and so does every prompt that carries it. So a new summary
over its budget goes back to the summary model with `CONDENSE_PROMPT` (condensing a summary is
itself summarising, as in Spring AI's recursive session summaries), up to `ROUNDS` times, each
round starting from the last answer. If the model still cannot bring it under the budget (it
failed, refused, or did not shorten it), the summary is cut to fit, oldest lines first, so the
prompt stays bounded whatever the summariser does. Nothing here fails a turn (M8): the
values lost along the way are found by the dropped-fact check (`facts`), which `apply_summary`
runs on the text before condensing too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.messages.utils import count_tokens_approximately

from picoflow._housekeeping.summariser import SummaryModel, ask_summary_model, summary_run_config
from picoflow.flow import Flow
from picoflow.memory import CONDENSE_PROMPT

__all__ = ["Condensed", "condense", "summary_tokens", "ROUNDS"]

ROUNDS = 3


@dataclass(slots=True)
class Condensed:
    """A summary brought within its budget, with what it took to get there."""

    text: str
    original: str  # the summary as the summariser first wrote it, for the dropped-fact check
    replies: list[AIMessage] = field(default_factory=list)  # condense calls, for M10 usage
    cut: bool = False  # the model could not bring it under budget; lines were cut


def summary_tokens(text: str) -> int:
    """The summary's size as the reply prompts will count it (the memory block's message)."""
    return count_tokens_approximately([HumanMessage(text)])


async def condense(
    flow: Flow, namespace: str, text: str, model: SummaryModel, budget: int
) -> Condensed:
    """Bring `text` within `budget` tokens: ask the model, then cut if it must."""
    result = Condensed(text=text, original=text)
    config = flow.get_memory().summary_config_for(namespace)
    extra = {"session_id": flow.get_session_id(), "namespace": namespace}
    for _ in range(ROUNDS):
        if summary_tokens(result.text) <= budget:
            return result
        request = [
            SystemMessage(CONDENSE_PROMPT.format(budget=budget)),
            HumanMessage(f"Summary to shorten:\n{result.text}"),
        ]
        run = summary_run_config(flow, namespace, purpose="condense")
        reply, problem = await ask_summary_model(model, request, run, config.timeout, extra)
        if reply is None or problem is not None:
            break
        result.replies.append(reply)
        shorter = str(reply.text).strip()
        if not shorter or summary_tokens(shorter) >= summary_tokens(result.text):
            break  # an empty or no-shorter answer will not improve by asking again
        result.text = shorter
    if summary_tokens(result.text) > budget:
        result.text, result.cut = _cut_to_fit(result.text, budget), True
    return result


def _cut_to_fit(text: str, budget: int) -> str:
    """Drop the oldest lines (a rolling summary appends), then characters, until it fits."""
    lines = text.splitlines()
    while len(lines) > 1 and summary_tokens("\n".join(lines)) > budget:
        lines.pop(0)
    kept = "\n".join(lines)
    while summary_tokens(kept) > budget:
        kept = kept[len(kept) // 8 + 1 :]
    return kept
