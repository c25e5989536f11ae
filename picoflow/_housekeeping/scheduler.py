"""When compaction and step distillation run: inline, before the save, or after the reply (M4).

`compaction` and `distillation` are the algorithms; this module is their schedule and commit
protocol.
Distillation (anchors item 6) goes first: its erase changes a namespace, and compaction must
see the history the save will write.

**Inline** (the default): `compact_before_save` runs at the start of the turn's save, so the
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
away (anchors item 4: back-to-back turns used to starve compaction). A draft whose part of the
session changed is dropped, never applied over the change; a conflicting save drops everything.
Either way the end of the next turn tries again. A turn of the same session in this process
that ends while its task runs queues its work (`_queued`), which starts when the task is done.
While a summary is pending, turns use the raw history, so nothing is ever missing from a request.

Steps to distil are taken from the live flow (`Flow._exits`) and handed to the task; a dropped
distillation is logged, and the step is distilled when it is next left.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from .._hot import HotSessions
from ..errors import PicoflowError
from ..flow import Flow
from ..memory import count_call
from ..models import ProviderRegistry
from ..session import dump_flow, load_flow
from ..stores.base import JSONDict, Store
from . import distillation as _distil
from .compaction import Draft, apply, draft, due_cuts

__all__ = ["Housekeeping"]

logger = logging.getLogger("picoflow.compaction")

Emit = Callable[[str, dict[str, Any]], None] | None
Exits = list[tuple[str, list[BaseMessage]]]  # steps to distil, as in `Flow._exits`


class Housekeeping:
    """Runs compaction for an engine and keeps track of its background tasks.

    Work carried over from failed tasks, and the times background work fell due, are kept for
    at most `keep_at_most` sessions each, dropping first the oldest session with no work
    running: an outage can fail the tasks of thousands of sessions, and a session that never
    returns must not be held forever. Dropped carried work only means a step left before the
    outage is not distilled; its messages stay, and compaction still runs at the session's next
    turn end.
    """

    keep_at_most = 1024

    def __init__(
        self,
        store: Store,
        registry: ProviderRegistry,
        ttl: timedelta | None,
        lock: Callable[[str], AbstractAsyncContextManager[None]],
        hot: HotSessions,
    ) -> None:
        self._store = store
        self._registry = registry
        self._ttl = ttl
        self._lock = lock
        # The engine's cache of just-saved sessions: a task reads the session the turn has just
        # written from it (one `revision()` check instead of loading and parsing it twice) and
        # leaves its own commit there for the next turn.
        self._hot = hot
        self._pending: dict[str, asyncio.Task[None]] = {}  # the running task of each session
        # Work saved while a session's task was running: its flow class and the steps left.
        self._queued: dict[str, tuple[type[Flow], Exits]] = {}
        # When each session's background work fell due (monotonic seconds), until it commits:
        # the summary lag that the commit log reports (anchors item 4).
        self._due_since: dict[str, float] = {}
        # What each running task was given, and what a task that failed (a store outage, say)
        # leaves for the session's next turn end to try again.
        self._jobs: dict[asyncio.Task[None], tuple[type[Flow], Exits]] = {}
        self._carried: dict[str, tuple[type[Flow], Exits]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every task not yet finished

    async def compact_before_save(
        self, flow: Flow, stored: JSONDict, usage: dict[str, dict[str, int]], emit: Emit
    ) -> None:
        """M4: distil left steps, then compact every due namespace in place.

        `stored` is the loaded doc's `memory`: only its messages may be erased or evicted.
        """
        memory = flow.get_memory()
        if memory.summary_config.background:
            return
        await self._distil_before_save(flow, stored, usage)
        due = due_cuts(flow, stored)  # after the erase, which shortens the stored prefix
        if not due:
            return
        model = self._model(flow)
        for namespace, cut in due.items():
            _emit(emit, {"namespace": namespace, "outcome": "started"})
            result = await draft(flow, namespace, cut, model)
            if result.reply is not None:
                count_call(usage["summary"], result.reply)  # M10
            _emit(emit, await apply(flow, result, self._store))

    async def _distil_before_save(
        self, flow: Flow, stored: JSONDict, usage: dict[str, dict[str, int]]
    ) -> None:
        """Anchors item 6: distil the steps left this turn, then erase what may go."""
        if not any(step._distil is not None for step in flow.steps.values()):
            return  # the common case: no step of this flow distils, nothing to erase
        items = _distil.pending(flow, flow._exits)
        if items:
            model = self._model(flow)
            for item in items:
                await _distil.draft(flow, item, model)
                if item.reply is not None:
                    count_call(usage["summary"], item.reply)  # M10
                _distil.apply(flow, item)
        await _distil.erase(flow, _distil.erase_cuts(flow, stored), self._store)

    def after_save(self, flow: Flow, saved: JSONDict) -> None:
        """Background mode: distil and compact the session just saved, if anything is due.

        While the session's task is still running, the work is queued instead: the running
        task commits onto this newer revision if it still applies (see `_rebase`), and the
        queued work starts when it has finished, from whatever is stored by then.
        """
        if not flow.get_memory().summary_config.background:
            return
        session_id = saved["id"]
        running = self._pending.get(session_id)
        if running is not None and not running.done():
            queued = self._queued.get(session_id, (type(flow), []))[1]
            self._queued[session_id] = (type(flow), queued + flow._exits)
            return
        # Work left by a failed task, or queued behind one that has just ended, goes with this
        # one: it is never lost.
        carried = self._carried.pop(session_id, (type(flow), []))[1]
        queued = self._queued.pop(session_id, (type(flow), []))[1]
        exits = carried + queued + flow._exits
        items = _distil.pending(flow, exits)
        memory = saved["memory"]
        if items or due_cuts(flow, memory) or _distil.erase_cuts(flow, memory):
            self._start(type(flow), session_id, exits)
            if session_id not in self._due_since:  # running now, so never the one dropped
                self._bounded(self._due_since, session_id, time.monotonic())

    def cancel(self, session_id: str) -> None:
        """Stop the session's background work, running or queued (nothing is written)."""
        self._queued.pop(session_id, None)
        self._carried.pop(session_id, None)
        self._due_since.pop(session_id, None)
        task = self._pending.pop(session_id, None)
        if task is not None:
            task.cancel()

    async def drain(self) -> None:
        """Wait until every background task (queued ones too) has committed or dropped."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _bounded(self, entries: dict[str, Any], session_id: str, value: Any) -> str | None:
        """Set `entries[session_id]`; beyond `keep_at_most` sessions, drop the oldest one whose
        background work is not running (its entry still matters). Returns the dropped id."""
        entries[session_id] = value
        if len(entries) <= self.keep_at_most:
            return None
        idle = next((key for key in entries if key not in self._pending), None)
        if idle is not None:
            del entries[idle]
        return idle

    def _model(self, flow: Flow) -> BaseChatModel:
        model = flow.get_memory().summary_model
        if model is None:  # FlowEngine(...) refuses such flows (F5); this guards direct use
            raise ValueError(f"{flow.name} enables summaries but sets no summary model.")
        return self._registry.resolve(model)

    def _start(self, flow_class: type[Flow], session_id: str, exits: Exits) -> None:
        task = asyncio.get_running_loop().create_task(self._later(flow_class, session_id, exits))
        self._pending[session_id] = task
        self._jobs[task] = (flow_class, exits)
        self._tasks.add(task)
        task.add_done_callback(partial(self._finished, session_id))

    async def _later(self, flow_class: type[Flow], session_id: str, exits: Exits) -> None:
        """Draft from the stored session holding no lock, then commit under the lock."""
        doc, spaces = await self._hot.load(self._store, session_id)
        if doc is None:
            return
        base = flow_class()
        load_flow(base, doc, spaces)  # copies what it takes from the cache
        work = await self._draft_later(base, doc, exits)
        if work is None:
            self._due_since.pop(session_id, None)  # nothing is due after all
            return
        async with self._lock(session_id):
            current, spaces = await self._hot.load(self._store, session_id)
            if current is None:
                _log_dropped(session_id, work.replies, "the session was deleted meanwhile")
                return
            target = flow_class()
            load_flow(target, current, spaces)
            if await self._rebase(base, target, current, work):
                await self._commit(target, current, work.replies)
            else:
                _log_dropped(session_id, work.replies, "the session changed under the drafts")

    async def _draft_later(self, base: Flow, doc: JSONDict, exits: Exits) -> _Work | None:
        """Everything that needs the model, on the stored session as loaded; None if idle.

        Distilled values go into `base` at once, so that a namespace whose messages the
        distillation will erase is not also summarised in the same pass.
        """
        items = _distil.pending(base, exits)
        generations = {item.step: _distil_generation(base, item.step) for item in items}
        stored = doc["memory"]
        for item in items:  # values go into `base` quietly: `_rebase` applies them for real
            await _distil.draft(base, item, self._model(base))
            _distil.store_value(base, item)
        erasing = _distil.erase_cuts(base, stored)
        due = {ns: cut for ns, cut in due_cuts(base, stored).items() if ns not in erasing}
        if not (items or erasing or due):
            return None
        drafts = [await draft(base, ns, cut, self._model(base)) for ns, cut in due.items()]
        return _Work(items, generations, drafts)

    async def _rebase(self, base: Flow, target: Flow, current: JSONDict, work: _Work) -> bool:
        """Apply the drafts to the session as it is now; True if that changed anything.

        Turns saved since the drafts were made (here or in another process) only appended
        messages, as a rule: then every draft still applies and nothing is lost. A draft whose
        part of the session changed is dropped instead, never applied over the change.
        """
        applied = False
        for item in work.items:
            if _distil_generation(target, item.step) == work.generations[item.step]:
                _distil.apply(target, item)  # stores the value, or records why not (M8)
                applied = True
        erased = _distil.erase_cuts(target, current["memory"])
        await _distil.erase(target, erased, self._store)
        for result in work.drafts:
            if result.namespace not in erased and _still_applies(base, target, result):
                await apply(target, result, self._store)
                applied = True
        return applied or bool(erased)

    async def _commit(self, flow: Flow, doc: JSONDict, replies: list[AIMessage]) -> None:
        out = dump_flow(flow, doc, self._ttl, datetime.now(UTC))
        out["usage"] = {kind: dict(counters) for kind, counters in doc["usage"].items()}
        for reply in replies:
            count_call(out["usage"]["summary"], reply)  # M10
        try:
            out["revision"] = await self._store.save(out, doc["revision"])
        except PicoflowError as exc:  # a conflict, a deleted session, a store outage
            _log_dropped(doc["id"], replies, str(exc))
            return
        self._hot.keep(out, flow.get_memory().namespaces())
        since = self._due_since.pop(doc["id"], None)
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

    def _finished(self, session_id: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        job = self._jobs.pop(task)
        if self._pending.get(session_id) is task:
            del self._pending[session_id]
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "background housekeeping failed; the next turn end tries again",
                exc_info=task.exception(),
                extra={"session_id": session_id},
            )
            carried = self._carried.get(session_id, (job[0], []))[1]
            dropped = self._bounded(self._carried, session_id, (job[0], job[1] + carried))
            if dropped is not None:
                logger.warning(
                    "dropped the carried-over distillation of a session with no background "
                    "work running: more than %d sessions have failed work waiting for their "
                    "next turn",
                    self.keep_at_most,
                    extra={"session_id": dropped},
                )
        queued = self._queued.pop(session_id, None)
        if queued is None:
            return
        if session_id in self._pending:  # a newer turn started a task already: queue behind it
            later = self._queued.get(session_id, (queued[0], []))[1]
            self._queued[session_id] = (queued[0], queued[1] + later)
        else:
            self._start(queued[0], session_id, queued[1])


@dataclass(slots=True)
class _Work:
    """What a background task drafted: distillations (with the generation each started from)
    and summaries; `replies` are their model replies, for token accounting (M10)."""

    items: list[_distil.Distillation]
    generations: dict[str, Any]
    drafts: list[Draft]

    @property
    def replies(self) -> list[AIMessage]:
        found = [item.reply for item in self.items] + [d.reply for d in self.drafts]
        return [reply for reply in found if reply is not None]


def _distil_generation(flow: Flow, step_name: str) -> Any:
    """The generation of the step's stored distillation (None before the first one)."""
    entry = _distil.previous_entry(flow.get_step(step_name))
    return None if entry is None else entry.get("generation")


def _still_applies(base: Flow, target: Flow, result: Draft) -> bool:
    """Whether a summary drafted on `base` may be applied to the newer `target` (anchors 4).

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
