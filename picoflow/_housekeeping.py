"""When compaction runs: inline, as the first part of saving, or after the reply (M4).

`_compaction` is the algorithm; this module is its schedule and its commit protocol.

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
        self._pending: dict[str, asyncio.Task[None]] = {}  # the live task of each session
        self._tasks: set[asyncio.Task[None]] = set()  # every task not yet finished

    async def compact_before_save(
        self, flow: Flow, stored: JSONDict, usage: dict[str, dict[str, int]], emit: Emit
    ) -> None:
        """M4: compact every due namespace in place; `stored` is the loaded doc's `memory`."""
        memory = flow.get_memory()
        if memory.summary_config.background:
            return
        due = due_cuts(flow, stored)
        if not due:
            return
        model = self._model(flow)
        for namespace, cut in due.items():
            _emit(emit, {"namespace": namespace, "outcome": "started"})
            result = await draft(flow, namespace, cut, model)
            if result.reply is not None:
                add_usage(usage, "summary", result.reply)  # M10
            _emit(emit, await apply(flow, result, self._store))

    def after_save(self, flow: Flow, saved: JSONDict) -> None:
        """Background mode: start compacting the revision just saved, if it is due."""
        session_id = saved["id"]
        self.cancel(session_id)  # a task for an older revision could only be dropped
        if not flow.get_memory().summary_config.background:
            return
        if not due_cuts(flow, saved["memory"]):
            return
        job = self._compact_later(type(flow), session_id, saved["revision"])
        task = asyncio.get_running_loop().create_task(job)
        self._pending[session_id] = task
        self._tasks.add(task)
        task.add_done_callback(partial(self._finished, session_id))

    def cancel(self, session_id: str) -> None:
        """Stop the session's pending background compaction, if any (nothing is written)."""
        task = self._pending.pop(session_id, None)
        if task is not None:
            task.cancel()

    async def drain(self) -> None:
        """Wait until every background compaction has committed, been dropped or failed."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _model(self, flow: Flow) -> BaseChatModel:
        model = flow.get_memory().summary_model
        if model is None:  # FlowEngine(...) refuses such flows (F5); this guards direct use
            raise ValueError(f"{flow.name} enables summaries but sets no summary model.")
        return self._registry.resolve(model)

    async def _compact_later(self, flow_class: type[Flow], session_id: str, revision: int) -> None:
        doc = await self._store.load(session_id)
        if doc is None or doc["revision"] != revision:
            return
        flow = flow_class()
        load_flow(flow, doc)
        model = self._model(flow)
        drafts = [
            await draft(flow, namespace, cut, model)
            for namespace, cut in due_cuts(flow, doc["memory"]).items()
        ]
        if not drafts:
            return
        async with self._lock(session_id):
            current = await self._store.load(session_id)
            if current is None or current["revision"] != revision:
                _log_dropped(session_id, drafts, "the session was saved again meanwhile")
                return
            for result in drafts:
                await apply(flow, result, self._store)
            await self._commit(flow, doc, drafts)

    async def _commit(self, flow: Flow, doc: JSONDict, drafts: list[Draft]) -> None:
        out = dump_flow(flow, doc, self._ttl, datetime.now(UTC))
        out["usage"] = {kind: dict(counters) for kind, counters in doc["usage"].items()}
        for result in drafts:
            if result.reply is not None:
                add_usage(out["usage"], "summary", result.reply)  # M10
        try:
            out["revision"] = await self._store.save(out, doc["revision"])
        except PicoflowError as exc:  # a conflict, a deleted session, a store outage
            _log_dropped(doc["id"], drafts, str(exc))
            return
        if self._on_commit is not None:
            self._on_commit(out, flow)

    def _finished(self, session_id: str, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if self._pending.get(session_id) is task:
            del self._pending[session_id]
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "background compaction failed",
                exc_info=task.exception(),
                extra={"session_id": session_id},
            )


def _emit(emit: Emit, data: dict[str, Any]) -> None:
    if emit is not None:
        emit("compaction", data)


def _log_dropped(session_id: str, drafts: list[Draft], why: str) -> None:
    tokens = sum(
        d.reply.usage_metadata["total_tokens"]
        for d in drafts
        if d.reply is not None and d.reply.usage_metadata
    )
    logger.info(
        "background compaction dropped (%s); the next turn retries; %d summary tokens unused",
        why,
        tokens,
        extra={"session_id": session_id},
    )
