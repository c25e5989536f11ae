"""Distil a step into typed state when the cursor leaves it (step distillation, `distil_on_exit`).

A step declared with `Step.distil_on_exit(Schema, key=..., erase=...)` is remembered by
`Flow.goto` when it is left (F8: a real move, `on_exit` ran). At the end of the turn, as part of
the housekeeping before the save (or after the reply, in background mode, see `scheduler`),
the summary model reads the step's messages and returns a JSON object for the schema. The
validated value is stored in the step's durable state under `key`:

    {"value": {...}, "schema": "Criteria", "source_message_ids": [...], "at": "<ISO>",
     "generation": n}

so the next model call of the turn never waits for it, and the turn's one atomic save writes it
(P3). Whatever goes wrong (the model raises or times out, the reply is empty, not JSON or not
valid for the schema), nothing is stored or erased and the session gets a warning (as M8).

The work comes in the same halves as compaction: `draft_distillation` asks the model and
changes nothing; `apply_distillation` writes the value into the flow, counting its tokens and
warning when it is unusable, as `apply_summary` does for a summary. A summary stands in for the
messages it covers, so `apply_summary` also evicts them; a distillation only adds state, and
what may be erased after it depends on the provenance of every step sharing the namespace, so
`erase_cuts`/`erase_distilled` then move covered messages to the archive (M9) for steps with
`erase=True`. They erase only what compaction may evict: a leading run of
messages that were already stored before this save, never splitting a tool call from its
results (M5). The store keeps the first archive entry of a position, so archiving a message
that the turn's save might still fail to commit could leave a wrong entry behind for good.
Messages the turn itself wrote are therefore erased at the end of the next turn, driven by the
provenance ids kept in state.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
)
from pydantic import BaseModel, ValidationError

from picoflow._housekeeping.history import evict, find_cut_point, stored_length
from picoflow._housekeeping.summariser import (
    SummaryModel,
    ask_summary_model,
    clip,
    summary_run_config,
    transcript_line,
)
from picoflow._internal.state import now_iso
from picoflow.errors import StoreError
from picoflow.flow import Flow
from picoflow.memory import count_call
from picoflow.step import DistilSpec, Step
from picoflow.stores.base import Store

__all__ = [
    "DEFAULT_DISTIL_PROMPT",
    "DistillationDraft",
    "pending",
    "distil_request",
    "parse_value",
    "draft_distillation",
    "apply_distillation",
    "store_value",
    "erase_cut",
    "erase_cuts",
    "erase_distilled",
]

logger = logging.getLogger(__name__)

DEFAULT_DISTIL_PROMPT = (
    "You turn a finished stage of a conversation between a user and an assistant into "
    "structured data. You receive the current value (it may be empty) and the stage's "
    "messages. Return the updated value: start from the current value, apply what the "
    "messages state, and keep the fields they do not change. Copy names, numbers, codes, "
    "dates, e-mail addresses and URLs exactly as written. Use null for anything the "
    "conversation does not state. Invent nothing."
)
# Always appended, also to a custom prompt: the reply is parsed against this schema.
SCHEMA_INSTRUCTION = (
    "Reply with one JSON object that validates against this JSON Schema, and nothing else:\n"
)
_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n(.*?)\n?```$", re.S)
_SHOWN_ERRORS = 3


@dataclass(slots=True)
class DistillationDraft:
    """One step to distil: the messages it covers, then (after drafting) the model's answer.

    `value` is the validated value as JSON, `problem` why there is none; `reply` is kept for
    token accounting (M10) even when it was unusable.
    """

    step: str
    messages: list[BaseMessage]
    value: dict[str, Any] | None = None
    reply: AIMessage | None = None
    problem: str | None = None


def pending(flow: Flow, exits: list[tuple[str, list[BaseMessage]]]) -> list[DistillationDraft]:
    """The steps to distil now, one per step however often it was left, in order of leaving.

    `exits` pairs a step name with its namespace as it was when the step was left. A step
    covers its own messages (ids `"<Step>|..."`, T5) from those snapshots and from its
    namespace now, so an `on_enter` that erased the namespace meanwhile loses nothing, and
    the exchange that made the move (stored right after `goto`) is included. A step that is
    current again (left and re-entered) is skipped: it is distilled when it is next left.
    """
    snapshots: dict[str, list[list[BaseMessage]]] = {}
    for name, messages in exits:
        snapshots.setdefault(name, []).append(messages)
    found: list[DistillationDraft] = []
    for name, lists in snapshots.items():
        step = flow.steps.get(name)
        if step is None or step._distil is None or name == flow._session.current:
            continue
        record = flow.get_memory().namespaces().get(step.namespace)
        if record is not None:
            lists.append(record.messages)
        covered = _attributed(step, lists)
        if covered:
            found.append(DistillationDraft(name, covered))
    return found


def _attributed(step: Step, lists: list[list[BaseMessage]]) -> list[BaseMessage]:
    """The step's messages in `lists` (histories, or covered lists handed on), each once.

    A history's system slot (index 0, a SystemMessage also stamped with the step's id) is
    never covered; a covered list handed on by a cancelled task has no slot.
    """
    prefix = f"{step.name}|"
    seen: set[str] = set()
    covered: list[BaseMessage] = []
    for messages in lists:
        start = 1 if messages and isinstance(messages[0], SystemMessage) else 0
        for message in messages[start:]:
            if isinstance(message.id, str) and message.id.startswith(prefix):
                if message.id not in seen:
                    seen.add(message.id)
                    covered.append(message)
    return covered


def previous_entry(step: Step) -> dict[str, Any] | None:
    """The stored distillation of a step, if its state holds one of the expected shape."""
    return step._distilled_entry(_spec(step).key)


def distil_request(
    spec: DistilSpec,
    name: str,
    messages: list[BaseMessage],
    previous: Any,
    summary: str | None = None,
) -> list[BaseMessage]:
    """The model's input: instruction and JSON schema, then the current value and the messages.

    As for summaries (M6), the messages go in as a transcript inside one user message, so
    the model does not answer them, and a request without tools carries no tool calls. The
    namespace's summary, if compaction wrote one, is included: the step's older messages may
    only survive there.
    """
    schema = json.dumps(spec.schema.model_json_schema(), ensure_ascii=False)
    system = f"{spec.prompt or DEFAULT_DISTIL_PROMPT}\n\n{SCHEMA_INSTRUCTION}{schema}"
    current = "(none yet)" if previous is None else json.dumps(previous, ensure_ascii=False)
    body = f"Current value:\n{current}\n\n"
    if summary:
        body += f"Summary of earlier messages:\n{summary}\n\n"
    body += f"Messages of the step {name}, oldest first:\n"
    body += "\n".join(transcript_line(message) for message in messages)
    return [SystemMessage(system), HumanMessage(body)]


def parse_value(schema: type[BaseModel], text: str) -> tuple[dict[str, Any] | None, str | None]:
    r"""The reply as the schema's JSON value, or why it is unusable (one ```json fence is fine).

    >>> from pydantic import BaseModel
    >>> class Stay(BaseModel):
    ...     nights: int
    >>> parse_value(Stay, '```json\n{"nights": "2"}\n```')
    ({'nights': 2}, None)
    >>> parse_value(Stay, '{"nights": null}')[1]
    'the reply does not match Stay: nights: Input should be a valid integer'
    """
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return None, "the summary model returned an empty reply"
    try:
        json.loads(body)
    except json.JSONDecodeError as exc:
        return None, f"the reply is not JSON ({exc.msg}): {clip(body)!r}"
    try:
        value = schema.model_validate_json(body)
    except ValidationError as exc:
        return None, f"the reply does not match {schema.__name__}: {_errors(exc)}"
    return value.model_dump(mode="json"), None


def _errors(exc: ValidationError) -> str:
    errors = exc.errors(include_url=False)
    shown = [
        f"{'.'.join(str(part) for part in error['loc']) or '(the object)'}: {error['msg']}"
        for error in errors[:_SHOWN_ERRORS]
    ]
    more = f" and {len(errors) - _SHOWN_ERRORS} more" if len(errors) > _SHOWN_ERRORS else ""
    return "; ".join(shown) + more


async def draft_distillation(
    flow: Flow, item: DistillationDraft, model: SummaryModel
) -> DistillationDraft:
    """Ask the summary model for the step's value and validate it; change nothing (as M8)."""
    step = flow.get_step(item.step)
    spec = _spec(step)
    previous = previous_entry(step)
    summary = flow.get_memory().summary(step.namespace)
    value = previous["value"] if previous is not None else None
    request = distil_request(spec, step.name, item.messages, value, summary)
    timeout = flow.get_memory().summary_config.timeout
    run = summary_run_config(flow, step.namespace, step.name, "distil")
    item.reply, item.problem = await ask_summary_model(
        model, request, run, timeout, _extra(flow, step)
    )
    if item.reply is not None:
        item.value, item.problem = parse_value(spec.schema, str(item.reply.text))
    return item


