"""The summary's own token budget (`max_summary_tokens`): condensed, then cut, never unbounded.

M6 asks for one rolling summary; M4 bounds the history. Neither bounds the summary itself: a
summariser that keeps everything makes every prompt grow with the conversation. With a budget,
a summary over it goes back to the summary model to be condensed (purpose "condense"), up to
three rounds; if that does not bring it under, its oldest lines are cut, with a warning. The
dropped-fact check covers the condensing too (M8 wording: it never fails a turn).
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from test_compaction import engine_with, talk

from picoflow._housekeeping.condense import summary_tokens
from picoflow.memory import CONDENSE_PROMPT, Memory
from picoflow.testing import ScriptedChatModel

BUDGET = 40
WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike".split()
LONG = "\n".join(
    f"Note {w} {v}: the user likes quiet rooms near the river"
    for w in WORDS[:6]
    for v in WORDS[6:11]
)
CUT_WARNING = (
    "Memory compaction of namespace 'chat': the summary model could not bring the summary "
    f"under its budget of {BUDGET} tokens, so its oldest lines were cut. Raise "
    "max_summary_tokens, or use a summary model that follows the condense instruction."
)


def purpose(request: Any) -> str:
    return str(request.metadata.get("picoflow_purpose"))


def condense_requests(model: ScriptedChatModel) -> list[Any]:
    return [r for r in model.requests if purpose(r) == "condense"]


async def compact_once(model: ScriptedChatModel, **config: Any) -> tuple[dict[str, Any], Any]:
    """Four turns of an 8/4 namespace: the fourth compacts once."""
    engine = engine_with(model, max_summary_tokens=BUDGET, **config)
    results = await talk(engine, 4)
    doc = await engine.get_session(results[0].session_id)
    return doc, results[-1]


async def test_m6_summary_over_its_budget_is_condensed_by_the_summary_model() -> None:
    model = ScriptedChatModel(
        script={
            "Chat": [f"r{n}" for n in range(1, 5)],
            "summary": [LONG],
            "condense": ["Likes quiet rooms near the river."],
        }
    )
    doc, last = await compact_once(model)
    chat = doc["memory"]["chat"]
    assert chat["summary"] == "Likes quiet rooms near the river." and last.warnings == []
    (request,) = condense_requests(model)
    assert request.messages[0].content == CONDENSE_PROMPT.format(budget=BUDGET)
    assert request.messages[1].content == f"Summary to shorten:\n{LONG}"
    assert chat["summary_usage"]["calls"] == 2  # the summary and its condensing (M10)
    assert last.usage["summary"]["calls"] == 2


async def test_m6_condensing_runs_rounds_until_the_summary_fits() -> None:
    halves = [LONG[: len(LONG) // 2], LONG.splitlines()[0]]
    model = ScriptedChatModel(
        script={"Chat": [f"r{n}" for n in range(1, 5)], "summary": [LONG], "condense": halves}
    )
    doc, last = await compact_once(model)
    assert len(condense_requests(model)) == 2
    assert doc["memory"]["chat"]["summary"] == halves[1]
    assert summary_tokens(halves[1]) <= BUDGET and last.warnings == []


@pytest.mark.parametrize(
    "condenser",
    [
        [LONG, LONG, LONG],  # answers, but never shorter
        [RuntimeError("summariser down")],  # fails
        [""],  # answers with nothing
    ],
    ids=["no-shorter", "fails", "empty"],
)
async def test_m6_a_summary_the_model_cannot_condense_is_cut_to_fit(condenser: list[Any]) -> None:
    model = ScriptedChatModel(
        script={"Chat": [f"r{n}" for n in range(1, 5)], "summary": [LONG], "condense": condenser}
    )
    doc, last = await compact_once(model)
    summary = doc["memory"]["chat"]["summary"]
    assert summary_tokens(summary) <= BUDGET
    assert LONG.endswith(summary) and summary.startswith("Note ")  # the newest lines stay
    assert CUT_WARNING in last.warnings
    assert len(condense_requests(model)) == 1  # a useless answer is not asked for again


async def test_m6_a_summary_within_its_budget_is_not_condensed() -> None:
    model = ScriptedChatModel(script={"Chat": [f"r{n}" for n in range(1, 5)], "summary": ["S1"]})
    doc, last = await compact_once(model)
    assert doc["memory"]["chat"]["summary"] == "S1" and condense_requests(model) == []


async def test_m8_values_lost_by_condensing_are_reported_as_dropped() -> None:
    first = LONG + "\nBooking reference BK-4821, arrival 14 March."
    model = ScriptedChatModel(
        script={
            "Chat": [f"r{n}" for n in range(1, 5)],
            "summary": [first],
            "condense": ["Likes quiet rooms near the river; booking BK-4821."],
        }
    )
    doc, last = await compact_once(model)
    dropped = [w for w in last.warnings if "summary dropped" in w]
    assert len(dropped) == 1 and "'14 March'" in dropped[0] and "BK-4821" not in dropped[0]
    assert doc["memory"]["chat"]["dropped_facts"] == 1


async def test_m6_a_growing_summariser_stays_within_budget_over_a_long_conversation() -> None:
    """The stress case of bench/compaction_tokens.py in small: a summariser that keeps every
    line it was given, and a condenser that does no better; the summary, and so the prompt,
    stays bounded over 60 turns."""

    def policy(messages: list[BaseMessage], tools: list[str]) -> str:
        request = model.requests[-1]
        body = str(messages[-1].content)
        if purpose(request) == "summary":
            previous = body.split("Previous summary:\n", 1)[1].split("\n\nMessages", 1)[0]
            kept = [] if previous == "(none yet)" else previous.splitlines()
            return "\n".join(kept + [line for line in body.splitlines() if line[:5] == "User:"])
        if purpose(request) == "condense":
            return body.removeprefix("Summary to shorten:\n")  # no shorter: the worst case
        return f"reply to {messages[-1].content}"

    model = ScriptedChatModel(policy=policy)
    engine = engine_with(model, max_summary_tokens=BUDGET)
    results = await talk(engine, 60)
    doc = await engine.get_session(results[0].session_id)
    assert summary_tokens(doc["memory"]["chat"]["summary"]) <= BUDGET
    replies = [r for r in model.requests if purpose(r) == "reply"]
    sizes = [sum(len(str(m.content)) for m in r.messages) for r in replies]
    assert max(sizes[-10:]) <= 1.5 * max(sizes[10:20])


@pytest.mark.parametrize("bad", [0, 15, 2.5, "40", True])
def test_m3_max_summary_tokens_must_be_an_integer_of_at_least_16(bad: object) -> None:
    with pytest.raises(ValueError) as info:
        Memory().set_summary_config(max_summary_tokens=bad)  # type: ignore[arg-type]
    assert str(info.value) == (
        "max_summary_tokens must be an integer of at least 16 (or None for no budget), "
        f"got {bad!r}."
    )
