"""What a turn does when its session runs elsewhere (O4): `concurrent_turns`.

Turns of one session wait for each other inside a process (P4: the engine's per-session lock).
Across processes there are two answers:

- `"reject"` (the default): nothing is taken before the turn; if another worker saved the
  session while this turn ran, this turn's save is a conflict (`SessionConflictError`, 409 over
  HTTP), nothing of it is written, and the client sends it again. It costs no store call.
- `"queue"`: the turn first takes the session's lease in the store (`stores._leases`); while
  another worker holds it, the turn waits, polling with a backoff, then runs on what that worker
  saved. The wait counts towards the turn's deadline (`turn_timeout`, which "queue" requires):
  a turn still waiting at its deadline fails as any turn past its deadline does, with nothing
  saved. While the turn runs its lease is renewed; when it ends the lease is removed; a worker
  that died holding one blocks the session only until the lease expires (`LEASE_SECONDS`).

The lease orders turns; the revision check still guards every save (P4).
"""

from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext, suppress
from typing import Literal

from picoflow.session import is_session_id
from picoflow.stores.base import KeepsLeases, StoreAbilities

__all__ = [
    "CONCURRENT_TURNS",
    "LEASE_SECONDS",
    "ConcurrentTurns",
    "TurnLeases",
    "check_concurrent_turns",
    "turn_leases",
]

logger = logging.getLogger("picoflow.engine")
_NOTHING_HELD: AbstractAsyncContextManager[None] = nullcontext()  # reusable: it holds no state

ConcurrentTurns = Literal["reject", "queue"]
CONCURRENT_TURNS = ("reject", "queue")
# How long a lease lasts unless renewed: how long a worker that died holding one blocks the
# session. It is renewed every third of this while its turn runs.
LEASE_SECONDS = 10.0
FIRST_POLL = 0.005  # seconds before the first retry of a taken lease; doubles up to MAX_POLL
MAX_POLL = 0.1


def check_concurrent_turns(
    mode: object, turn_timeout: float | None, abilities: StoreAbilities
) -> ConcurrentTurns:
    """`concurrent_turns` as given, after refusing what cannot work (ValueError)."""
    if mode not in CONCURRENT_TURNS:
        raise ValueError(
            f"concurrent_turns must be 'reject' (a turn of a session running on another "
            f"worker fails with a conflict) or 'queue' (it waits for that turn), got {mode!r}."
        )
    if mode == "queue" and turn_timeout is None:
        raise ValueError(
            "concurrent_turns='queue' makes a turn wait while its session runs on another "
            "worker, and the turn's deadline bounds that wait: give the engine a turn_timeout, "
            "e.g. FlowEngine(..., concurrent_turns='queue', turn_timeout=60)."
        )
    if mode == "queue" and abilities.leases is None:
        raise ValueError(
            f"concurrent_turns='queue' needs a store that keeps session leases; "
            f"{abilities.store_name} has no acquire_lease()/release_lease(). Use MemoryStore, "
            "SQLiteStore or MongoStore, or add those two methods to your store."
        )
    return "queue" if mode == "queue" else "reject"


def turn_leases(mode: object, turn_timeout: float | None, abilities: StoreAbilities) -> TurnLeases:
    """The engine's `TurnLeases` for `concurrent_turns=mode`, checked (ValueError)."""
    checked = check_concurrent_turns(mode, turn_timeout, abilities)
    return TurnLeases(abilities.leases if checked == "queue" else None)


class TurnLeases:
    """The engine's side of `concurrent_turns`: take, renew and release a session's lease."""

    def __init__(self, store: KeepsLeases | None, seconds: float | None = None) -> None:
        """`store` is the store's lease ability for "queue", None for "reject" (no leases)."""
        self._store = store
        self._seconds = LEASE_SECONDS if seconds is None else seconds
        # A readable prefix (which worker) and a random part (which turn) per lease.
        self._worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(4)}"

    def hold(self, session_id: str | None) -> AbstractAsyncContextManager[None]:
        """Hold the session's lease around a turn ("queue"); do nothing for "reject".

        A turn that starts a session (no valid id) takes none: no other worker knows the id.
        With nothing to hold, the shared `nullcontext` stands in for a generator-based context
        manager built and stepped through on every turn.
        """
        store = self._store
        if store is None or not is_session_id(session_id):
            return _NOTHING_HELD
        return self._held(store, str(session_id))

    @asynccontextmanager
    async def free(self, session_id: str) -> AsyncIterator[bool]:
        """Hold the session's lease if no worker holds it now: True; else hold nothing: False.

        For a write outside a turn (a failed turn's error, U5) that must not wait, nor break a
        turn another worker is running ("queue"). With "reject" there is no lease: True.
        """
        store = self._store
        if store is None:
            yield True
            return
        holder = f"{self._worker}:{secrets.token_hex(6)}"
        taken = await store.acquire_lease(session_id, holder, self._seconds)
        try:
            yield taken
        finally:
            if taken:
                await _release(store, session_id, holder)

    @asynccontextmanager
    async def _held(self, store: KeepsLeases, session_id: str) -> AsyncIterator[None]:
        holder = f"{self._worker}:{secrets.token_hex(6)}"
        await self._acquire(store, session_id, holder)
        done = asyncio.Event()
        renewal = asyncio.ensure_future(self._renew(store, session_id, holder, done))
        try:
            yield
        finally:
            # Not cancelled: a renewal already sent must land before the release, or it would
            # take the lease again after it. Nothing here fails a turn that was saved.
            done.set()
            try:
                await asyncio.wait([renewal])
            finally:
                await _release(store, session_id, holder)

    async def _acquire(self, store: KeepsLeases, session_id: str, holder: str) -> None:
        """Take the lease, waiting with a backoff while another worker holds it.

        The caller's deadline cancels the wait; a lease granted just as it came is removed.
        """
        delay = FIRST_POLL
        try:
            while not await store.acquire_lease(session_id, holder, self._seconds):
                logger.debug("session runs elsewhere; waiting", extra={"session_id": session_id})
                await asyncio.sleep(delay)
                delay = min(delay * 2, MAX_POLL)
        except asyncio.CancelledError:
            await _release(store, session_id, holder)
            raise

    async def _renew(
        self, store: KeepsLeases, session_id: str, holder: str, done: asyncio.Event
    ) -> None:
        """Renew the lease every third of its length until `done` (the turn ended)."""
        while True:
            with suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self._seconds / 3)
            if done.is_set():
                return
            try:
                held = await store.acquire_lease(session_id, holder, self._seconds)
            except Exception as exc:  # the store is down: try again next time
                logger.warning(
                    "could not renew the session's lease: %s", exc, extra={"session_id": session_id}
                )
                continue
            if not held:
                logger.warning(
                    "the session's lease expired and another worker took it; this turn's save "
                    "will be a conflict if that worker saves first",
                    extra={"session_id": session_id},
                )
                return


async def _release(store: KeepsLeases, session_id: str, holder: str) -> None:
    """Remove the lease; if the store cannot be reached, it expires by itself."""
    try:
        await asyncio.shield(store.release_lease(session_id, holder))
    except Exception as exc:  # never fails a turn that was saved
        logger.warning(
            "could not release the session's lease (it expires by itself): %s",
            exc,
            extra={"session_id": session_id},
        )
