"""One way for the four collecting stages to play the model: replay what the customer said,
then answer the last message.

A stage says what it collects (`Stage`: its fields in the groups it asks them, a reader that
finds values in a message, the questions, the tool); `respond` replays the stage's history in
order — each message read against the question it answered, a correction said mid-sentence
keeping the later value, a value the tool refused cleared — and then calls the tool once every
field is known, or asks for what is missing. A message taken back ("hold on, let me check")
records nothing, and nothing is ever filled in that was not said.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import words
from demo.insurance.offline.transcript import Event, events, facts, since_boundary
from demo.reading import corrections
from picoflow.testing import tool_call

NOT_CAUGHT = "Sorry, I didn't catch that. "


@dataclass
class Found:
    """What one message said: values by field, fields named without a value, and values no
    field allows (each with the sentence that says so)."""

    values: dict[str, Any] = field(default_factory=dict)
    named: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Context:
    """What a reader knows besides the text: the fields just asked for, the draft, today."""

    asking: tuple[str, ...]
    draft: dict[str, Any]
    today: date


@dataclass(frozen=True)
class Stage:
    """A collecting stage, as its offline model sees it."""

    tool: str
    end_tool: str
    fact: str  # the prompt's name for the saved section: "QUALIFICATION"
    groups: tuple[tuple[str, ...], ...]
    read: Callable[[str, Context], Found]
    question: Callable[[tuple[str, ...], dict[str, Any]], str]  # fields asked, the draft
    args: Callable[[dict[str, Any]], dict[str, Any]]
    flatten: Callable[[dict[str, Any]], dict[str, Any]]
    say: Callable[[str, Any], str]
    intro: str
    answer: Callable[[str, dict[str, Any]], str | None]  # a question, the prompt's facts
    rejected: Callable[[str], tuple[str, ...]]  # the fields a refusal clears


@dataclass
class Replay:
    """The stage's conversation read so far."""

    draft: dict[str, Any]
    asking: tuple[str, ...] = ()
    last: Found = field(default_factory=Found)
    text: str = ""
    withdrawn: bool = False
    rejection: str | None = None
    read_any: bool = False
    known: dict[str, Any] = field(default_factory=dict)  # the prompt's facts


def missing(stage: Stage, draft: dict[str, Any]) -> tuple[str, ...]:
    """The unknown fields of the first group with any."""
    for group in stage.groups:
        unknown = tuple(name for name in group if name not in draft)
        if unknown:
            return unknown
    return ()


def today_of(prompt_facts: dict[str, Any]) -> date:
    """The prompt's CURRENT_DATE (the real date if a prompt has none)."""
    value = prompt_facts.get("CURRENT_DATE")
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        return date.today()


def respond(stage: Stage, messages: Sequence[BaseMessage]) -> AIMessage | str:
    """The stage model's reply to the request `messages`."""
    known = facts(str(messages[0].text))
    today = today_of(known)
    history = since_boundary(events(messages))
    saved, request = known.get(stage.fact), known.get("CORRECTION_REQUEST")
    replay = Replay(dict(stage.flatten(saved)) if request and isinstance(saved, dict) else {})
    replay.known = known
    if request:
        _read_message(stage, replay, str(request), today)
    for event in history:
        _replay_event(stage, replay, event, today)
    last = history[-1] if history else Event("opener")
    first = not any(event.kind in ("ai", "call") for event in history)
    reply = _answer(stage, replay, last, bool(request))
    if first and isinstance(reply, str) and last.kind == "human" and not request:
        reply = f"{stage.intro} {reply.removeprefix(NOT_CAUGHT)}"
    return reply


def _replay_event(stage: Stage, replay: Replay, event: Event, today: date) -> None:
    if event.kind == "human":
        replay.rejection = None
        _read_message(stage, replay, event.text, today)
    elif event.kind == "result" and event.tool == stage.tool and not event.ok:
        cleared = stage.rejected(event.text)
        for name in cleared:
            replay.draft.pop(name, None)
        replay.rejection, replay.asking = event.text, cleared