def apply_distillation(flow: Flow, item: DistillationDraft) -> bool:
    """Store a drafted value with its provenance, or warn and store nothing; True if stored.

    Also counts the call's tokens for the namespace (M10) and logs the distillation.
    """
    step = flow.get_step(item.step)
    if item.reply is not None:
        count_call(flow.get_memory().space(step.namespace).summary_usage, item.reply)  # M10
    if item.value is None:
        flow.add_warning(
            f"Step distillation skipped: {step.name}: {item.problem or 'no value'}. Nothing "
            "was stored or erased; the step is distilled again the next time it is left."
        )
        return False
    store_value(flow, item)
    logger.info("distilled %d messages", len(item.messages), extra=_extra(flow, step))
    return True


def store_value(flow: Flow, item: DistillationDraft) -> None:
    """Only the state write of `apply_distillation`, for a scratch flow: nothing counted or logged.

    `source_message_ids` accumulates over generations: a value merged from the previous one
    comes from every message any generation read.
    """
    if item.value is None:
        return
    step = flow.get_step(item.step)
    spec = _spec(step)
    previous = previous_entry(step) or {}
    ids = [i for i in previous.get("source_message_ids") or [] if isinstance(i, str)]
    known = set(ids)
    ids += [m.id for m in item.messages if isinstance(m.id, str) and m.id not in known]
    generation = previous.get("generation")
    entry = {
        "value": item.value,
        "schema": spec.schema.__name__,
        "source_message_ids": ids,
        "at": now_iso(),
        "generation": (generation if isinstance(generation, int) else 0) + 1,
    }
    step.save_state({spec.key: entry})


