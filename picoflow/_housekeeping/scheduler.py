"""When compaction, distillation and extraction run: inline, before the save, or after the reply.

`compaction`, `distillation` and `extraction` (L3) are the algorithms; this module is their
schedule and commit protocol (M4).
Extraction goes first: it reads a namespace's messages and writes only to the memory bank and
the step's state. Distillation follows: its erase changes a namespace, and compaction must
see the history the save will write. In background mode, extracted entries go to the bank while
the task drafts, and the extracted ranges, warnings and tokens are applied with its commit.

**Inline** (the default): `before_save` runs at the start of the turn's save, so the
compacted history, the summary, the warnings and the summary's tokens are written by the turn's
one atomic save (P3). The reply waits for the summariser.

**Background** (`set_summary_config(..., background=True)`): the turn is saved without compaction
and its reply returned at once; `after_save` then starts one task for the session that

1. reads the session as stored (revision r; from the engine's hot cache when it is current)
   and drafts, holding no lock, so turns of the session are never held up;
2. takes the session's lock, reads it again (revision r', perhaps newer) and applies each draft
   that still fits: a summary if its namespace has only grown since (`_still_applies`), a
   distillation if the step's stored distillation is still the one it started from;
3. saves with expected revision r'.

Turns append, so a turn saved meanwhile, here or in another process, no longer throws a summary
away (back-to-back turns used to starve compaction). A draft whose part of the
session changed is dropped, never applied over the change; a conflicting save drops everything.
Either way the end of the next turn tries again. A turn of the same session in this process
that ends while its task runs queues its work (`_SessionWork.queued`), which starts when the
task is done. While a summary is pending, turns use the raw history, so nothing is ever missing
from a request.

Steps to distil are taken from the live flow (`LiveSession.exits`) and handed to the task; a
dropped distillation is logged, and the step is distilled when it is next left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from picoflow._housekeeping import distillation, extraction
from picoflow._housekeeping.compaction import SummaryDraft, apply_summary, draft_summary, due_cuts
from picoflow._housekeeping.summariser import SummaryModel
from picoflow._housekeeping.windows import apply_windows
from picoflow._internal.services import TurnServices
from picoflow._ops import NULL_RECORD, CallRecord, Telemetry
from picoflow.errors import PicoflowError
from picoflow.flow import Flow
from picoflow.memory import count_call
from picoflow.models import ProviderRegistry
from picoflow.models._retries import model_name, retries_of
from picoflow.session import load_flow
from picoflow.session._keeper import SessionKeeper
from picoflow.stores._bank import BankEntry
from picoflow.stores.base import JSONDict

__all__ = ["Housekeeping"]

logger = logging.getLogger(__name__)

Emit = Callable[[str, dict[str, Any]], None] | None
Exits = list[tuple[str, list[BaseMessage]]]  # steps to distil, as in `LiveSession.exits`


@dataclass(slots=True)
class _SessionWork:
    """The background work of one session: what runs, what waits, since when it is due.

    `queued` is work saved while `task` was running; it starts when the task is done. `carried`
    is what a failed task (a store outage, say) leaves for the session's next turn end.
    `due_since` (monotonic seconds) is when the work fell due, until it commits: the summary
    lag that the commit log reports.
    """

    flow_class: type[Flow]
    task: asyncio.Task[None] | None = None
    queued: Exits | None = None
    carried: Exits = field(default_factory=list)
    due_since: float | None = None

    def is_empty(self) -> bool:
        return (
            self.task is None
            and self.queued is None
            and not self.carried
            and self.due_since is None
        )


class Housekeeping:
    """Runs compaction and distillation for an engine and keeps track of its background tasks.

    The work of at most `keep_at_most` sessions is remembered, dropping first the oldest
    session with no task running: an outage can fail the tasks of thousands of sessions, and a
    session that never returns must not be held forever. Dropped carried work only means a step
    left before the outage is not distilled; its messages stay, and compaction still runs at
    the session's next turn end.
    """

    keep_at_most = 1024

    def __init__(
        self,
        sessions: SessionKeeper,
        registry: ProviderRegistry,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    ) -> None:
        # The engine's sessions: a task reads the session the turn has just written from their
        # cache (one `revision()` check instead of loading and parsing it twice), takes the
        # session's lock to apply its drafts, and commits like a turn does.
        self._sessions = sessions
        self._registry = registry
        self._sleep = sleep  # how a summary call waits between retries (V9), as a turn's do
        self._work: dict[str, _SessionWork] = {}  # by session id
        self._tasks: set[asyncio.Task[None]] = set()  # every task not yet finished
        self.telemetry: Telemetry | None = None  # set by the engine: compaction spans (O1)
        self.embeddings: Any = None  # set by the engine: vectors of extracted entries (L4)

    async def before_save(
        self,
        flow: Flow,
        stored: JSONDict,
        usage: dict[str, dict[str, int]],
        emit: Emit,
        ends: float | None = None,
    ) -> None:
        """M4: distil left steps, then compact every due namespace in place.

        `stored` is the loaded doc's `memory`: only its messages may be erased or evicted.
        `ends` is the turn's deadline (event-loop time, H6): summary calls give up before it,
        so a slow or rate-limited summariser skips compaction (M8) instead of failing the turn.
        """
        memory = flow.get_memory()
        if memory.has_windows:  # M11: no model, so inline in background mode too
            for event in await apply_windows(flow, stored, self._sessions.store):
                _emit(emit, event)
        if memory.summary_config.background:
            return
        if extraction.wants_extraction(flow, flow._session.exits):  # L3, before any erase
            await self.extract(flow, flow._session.exits, usage, ends)
        await self._distil_before_save(flow, stored, usage, ends)
        due = due_cuts(flow, stored)  # after the erase, which shortens the stored prefix
        if not due:
            return
        model = self._model(flow, ends)
        for namespace, cut in due.items():
            _emit(emit, {"namespace": namespace, "outcome": "started"})
            with self._span(namespace) as record:
                result = await draft_summary(flow, namespace, cut, model, self._sessions.store)
                for reply in result.replies:
                    count_call(usage["summary"], reply)  # M10
                applied = await apply_summary(flow, result, self._sessions.store)
                record.outcome = str(applied.get("outcome", "ok"))
            _emit(emit, applied)

    def _span(self, namespace: str) -> AbstractContextManager[CallRecord]:
        telemetry = self.telemetry
        if telemetry is None:
            return nullcontext(NULL_RECORD)
        return telemetry.operation("compaction", namespace=namespace)

    async def _distil_before_save(
        self, flow: Flow, stored: JSONDict, usage: dict[str, dict[str, int]], ends: float | None
    ) -> None:
        """Step distillation: distil the steps left this turn, then erase what may go."""
        if not any(step._distil is not None for step in flow.steps.values()):
            return  # the common case: no step of this flow distils, nothing to erase
        items = distillation.pending(flow, flow._session.exits)
        if items:
            model = self._model(flow, ends)
            for item in items:
                await distillation.draft_distillation(flow, item, model)
                if item.reply is not None:
                    count_call(usage["summary"], item.reply)  # M10
                distillation.apply_distillation(flow, item)
        cuts = distillation.erase_cuts(flow, stored)
        await distillation.erase_distilled(flow, cuts, self._sessions.store)

    async def extract(
        self,
        flow: Flow,
        exits: Exits,
        usage: dict[str, dict[str, int]],
        ends: float | None = None,
        *,
        every: bool = False,
    ) -> list[BankEntry]:
        """L3: extract the ranges due (all of them with `every`) into the owner's bank.

        Writes the entries, then records warnings, tokens and the extracted ranges on `flow`,
        for its save. Returns the entries written.
        """
        items = await extraction.pending_extractions(flow, exits, self._sessions.store, every=every)
        written: list[BankEntry] = []
        for item in items:
            await self._draft_extraction(flow, item, ends)
            if item.reply is not None:
                count_call(usage["summary"], item.reply)  # M10
            extraction.apply_extraction(flow, item)
            written += item.written
        return written

    async def _draft_extraction(
        self, flow: Flow, item: extraction.ExtractionDraft, ends: float | None = None
    ) -> None:
        """Ask the extracting step's model (else the summary model), then write the entries."""
        spec = flow.get_step(item.steps[0])._long_term
        model = self._model(flow, ends, spec.extract_model if spec is not None else None)
        await extraction.draft_extraction(flow, item, model)
        if item.problem is None:
            await extraction.write_extraction(item, self._sessions.store, self.embeddings)

    def after_save(self, flow: Flow, saved: JSONDict) -> None:
        """Background mode: distil and compact the session just saved, if anything is due.

        While the session's task is still running, the work is queued instead: the running
        task commits onto this newer revision if it still applies (see `_rebase`), and the
        queued work starts when it has finished, from whatever is stored by then.
        """
        if not flow.get_memory().summary_config.background:
            return
        session_id = saved["id"]
        work = self._work.get(session_id) or _SessionWork(type(flow))
        work.flow_class = type(flow)
        if work.task is not None and not work.task.done():
            work.queued = (work.queued or []) + flow._session.exits
            return
        # Work left by a failed task, or queued behind one that has just ended, goes with this
        # one: it is never lost.
        exits = work.carried + (work.queued or []) + flow._session.exits
        work.carried, work.queued = [], None
        memory = saved["memory"]
        if (
            distillation.pending(flow, exits)
            or extraction.wants_extraction(flow, exits)
            or due_cuts(flow, memory)
            or distillation.erase_cuts(flow, memory)
        ):
            self._work[session_id] = work
            self._start(session_id, work, exits)
            if work.due_since is None:
                work.due_since = time.monotonic()
                self._bound()  # this session runs now, so it is never the one dropped
        elif work.is_empty():
            self._work.pop(session_id, None)

    def cancel(self, session_id: str) -> None:
        """Stop the session's background work, running or queued (nothing is written)."""
        work = self._work.pop(session_id, None)
        if work is not None and work.task is not None:
            work.task.cancel()

    async def drain(self) -> None:
        """Wait until every background task (queued ones too) has committed or dropped."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _bound(self) -> None:
        """Beyond `keep_at_most` sessions, forget the oldest one with no task running."""
        if len(self._work) <= self.keep_at_most:
            return
        idle = next((key for key, work in self._work.items() if work.task is None), None)
        if idle is None:
            return
        dropped = self._work.pop(idle)
        if dropped.carried:
            logger.warning(
                "dropped the carried-over distillation of a session with no background "
                "work running: more than %d sessions have failed work waiting for their "
                "next turn",
                self.keep_at_most,
                extra={"session_id": idle},
            )

    def summary_model(self, flow: Flow) -> SummaryModel | None:
        """The flow's summariser with the engine's retry policy, or None if it sets none."""
        return self._model(flow) if flow.get_memory().summary_model is not None else None

    def _model(self, flow: Flow, ends: float | None = None, spec: Any = None) -> SummaryModel:
        """The summary model (or `spec`, an extraction model) with the engine's retries."""
        spec = spec if spec is not None else flow.get_memory().summary_model
        if spec is None:  # FlowEngine(...) refuses such flows (F5); this guards direct use
            raise ValueError(f"{flow.name} enables summaries but sets no summary model.")
        retries, call_timeout = retries_of(spec)
        return SummaryModel(
            self._registry.resolve(spec), retries, call_timeout, model_name(spec), self._sleep, ends
        )

    def _start(self, session_id: str, work: _SessionWork, exits: Exits) -> None:
        later = self._later(work.flow_class, session_id, exits)
        task = asyncio.get_running_loop().create_task(later)
        work.task = task
        self._tasks.add(task)
        task.add_done_callback(partial(self._finished, session_id, work.flow_class, exits))

    async def _later(self, flow_class: type[Flow], session_id: str, exits: Exits) -> None:
        """Draft from the stored session holding no lock, then commit under the lock."""
        doc, spaces = await self._sessions.load(session_id)
        if doc is None:
            return
        base = flow_class()
        load_flow(base, doc, spaces)  # copies what it takes from the cache
        base._services = TurnServices(owner=doc.get("owner"))  # L1: whose bank an extraction writes
        work = await self._draft_later(base, doc, exits)
        if work is None:
            self._clear_due(session_id)  # nothing is due after all
            return
        async with self._sessions.lock(session_id):
            current, spaces = await self._sessions.load(session_id)
            if current is None:
                _log_dropped(session_id, work.replies, "the session was deleted meanwhile")
                return
            target = flow_class()
            load_flow(target, current, spaces)
            if await self._rebase(base, target, current, work):
                await self._commit(target, current, work.replies)
            else:
                _log_dropped(session_id, work.replies, "the session changed under the drafts")

    async def _draft_later(self, base: Flow, doc: JSONDict, exits: Exits) -> _Drafts | None:
        """Everything that needs the model, on the stored session as loaded; None if idle.

        Distilled values go into `base` at once, so that a namespace whose messages the
        distillation will erase is not also summarised in the same pass.
        """
        extracted = await extraction.pending_extractions(base, exits, self._sessions.store)
        for pending in extracted:  # entries go to the bank now; `_rebase` records the ranges
            await self._draft_extraction(base, pending)
        items = distillation.pending(base, exits)
        generations = {item.step: _distil_generation(base, item.step) for item in items}
        stored = doc["memory"]
        for item in items:  # values go into `base` quietly: `_rebase` applies them for real
            await distillation.draft_distillation(base, item, self._model(base))
            distillation.store_value(base, item)
        erasing = distillation.erase_cuts(base, stored)
        due = {ns: cut for ns, cut in due_cuts(base, stored).items() if ns not in erasing}
        if not (items or erasing or due or extracted):
            return None
        store = self._sessions.store
        drafts = [
            await draft_summary(base, ns, cut, self._model(base), store) for ns, cut in due.items()
        ]
        return _Drafts(items, generations, drafts, extracted)

    async def _rebase(self, base: Flow, target: Flow, current: JSONDict, work: _Drafts) -> bool:
        """Apply the drafts to the session as it is now; True if that changed anything.

        Turns saved since the drafts were made (here or in another process) only appended
        messages, as a rule: then every draft still applies and nothing is lost. A draft whose
        part of the session changed is dropped instead, never applied over the change.
        """
        store = self._sessions.store
        applied = False
        for pending in work.extracted:  # the entries are in the bank: warn, count, mark
            extraction.apply_extraction(target, pending)
            applied = True
        for item in work.items:
            if _distil_generation(target, item.step) == work.generations[item.step]:
                distillation.apply_distillation(
                    target, item
                )  # stores the value, or records why not (M8)
                applied = True
        erased = distillation.erase_cuts(target, current["memory"])
        await distillation.erase_distilled(target, erased, store)
        for result in work.drafts:
            if result.namespace not in erased and _still_applies(base, target, result):
                await apply_summary(target, result, store)
                applied = True
        return applied or bool(erased)

    async def _commit(self, flow: Flow, doc: JSONDict, replies: list[AIMessage]) -> None:
        usage: dict[str, dict[str, int]] = {"summary": {}}
        for reply in replies:
            count_call(usage["summary"], reply)  # M10
        try:
            out = await self._sessions.commit(flow, doc, usage, note={"action": "compaction"})
        except PicoflowError as exc:  # a conflict, a deleted session, a store outage
            _log_dropped(doc["id"], replies, str(exc))
            return
        since = self._clear_due(doc["id"])
        lag = 0.0 if since is None else time.monotonic() - since
        logger.info(
            "background housekeeping committed revision %d, %.3f s after it fell due",
            out["revision"],
            lag,
            extra={
                "session_id": doc["id"],
                "summary_lag_seconds": lag,
                "namespaces": sorted(
                    ns for ns, entry in out["memory"].items() if entry != doc["memory"].get(ns)
                ),
            },
        )

    def _clear_due(self, session_id: str) -> float | None:
        """The session's work is done: forget when it fell due, and return that time."""
        work = self._work.get(session_id)
        if work is None:
            return None
        since, work.due_since = work.due_since, None
        return since

    def _finished(
        self, session_id: str, flow_class: type[Flow], exits: Exits, task: asyncio.Task[None]
    ) -> None:
        self._tasks.discard(task)
        work = self._work.get(session_id)
        if work is None:  # cancelled with `cancel`: nothing to carry or start
            return
        if work.task is task:
            work.task = None
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "background housekeeping failed; the next turn end tries again",
                exc_info=task.exception(),
                extra={"session_id": session_id},
            )
            work.carried = exits + work.carried
            self._bound()
        queued, work.queued = work.queued, None
        if queued is None:
            if work.is_empty():
                del self._work[session_id]
        elif work.task is not None:  # a newer turn started a task already: queue behind it
            work.queued = queued
        else:
            self._start(session_id, work, queued)


