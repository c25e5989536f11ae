"""Extraction into long-term memory: a model reads raw messages and writes bank entries (L3).

A step declared with `use_long_term_memory(extract="step")` is extracted when the flow leaves
it; `extract="session"` when the session ends (run_status `completed`); `engine.extract_memory`
extracts every such step now (for an app's scheduler, before a session expires). The unit is a
range of one namespace's message positions, the `seq` numbers of M9/M16 (the message at index
i of a history has position `archived + i`; an archived message keeps its position): every
message after the last extracted position, from the history and, for messages compaction has
evicted since, from the archive. The model reads those messages only, never the namespace's
summary, which is a model's rewording: what the bank keeps must come from what was said.

It reuses step distillation's machinery: the same model call (`ask_summary_model`, with the
model's retry policy and the summary timeout), the same JSON parsing against a pydantic
schema (`parse_value`), the same schedule (inline before the save, or in the background task,
see `scheduler`) and the same rule that a failing model never fails the turn (a warning, M8).

Every entry the model returns is checked: its text is not empty, its kind is one the step
allows, and it cites at least one message id, each from the extracted range. An entry that
fails is dropped and the warning says why. A kept entry records its provenance in `source`:
`{"session_id", "namespace", "from_seq", "to_seq", "message_ids", "step"}`.

Nothing is extracted twice: the range starts after both the highest `to_seq` recorded in the
extracting steps' state (`long_term_extracted`, saved with the turn) and the highest `to_seq`
of the owner's entries from this session and namespace. The first survives "forget what you
know about me" (the deleted entries are not re-learnt from the same messages); the second
survives a save that failed after the entries were written. A range that gave no entries is
read again with the next one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    messages_from_dict,
)
from pydantic import BaseModel, Field

from picoflow._bank import owner_of, vectors
from picoflow._housekeeping.distillation import SCHEMA_INSTRUCTION, parse_value
from picoflow._housekeeping.summariser import (
    SummaryModel,
    ask_summary_model,
    summary_run_config,
    transcript_line,
)
from picoflow.errors import StoreError
from picoflow.flow import Flow
from picoflow.memory import count_call
from picoflow.step import Step
from picoflow.step._long_term import LongTermSpec
from picoflow.stores._bank import BankEntry, check_kind, check_text, new_entry
from picoflow.stores.base import Store

__all__ = [
    "DEFAULT_EXTRACT_PROMPT",
    "MARK_KEY",
    "ExtractedMemory",
    "ExtractionReply",
    "ExtractionDraft",
    "wants_extraction",
    "pending_extractions",
    "extraction_request",
    "draft_extraction",
    "write_extraction",
    "apply_extraction",
]

logger = logging.getLogger(__name__)

MARK_KEY = "long_term_extracted"  # step state: {namespace: the last extracted position}
MAX_MESSAGES = 200  # at most the newest this many messages of a range go to the model
_BANK_PAGES = 20  # the bank scanned for this session's ranges: at most 2,000 entries

DEFAULT_EXTRACT_PROMPT = (
    "You read part of a conversation between a user and an assistant and write down what is "
    "worth remembering about the user in later, separate conversations: lasting facts about "
    "them, their preferences, and notable events (episodes). Write one entry per item, a short "
    "full sentence about the user ('Prefers a quiet room.'). Leave out passing details of "
    "this conversation, what the assistant offered, and anything the user did not state or "
    "confirm. Cite, for each entry, the ids of the messages it comes from, exactly as they are "
    "shown in brackets. Invent nothing; an empty list is a fine answer."
)


class ExtractedMemory(BaseModel):
    """One entry as the model returns it; checked afterwards, entry by entry."""

    text: str
    kind: str
    message_ids: list[str] = Field(default_factory=list)


class ExtractionReply(BaseModel):
    """The model's whole answer."""

    entries: list[ExtractedMemory]


@dataclass(slots=True)
class ExtractionDraft:
    """One namespace range to extract, then (after drafting) what the model made of it.

    `messages` pairs each message with its position; `steps` are the extracting steps of the
    namespace (the first one's model is used, the kinds of all are allowed).
    """

    namespace: str
    steps: list[str]
    owner: str
    session_id: str
    kinds: tuple[str, ...]
    messages: list[tuple[int, BaseMessage]]
    entries: list[ExtractedMemory] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)
    written: list[BankEntry] = field(default_factory=list)
    reply: AIMessage | None = None
    problem: str | None = None

    @property
    def from_seq(self) -> int:
        return self.messages[0][0]

    @property
    def to_seq(self) -> int:
        return self.messages[-1][0]


def _spec(step: Step) -> LongTermSpec | None:
    spec = step._long_term
    return spec if spec is not None and spec.extract is not None else None


