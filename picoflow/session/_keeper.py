"""The sessions of one engine, kept: the store behind a per-process cache, a lock each, one commit.

The engine's turns and the background housekeeping reach stored sessions only through here, so
a turn's save reads top to bottom: the engine runs the turn, `SessionKeeper.commit` writes it, and
the housekeeping scheduler (which commits its own work with the same `commit`) takes over.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta

from picoflow._internal.session_log import MAX_LOG_ENTRIES, FailedTurns, log_entry
from picoflow.flow import Flow
from picoflow.memory import Namespace
from picoflow.session import Usage, add_usage, dump_flow
from picoflow.session._cache import HotSessions
from picoflow.stores._limits import DocumentChecker
from picoflow.stores.base import JSONDict, Store, abilities_of

__all__ = ["SessionKeeper"]


class SessionKeeper:
    """Load, lock and commit the sessions of one engine (P3, P4)."""

    def __init__(
        self,
        store: Store,
        ttl: timedelta | None,
        retention: tuple[int, float | None] = (50, None),
    ) -> None:
        self.store = store
        self._ttl = ttl
        # W1/W5: what every save tells the store about its revision, if the store listens.
        self._keep, self._max_age = retention
        self._notes = abilities_of(store).notes
        # Recently saved documents with their live messages, checked by revision on every
        # load: the store stays the one source of truth (see `_hot`).
        self._hot = HotSessions()
        self._limits = DocumentChecker(hands_off=True)  # H7: what no store keeps never reaches one
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}
        self._failed = FailedTurns()  # U5: errors of failed turns, written with the next save

    async def load(self, session_id: str) -> tuple[JSONDict | None, dict[str, Namespace] | None]:
        """The stored document and, when the cache is current, its live namespaces."""
        return await self._hot.load(self.store, session_id)

    async def commit(
        self,
        flow: Flow,
        doc: JSONDict,
        usage: Usage,
        *,
        fresh: bool = False,
        deadline: asyncio.Timeout | None = None,
        note: JSONDict | None = None,
        idle: bool = False,
    ) -> JSONDict:
        """Write the flow's session once: `doc` as loaded, changed by the flow, plus `usage`.

        A new session is created; an existing one is saved against the revision it was loaded
        at, so a writer that saved meanwhile makes this raise `SessionConflictError` and
        nothing is written (P4). Returns the document as stored. A turn's `deadline` (H6) ends
        where the write begins: a turn is saved whole or not at all, never cut mid-write.
        `idle` work (M14) keeps `updated_at` and `expires_at`: housekeeping is not activity,
        so it neither wakes the session nor extends its life.
        """
        out = dump_flow(flow, doc, self._ttl, datetime.now(UTC))
        if idle:
            out["updated_at"], out["expires_at"] = doc["updated_at"], doc["expires_at"]
        out["usage"] = add_usage(doc["usage"], usage)
        failed = self._failed.take(out["id"])
        if failed:
            out["error"] = (out["error"] + failed)[-MAX_LOG_ENTRIES:]
        self._limits.check(out, out["id"])
        if deadline is not None:
            deadline.reschedule(None)
        try:
            if fresh:
                await self.create(out, note)
            else:
                out["revision"] = await self.save(out, note, doc["revision"])
        except BaseException:
            for entry in failed:  # not written: they wait for the next save again
                self._failed.add(out["id"], entry)
            raise
        self._hot.keep(out, flow.get_memory().namespaces())
        return out

    def note_failure(self, session_id: str, message: str, error: str | None) -> None:
        """Keep a failed turn's error for the session's next save (U5; P3 saves nothing now)."""
        entry = log_entry("error", message)
        entry["error"] = error or "Error"
        self._failed.add(session_id, entry)

    async def create(self, doc: JSONDict, note: JSONDict | None = None) -> None:
        """Create a session, with the note of its first revision (W1) if the store keeps one."""
        if self._notes:
            await self.store.create(doc, note=self._note(note))  # type: ignore[call-arg]
        else:
            await self.store.create(doc)

    async def save(
        self, doc: JSONDict, note: JSONDict | None = None, expected: int | None = None
    ) -> int:
        """Save against `expected` (default: `doc["revision"]`); return the new revision."""
        expected = doc["revision"] if expected is None else expected
        if self._notes:
            return await self.store.save(doc, expected, note=self._note(note))  # type: ignore[call-arg]
        return await self.store.save(doc, expected)

    def _note(self, note: JSONDict | None) -> JSONDict:
        return {
            "action": "compaction",
            **(note or {}),
            "keep": self._keep,
            "max_age": self._max_age,
        }

    def forget_all(self) -> None:
        """Drop every cached session (many were deleted at once)."""
        self._hot = HotSessions()

    def forget(self, session_id: str) -> None:
        """Drop a session from the cache (it was deleted or closed)."""
        self._hot.forget(session_id)

    @asynccontextmanager
    async def lock(self, session_id: str | None) -> AsyncIterator[None]:
        """Serialise turns of one session inside this process (P4)."""
        if session_id is None:
            yield
            return
        lock, users = self._locks.get(session_id, (asyncio.Lock(), 0))
        self._locks[session_id] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[session_id]
            if users == 1:
                del self._locks[session_id]
            else:
                self._locks[session_id] = (lock, users - 1)