@dataclass(slots=True)
class _Drafts:
    """What a background task drafted: distillations and summaries.

    `generations` holds the generation each distillation started from; `replies` are the model
    replies, for token accounting (M10).
    """

    items: list[distillation.DistillationDraft]
    generations: dict[str, Any]
    drafts: list[SummaryDraft]
    extracted: list[extraction.ExtractionDraft] = field(default_factory=list)

    @property
    def replies(self) -> list[AIMessage]:
        found = [item.reply for item in self.items if item.reply is not None]
        found += [item.reply for item in self.extracted if item.reply is not None]
        return found + [reply for draft in self.drafts for reply in draft.replies]


def _distil_generation(flow: Flow, step_name: str) -> Any:
    """The generation of the step's stored distillation (None before the first one)."""
    entry = distillation.previous_entry(flow.get_step(step_name))
    return None if entry is None else entry.get("generation")


def _still_applies(base: Flow, target: Flow, result: SummaryDraft) -> bool:
    """Whether a summary drafted on `base` may be applied to the newer `target`.

    It may if the namespace has only grown since: the same summary generation, the same
    archived count, and the very messages the summary covers still at its start. Then
    evicting them from `target` is exactly what evicting them from `base` would have been.
    """
    old = base.get_memory().space(result.namespace)
    new = target.get_memory().namespaces().get(result.namespace)
    if new is None or len(new.messages) < result.cut:
        return False
    return (
        new.summary_generation == old.summary_generation
        and new.archived == old.archived
        and [m.id for m in new.messages[1 : result.cut]]
        == [m.id for m in old.messages[1 : result.cut]]
    )


def _emit(emit: Emit, data: dict[str, Any]) -> None:
    if emit is not None:
        emit("compaction", data)


def _log_dropped(session_id: str, replies: list[AIMessage], why: str) -> None:
    tokens = sum(r.usage_metadata["total_tokens"] for r in replies if r.usage_metadata)
    logger.info(
        "background compaction/distillation dropped (%s); compaction is retried at the next "
        "turn, a dropped step distillation when the step is next left; %d summary tokens unused",
        why,
        tokens,
        extra={"session_id": session_id},
    )