def _read_message(stage: Stage, replay: Replay, text: str, today: date) -> None:
    """Read one message part by part, each against the question it answers."""
    parts = corrections.expand([words.plain(text)])
    replay.text, replay.last = text, Found()
    replay.withdrawn = corrections.withdrawn(text)
    if replay.withdrawn:
        return
    corrected: tuple[str, ...] = ()  # a later part corrects what the part before it set
    for part in parts:
        asking = corrected + (replay.asking or missing(stage, replay.draft))
        found = stage.read(part, Context(asking, replay.draft, today))
        corrected = tuple(name for name in found.values if not name.startswith("_"))
        replay.draft.update(found.values)
        replay.read_any = replay.read_any or bool(found.values)
        replay.last.values.update(found.values)
        replay.last.named = [n for n in found.named if n not in found.values] or replay.last.named
        replay.last.problems += found.problems
        replay.asking = tuple(replay.last.named)


def _answer(stage: Stage, replay: Replay, last: Event, correcting: bool) -> AIMessage | str:
    draft, text = replay.draft, replay.text
    todo = missing(stage, draft)
    if last.kind == "result" and replay.rejection is not None:
        return f"{_first_sentence(replay.rejection)} {stage.question(replay.asking or todo, draft)}"
    if last.kind != "human":
        return (
            f"{stage.intro} {stage.question(todo, draft)}"
            if not correcting
            else _ask_change(stage, draft)
        )
    if words.has_sensitive(text):
        return f"{words.SENSITIVE_REPLY} {_next(stage, draft)}"
    if replay.withdrawn:
        return f"No problem, take your time: I haven't recorded that. {_next(stage, draft)}"
    if words.wants_to_stop(corrections.settle(text)) and not replay.last.values:
        return tool_call(stage.end_tool)
    return _answer_said(stage, replay, correcting)


def _answer_said(stage: Stage, replay: Replay, correcting: bool) -> AIMessage | str:
    """The reply to a message that gave facts, asked something, or neither."""
    draft, text, said = replay.draft, replay.text, replay.last
    todo = missing(stage, draft)
    asked = words.is_question(corrections.settle(text)) and not said.values
    if not todo and not asked and (not correcting or replay.read_any):
        return tool_call(stage.tool, **stage.args(draft))
    if asked:
        answer = (
            stage.answer(text, replay.known) or "I can only help with this preliminary home quote."
        )
        return f"{answer} {_next(stage, draft)}"
    if said.problems:
        return f"{' '.join(dict.fromkeys(said.problems))} {_next(stage, draft)}"
    if correcting and not replay.read_any:
        return _ask_change(stage, draft, said.named)
    if said.named and not said.values:
        return stage.question(tuple(said.named), draft)
    got = "; ".join(
        stage.say(name, value) for name, value in said.values.items() if not name.startswith("_")
    )
    heard = f"Got it: {got}. " if got else NOT_CAUGHT
    return heard + _next(stage, draft)


def _next(stage: Stage, draft: dict[str, Any]) -> str:
    todo = missing(stage, draft)
    return stage.question(todo, draft) if todo else "Shall I record these details and go on?"


def _ask_change(stage: Stage, draft: dict[str, Any], named: Sequence[str] = ()) -> str:
    if named:
        return stage.question(tuple(named), draft)
    return "What would you like to change? Tell me the corrected value."


def _first_sentence(feedback: str) -> str:
    """A tool's feedback as the customer may read it: the handler's sentence ("The effective
    date must be after ..."), or an apology for arguments that did not validate."""
    text = feedback.strip()
    if text.startswith("Error:"):
        return "Sorry, I couldn't use some of those answers."
    return text


def error_fields(feedback: str) -> tuple[str, ...]:
    """The fields an invalid-arguments result names ("... (zip: String should ...; effectiveDate:
    ...)"), first path part only: what the model must ask again."""
    start, end = feedback.find(" ("), feedback.rfind(") [type=")
    if not feedback.startswith("Error:") or start < 0 or end < start:
        return ()
    details = feedback[start + 2 : end].split("; ")
    names = (detail.split(":", 1)[0].split(".", 1)[0].strip() for detail in details)
    return tuple(dict.fromkeys(name for name in names if name and name != "arguments"))
