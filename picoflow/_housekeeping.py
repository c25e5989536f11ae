"""When compaction and step distillation run: inline, before the save, or after the reply (M4).

`_compaction` and `_distil` are the algorithms; this module is their schedule and commit protocol.
Distillation (anchors item 6) goes first: its erase changes a namespace, and compaction must
see the history the save will write.

**Inline** (the default): `compact_before_save` runs at the start of the turn's save, so the
compacted history, the summary, the warnings and the summary's tokens are written by the turn's
one atomic save (P3). The reply waits for the summariser.

**Background** (`set_summary_config(..., background=True)`): the turn is saved without compaction
and its reply returned at once; `after_save` then starts one task for the session that

1. loads the session as the turn saved it (revision r), and stops if it has moved already;
2. asks the summariser, holding no lock, so turns of the session are never held up;
3. takes the session's lock, checks that the stored revision is still r, archives, splices and
   saves with expected revision r.

If the revision has moved, or the save conflicts with another process, the draft is dropped:
nothing is written, and the end of the next turn tries again. A newer turn of the same session
in this process cancels the pending task, whose draft could only be dropped. While a summary is
pending, turns use the raw history, so nothing is ever missing from a request.

Steps to distil are taken from the live flow (`Flow._exits`), not from the document. A task
cancelled by a newer turn hands them to that turn's task; a task dropped for a moved revision
or a conflict loses them (logged), and the step is distilled when it is next left.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from . import _distil
from ._compaction import Draft, apply, draft, due_cuts
from ._turn import add_usage
from .errors import PicoflowError
from .flow import Flow
from .models import ProviderRegistry
from .session import dump_flow, load_flow
from .stores.base import JSONDict, Store

__all__ = ["Housekeeping"]

logger = logging.getLogger("picoflow.compaction")

Emit = Callable[[str, dict[str, Any]], None] | None
Exits = list[tuple[str, list[BaseMessage]]]  # steps to distil, as in `Flow._exits`


class Housekeeping:
    """Runs compaction for an engine and keeps track of its background tasks."""

    def __init__(
        self,
        store: Store,
        registry: ProviderRegistry,
        ttl: timedelta | None,
        lock: Callable[[str], AbstractAsyncContextManager[None]],
        on_commit: Callable[[JSONDict, Flow], None] | None = None,
    ) -> None:
        self._store = store
        self._registry = registry
        self._ttl = ttl
        self._lock = lock
        self._on_commit = on_commit
        # The live task of each session, with the steps it distils (handed on if cancelled).
        self._pending: dict[str, tuple[asyncio.Task[None], Exits]] = {}
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
                add_usage(usage, "summary", result.reply)  # M10
            _emit(emit, await apply(flow, result, self._store))

    async def _distil_before_save(
        self, flow: Flow, stored: JSONDict, usage: dict[str, dict[str, int]]
    ) -> None:
        """Anchors item 6: distil the steps left this turn, then erase what may go."""
        items = _distil.pending(flow, flow._exits)
        if items:
            model = self._model(flow)
            for item in items:
                await _distil.draft(flow, item, model)
                if item.reply is not None:
                    add_usage(usage, "summary", item.reply)  # M10
                _distil.apply(flow, item)
        await _distil.erase(flow, _distil.erase_cuts(flow, stored), self._store)

    def after_save(self, flow: Flow, saved: JSONDict) -> None:
        """Background mode: start distilling and compacting the revision just saved, if due."""
        session_id = saved["id"]
        carried = self._supersede(session_id)
        if not flow.get_memory().summary_config.background:
            return
        items = _distil.pending(flow, carried + flow._exits)
        memory = saved["memory"]
        if not (items or due_cuts(flow, memory) or _distil.erase_cuts(flow, memory)):
            return
        job = self._later(type(flow), session_id, saved["revision"], items)
        task = asyncio.get_running_loop().create_task(job)
        self._pending[session_id] = (task, [(item.step, item.messages) for item in items])
        self._tasks.add(task)
        task.add_done_callback(partial(self._finished, session_id))

    def cancel(self, session_id: str) -> None:
        """Stop the session's pending background work, if any (nothing is written)."""
        pending = self._pending.pop(session_id, None)
        if pending is not None:
            pending[0].cancel()

    def _supersede(self, session_id: str) -> Exits:
        """Cancel the task of an older revision (it could only be dropped); return its steps.

        A task that has finished already (committed or dropped) hands on nothing.
        """
        pending = self._pending.pop(session_id, None)
        if pending is None or pending[0].done():
            return []
        pending[0].cancel()
        return pending[1]

    async def drain(self) -> None:
        """Wait until every background compaction has committed, been dropped or failed."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _model(self, flow: Flow) -> BaseChatModel:
        model = flow.get_memory().summary_model
        if model is None:  # FlowEngine(...) refuses such flows (F5); this guards direct use
            raise ValueError(f"{flow.name} enables summaries but sets no summary model.")
        return self._registry.resolve(model)

    async def _later(
        self,
        flow_class: type[Flow],
        session_id: str,
        revision: int,
        items: list[_distil.Distillation],
    ) -> None:
        doc = await self._store.load(session_id)
        if doc is None or doc["revision"] != revision:
            if items:
                _log_dropped(session_id, [], "the session was saved again before it started")
            return
        flow = flow_class()
        load_flow(flow, doc)
        erased, drafts = await self._draft_later(flow, doc, items)
        if not (items or erased or drafts):
            return
        replies = [i.reply for i in items if i.reply is not None]
        replies += [d.reply for d in drafts if d.reply is not None]
        async with self._lock(session_id):
            current = await self._store.load(session_id)
            if current is None or current["revision"] != revision:
                _log_dropped(session_id, replies, "the session was saved again meanwhile")
                return
            await _distil.erase(flow, erased, self._store)
            for result in drafts:
                await apply(flow, result, self._store)
            await self._commit(flow, doc, replies)

    async def _draft_later(
        self, flow: Flow, doc: JSONDict, items: list[_distil.Distillation]
    ) -> tuple[dict[str, int], list[Draft]]:
        """Everything that needs the model, done holding no lock, on the task's own flow.

        The distilled values go into the task's flow at once (they are committed or dropped
        with it); a namespace with messages to erase is not compacted in the same pass.
        """
        for item in items:
            await _distil.draft(flow, item, self._model(flow))
            _distil.apply(flow, item)
        erased = _distil.erase_cuts(flow, doc["memory"])
        due = {ns: cut for ns, cut in due_cuts(flow, doc["memory"]).items() if ns not in erased}
        if not due:
            return erased, []
        model = self._model(flow)
        return erased, [await draft(flow, namespace, cut, model) for namespace, cut in due.items()]

    async def _commit(self, flow: Flow, doc: JSONDict, replies: list[AIMessage]) -> None:
        out = dump_flow(flow, doc, self._ttl, datetime.now(UTC))
        out["usage"] = {kind: dict(counters) for kind, counters in doc["usage"].items()}
        for reply in replies:
            add_usage(out["usage"], "summary", reply)  # M10
        try:
            out["revision"] = await self._store.save(out, doc["revision"])
        except PicoflowError as exc:  # a conflict, a deleted session, a store outage
            _log_dropped(doc["id"], replies, str(exc))
            return
        if self._on_commit is not None:
            self._on_commit(out, flow)

    def _finished(self, session_id: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        pending = self._pending.get(session_id)
        if pending is not None and pending[0] is task:
            del self._pending[session_id]
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "background housekeeping failed",
                exc_info=task.exception(),
                extra={"session_id": session_id},
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
