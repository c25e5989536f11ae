"""The sessions of one engine, kept: the store behind a per-process cache, a lock each, one commit.

The engine's turns and the background housekeeping reach stored sessions only through here, so
a turn's save reads top to bottom: the engine runs the turn, `SessionKeeper.commit` writes it, and
the housekeeping scheduler (which commits its own work with the same `commit`) takes over.

Each write tells the store its cause for the history (W1, K10): the caller's note names it
("turn", "approval", ...); a turn that handed the session to an operator is a "handoff", and
the write of a failed turn's error alone (U5, `note_failure`) an "error".
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta

from picoflow._internal.session_log import MAX_LOG_ENTRIES, FailedTurns, log_entry
from picoflow.flow import Flow
from picoflow.memory import Namespace
from picoflow.session import Usage, add_usage, continuation, dump_flow
from picoflow.session._cache import HotSessions
from picoflow.stores._limits import DocumentChecker
from picoflow.stores.base import JSONDict, Store, abilities_of

__all__ = ["FreeLease", "SessionKeeper"]

logger = logging.getLogger(__name__)

# Holds a session's store lease if no worker holds it now (True), else holds nothing (False):
# the engine's `TurnLeases.free` (O4). A write outside a turn must not break a turn elsewhere.
FreeLease = Callable[[str], AbstractAsyncContextManager[bool]]
# Errors not written at once but with the session's next save, as before: a turn that lost a
# conflict (another writer is busy with the session now) and a request refused before it ran
# (E2, W4, H5, K9: the caller's to change; a revision for each would fill the history).
_WRITE_LATER = frozenset(
    {
        "SessionConflictError",
        "InvalidRequest",
        "SessionNotFoundError",
        "RevisionNotFoundError",
        "MissingAbilityError",
        "IdempotencyKeyReused",
        "EffectInHistoryError",
    }
)


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
        self._failed = FailedTurns()  # U5: errors that could not be written with the failure

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
        note = _cause(note, doc, out)
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

    async def note_failure(
        self,
        session_id: str,
        message: str,
        error: str | None,
        owner: str | None = None,
        free_lease: FreeLease | None = None,
    ) -> None:
        """Write a failed turn's error into the session's `error` array now (U5).

        One small save of that array alone, against the revision just read, so nothing else of
        the session changes (P3) and a turn saved meanwhile wins. Only a running session of
        `owner` (None: a trusted caller, H4) gets it. When it cannot be written now (the store
        failed, a conflict, another worker holds the session's lease) or should not be (see
        `_WRITE_LATER`), it waits for the session's next save in this process.
        """
        entry = log_entry("error", message)
        entry["error"] = error or "Error"
        if entry["error"] in _WRITE_LATER:
            self._failed.add(session_id, entry)
            return
        try:
            async with self.lock(session_id):
                await self._write_errors(session_id, entry, owner, free_lease)
        except Exception as exc:  # a turn's result never fails because its error was not noted
            logger.warning(
                "could not write the failed turn's error now; it goes with the next save: %s",
                exc,
                extra={"session_id": session_id},
            )

    async def _write_errors(
        self, session_id: str, entry: JSONDict, owner: str | None, free_lease: FreeLease | None
    ) -> None:
        """Save `entry`, after any errors still waiting, at the end of the session's `error`."""
        try:
            doc = await self.store.load(session_id)
            current = doc is not None and continuation(doc, datetime.now(UTC)) == "continue"
        except BaseException:
            self._failed.add(session_id, entry)
            raise
        if doc is None or not current or (owner is not None and doc.get("owner") != owner):
            return  # no session a turn would continue, or another principal's (H4): none here
        if _repeats(doc.get("error"), entry):
            return  # the same refusal again (a budget, a deadline): one entry says it, not fifty
        self._failed.add(session_id, entry)
        async with free_lease(session_id) if free_lease else _no_lease() as free:
            if not free:
                return  # a turn runs on another worker: it waits for the next save here
            waiting = self._failed.take(session_id)
            stored = doc.get("error")
            errors = (list(stored) if isinstance(stored, list) else []) + waiting
            out = {**doc, "error": errors[-MAX_LOG_ENTRIES:]}
            step = doc.get("current_step")
            note = {"action": "error", "step_before": step, "step_after": step}
            try:
                await self.save(out, note, doc["revision"])
            except BaseException:
                for waited in waiting:
                    self._failed.add(session_id, waited)
                raise
        self._hot.forget(session_id)  # the cached document is a revision behind now

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


def _cause(note: JSONDict | None, before: JSONDict, after: JSONDict) -> JSONDict | None:
    """The note with its cause (K10): a turn that handed the session to an operator is one."""
    if note is None or note.get("action") != "turn":
        return note
    if before.get("operator") is None and after.get("operator") is not None:
        return {**note, "action": "handoff"}
    return note


@asynccontextmanager
async def _no_lease() -> AsyncIterator[bool]:
    """No lease to take ("reject", or a caller without leases): always free."""
    yield True


def _repeats(stored: object, entry: JSONDict) -> bool:
    """Whether the session's newest error already says what `entry` says."""
    if not isinstance(stored, list) or not stored or not isinstance(stored[-1], dict):
        return False
    last = stored[-1]
    return bool(last.get("message") == entry["message"] and last.get("error") == entry["error"])