def erase_cut(messages: list[BaseMessage], covered: set[str], limit: int) -> int:
    """Where to cut so that `messages[1:cut]` can be erased: covered, stored, tool-safe.

    The run starts after the system slot, stops at the first message that no distillation
    covered or that is not among the first `limit` (stored) messages, and moves earlier until
    it separates no tool call from its results (M5). Unlike a compaction cut it does not wait
    for a user turn: what was distilled goes, even when the next step's reply then opens a
    shared namespace. 1 or less: nothing to erase.

    >>> from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
    >>> call = AIMessage("", id="A|2", tool_calls=[{"name": "pick", "args": {}, "id": "c1"}])
    >>> history = [
    ...     SystemMessage(""),                                  # 0  system slot
    ...     HumanMessage("Lyon, 2 nights", id="A|1"),           # 1  covered
    ...     call,                                               # 2  covered, calls c1...
    ...     ToolMessage("ok", tool_call_id="c1", id="A|3"),     # 3  ...its result, covered
    ...     HumanMessage("and a pool", id="B|4"),               # 4  another step's message
    ... ]
    >>> erase_cut(history, {"A|1", "A|2", "A|3"}, limit=5)  # the run stops at 4
    4
    >>> erase_cut(history, {"A|1", "A|2", "A|3"}, limit=3)  # 3 is not stored: 2 would split
    2
    """
    end = 1
    while end < min(limit, len(messages)) and messages[end].id in covered:
        end += 1
    return find_cut_point(messages, 0, limit=end) if end > 1 else 1


def erase_cuts(flow: Flow, stored: Mapping[str, Any]) -> dict[str, int]:
    """The namespaces with messages to erase now, each with its cut (see `erase_cut`).

    A namespace's covered ids are those in the provenance of every `erase=True` step using
    it; `stored` is the `memory` of the document as last saved (only its messages may go).
    """
    covered: dict[str, set[str]] = {}
    for step in flow.steps.values():
        spec = step._distil
        entry = previous_entry(step) if spec is not None and spec.erase else None
        if entry is not None:
            ids = entry.get("source_message_ids") or []
            covered.setdefault(step.namespace, set()).update(i for i in ids if isinstance(i, str))
    cuts: dict[str, int] = {}
    spaces = flow.get_memory().namespaces()
    for namespace, ids in covered.items():
        record = spaces.get(namespace)
        if record is None or len(record.messages) < 2 or record.messages[1].id not in ids:
            continue
        entry = stored.get(namespace) or {}
        limit = stored_length(record.messages, entry.get("messages") or [])
        cut = erase_cut(record.messages, ids, limit)
        if cut > 1:
            cuts[namespace] = cut
    return cuts


async def erase_distilled(flow: Flow, cuts: dict[str, int], store: Store) -> None:
    """Archive `messages[1:cut]` of each namespace (M9), then remove them from the history.

    An emptied namespace also loses its summary (a clean start, as `erase_memory`); a
    namespace that keeps messages keeps its summary. An archive that cannot be written keeps
    the messages and warns; the end of the next turn tries again.
    """
    session_id = flow.get_session_id() or ""
    for namespace, cut in cuts.items():
        record = flow.get_memory().space(namespace)
        try:
            await evict(store, session_id, namespace, record, cut)
        except StoreError as exc:
            flow.add_warning(
                f"Step distillation could not erase namespace '{namespace}': the archive could "
                f"not be written ({exc}). The messages were kept; erasing is tried again at "
                "the end of the next turn."
            )
            continue
        if len(record.messages) == 1:
            record.summary, record.summary_range = None, None  # M16: a range with its summary
        logger.info(
            "erased %d distilled messages of %s",
            cut - 1,
            namespace,
            extra={"session_id": session_id, "namespace": namespace},
        )


def _spec(step: Step) -> DistilSpec:
    spec = step._distil
    if spec is None:  # `pending` only yields steps with a spec; this guards direct use
        raise ValueError(f"{step.name} does not call distil_on_exit().")
    return spec


def _extra(flow: Flow, step: Step) -> dict[str, Any]:
    return {"session_id": flow.get_session_id(), "step": step.name, "namespace": step.namespace}