def wants_extraction(flow: Flow, exits: list[tuple[str, list[BaseMessage]]]) -> bool:
    """Whether this turn end may extract: a left step extracts, or the session has ended."""
    steps = [step for step in flow.steps.values() if _spec(step) is not None]
    if not steps:
        return False
    if flow._session.completed:
        return True
    left = {name for name, _ in exits}
    return any(step.name in left and step._long_term.extract == "step" for step in steps)  # type: ignore[union-attr]


def _due_steps(flow: Flow, exits: list[tuple[str, list[BaseMessage]]], every: bool) -> list[Step]:
    left = {name for name, _ in exits}
    found = []
    for step in flow.steps.values():
        spec = _spec(step)
        if spec is None:
            continue
        if every or flow._session.completed or (spec.extract == "step" and step.name in left):
            found.append(step)
    return found


async def pending_extractions(
    flow: Flow,
    exits: list[tuple[str, list[BaseMessage]]],
    store: Store,
    *,
    every: bool = False,
) -> list[ExtractionDraft]:
    """The ranges to extract now, one per namespace of a due step, each after its mark.

    Due: a step with `extract="step"` left this turn (`exits`), every extracting step when the
    session has ended, or every extracting step with `every` (`engine.extract_memory`). A
    session with no owner extracts nothing: there is no bank to write to.
    """
    owner, session_id = owner_of(flow), flow.get_session_id()
    due = _due_steps(flow, exits, every)
    if owner is None or not session_id or not due:
        return []
    groups: dict[str, list[Step]] = {}
    for step in due:
        groups.setdefault(step.namespace, []).append(step)
    found = []
    for namespace, steps in groups.items():
        kinds = tuple(dict.fromkeys(k for s in steps for k in s._long_term.kinds))  # type: ignore[union-attr]
        mark = max(
            _state_mark(flow, namespace), await _bank_mark(store, owner, session_id, namespace)
        )
        messages = await _after(flow, store, session_id, namespace, mark)
        if any(isinstance(message, HumanMessage) for _, message in messages):
            names = [s.name for s in steps]
            found.append(ExtractionDraft(namespace, names, owner, session_id, kinds, messages))
    return found


def _state_mark(flow: Flow, namespace: str) -> int:
    """The last position extracted, as the extracting steps of the namespace recorded it."""
    marks = [0]
    for step in flow.steps.values():
        if _spec(step) is not None and step.namespace == namespace:
            recorded = step.get_state(MARK_KEY)
            value = recorded.get(namespace) if isinstance(recorded, dict) else None
            marks.append(value if isinstance(value, int) and not isinstance(value, bool) else 0)
    return max(marks)


async def _bank_mark(store: Store, owner: str, session_id: str, namespace: str) -> int:
    """The highest `to_seq` of the owner's entries extracted from this session's namespace."""
    bank: Any = store
    mark = 0
    for page in range(1, _BANK_PAGES + 1):
        entries: list[BankEntry] = await bank.bank_list(owner, page=page, page_size=100)
        for entry in entries:
            source = entry["source"] or {}
            if source.get("session_id") == session_id and source.get("namespace") == namespace:
                to_seq = source.get("to_seq")
                mark = max(mark, to_seq if isinstance(to_seq, int) else 0)
        if len(entries) < 100:
            break
    return mark


async def _after(
    flow: Flow, store: Store, session_id: str, namespace: str, mark: int
) -> list[tuple[int, BaseMessage]]:
    """The namespace's messages after position `mark`, oldest first, system messages left out.

    Messages compaction evicted since the mark are read back from the archive (their
    originals, never the summary that replaced them).
    """
    record = flow.get_memory().namespaces().get(namespace)
    if record is None:
        return []
    found: list[tuple[int, BaseMessage]] = []
    if mark < record.archived:
        found += await _archived_after(store, session_id, namespace, mark)
    found += [
        (record.archived + index, message)
        for index, message in enumerate(record.messages[1:], start=1)
        if record.archived + index > mark
    ]
    kept = [(seq, m) for seq, m in found if not isinstance(m, SystemMessage)]
    return kept[-MAX_MESSAGES:]


async def _archived_after(
    store: Store, session_id: str, namespace: str, mark: int
) -> list[tuple[int, BaseMessage]]:
    entries: list[dict[str, Any]] = []
    try:
        for page in range(1, MAX_MESSAGES // 100 + 2):
            batch = await store.search_archive(session_id, namespace, "", page=page, page_size=100)
            entries += [e for e in batch if e["position"] > mark]
            if len(batch) < 100 or min(e["position"] for e in batch) <= mark:
                break
    except StoreError as exc:  # the history still holds the newest messages
        logger.warning("extraction reads no archived messages: %s", exc)
        return []
    entries.sort(key=lambda entry: entry["position"])
    messages = messages_from_dict([entry["message"] for entry in entries])
    return [(entry["position"], m) for entry, m in zip(entries, messages, strict=True)]


def _label(seq: int, message: BaseMessage) -> str:
    return message.id if isinstance(message.id, str) and message.id else f"seq-{seq}"


def extraction_request(
    item: ExtractionDraft, prompt: str = DEFAULT_EXTRACT_PROMPT
) -> list[BaseMessage]:
    """The model's input: instruction, allowed kinds and JSON schema, then the transcript.

    As for summaries (M6), the messages go in as a transcript inside one user message, each
    line led by the message id the entry must cite.
    """
    schema = json.dumps(ExtractionReply.model_json_schema(), ensure_ascii=False)
    kinds = ", ".join(item.kinds)
    system = f"{prompt}\n\nAllowed kinds: {kinds}.\n\n{SCHEMA_INSTRUCTION}{schema}"
    lines = [f"[{_label(seq, m)}] {transcript_line(m)}" for seq, m in item.messages]
    body = "Messages, oldest first:\n" + "\n".join(lines)
    return [SystemMessage(system), HumanMessage(body)]


async def draft_extraction(flow: Flow, item: ExtractionDraft, model: SummaryModel) -> None:
    """Ask the model, parse its reply and check every entry; changes nothing."""
    run = summary_run_config(flow, item.namespace, item.steps[0], "extract")
    timeout = flow.get_memory().summary_config.timeout
    extra = {"session_id": item.session_id, "namespace": item.namespace, "step": item.steps[0]}
    item.reply, problem = await ask_summary_model(
        model, extraction_request(item), run, timeout, extra
    )
    value = None
    if item.reply is not None:
        value, problem = parse_value(ExtractionReply, str(item.reply.text))
    if value is None:  # the shared call and parser name the summary model; here it extracts
        item.problem = (problem or "no reply").replace("the summary model", "the extraction model")
        return
    allowed = {_label(seq, m) for seq, m in item.messages}
    for number, entry in enumerate(ExtractionReply.model_validate(value).entries, start=1):
        why = _unusable(entry, item.kinds, allowed)
        if why is None:
            item.entries.append(entry)
        else:
            item.dropped.append(f"entry {number} {why}")


def _unusable(entry: ExtractedMemory, kinds: tuple[str, ...], allowed: set[str]) -> str | None:
    """Why an entry cannot be kept, or None."""
    try:
        check_text(entry.text)
        check_kind(entry.kind)
    except ValueError as exc:
        return f"is malformed ({exc})"
    if entry.kind not in kinds:
        return f"has the kind {entry.kind!r}, not one of {', '.join(kinds)}"
    if not entry.message_ids:
        return "cites no message"
    strangers = [i for i in entry.message_ids if i not in allowed]
    if strangers:
        return f"cites messages that are not in the extracted range ({', '.join(strangers[:3])})"
    return None


async def write_extraction(item: ExtractionDraft, store: Store, embeddings: Any) -> None:
    """Write the checked entries to the owner's bank (with vectors, if configured)."""
    source = {
        "session_id": item.session_id,
        "namespace": item.namespace,
        "from_seq": item.from_seq,
        "to_seq": item.to_seq,
        "step": item.steps[0],
    }
    try:
        for entry in item.entries:
            ids = list(dict.fromkeys(entry.message_ids))
            made = new_entry(item.owner, entry.text, entry.kind, {**source, "message_ids": ids})
            item.written.append(await vectors.add_entry(store, embeddings, made))
    except StoreError as exc:
        item.problem = f"the memory bank could not be written ({exc})"


def apply_extraction(flow: Flow, item: ExtractionDraft) -> bool:
    """Count the call (M10), warn about what went wrong, and mark the range as extracted.

    True if the range was extracted (whatever number of entries it gave).
    """
    if item.reply is not None:
        count_call(flow.get_memory().space(item.namespace).summary_usage, item.reply)
    if item.problem is not None:
        kept = f" ({len(item.written)} entries were kept)" if item.written else ""
        flow.add_warning(
            f"Long-term memory extraction skipped: namespace '{item.namespace}': "
            f"{item.problem}{kept}. The messages are read again at the next extraction."
        )
        return False
    if item.dropped:
        shown = "; ".join(item.dropped[:3]) + ("; ..." if len(item.dropped) > 3 else "")
        flow.add_warning(
            f"Long-term memory extraction dropped {len(item.dropped)} of "
            f"{len(item.dropped) + len(item.written)} entries of namespace '{item.namespace}': "
            f"{shown}."
        )
    for name in item.steps:
        step = flow.steps.get(name)
        if step is not None:
            marks = step.get_state(MARK_KEY)
            marks = dict(marks) if isinstance(marks, dict) else {}
            marks[item.namespace] = max(item.to_seq, marks.get(item.namespace) or 0)
            step.save_state({MARK_KEY: marks})
    logger.info(
        "extracted %d long-term memory entries from positions %d-%d",
        len(item.written),
        item.from_seq,
        item.to_seq,
        extra={"session_id": item.session_id, "namespace": item.namespace},
    )
    return True
