"""Ready and shutdown (O6): `/ready` asks the store; shutdown lets running turns finish.

A worker that is being stopped (a deploy, a scale-down) should not cut the turns it runs in
half: they are saved whole or not at all (P3), so a turn cut short is work the user loses and
sends again. So when the server shuts down, the app first stops taking turns (a new one gets
503 `shutting_down` with `Retry-After`, which a client or balancer retries on another worker),
then waits up to `grace` seconds for the running ones (a streamed turn runs in a task of its
own, so it is counted until it is saved, whether or not its client is still there), and only
then closes the engine and its store.
"""

from __future__ import annotations

import asyncio
import logging

from picoflow.errors import PicoflowError
from picoflow.server._errors import RETRY_AFTER_SECONDS, ApiError
from picoflow.stores.base import Store

__all__ = ["RunningTurns", "store_problem"]

logger = logging.getLogger(__name__)

# An id no session has (too short to be one), so the probe reads nothing but an index.
_PROBE_ID = "ready-probe"


class RunningTurns:
    """How many turns this app runs, and whether it still takes new ones."""

    def __init__(self) -> None:
        self.running = 0
        self.closing = False
        self._idle: asyncio.Event | None = None

    def check_open(self) -> None:
        """503 once shutdown has begun: another worker can take the turn."""
        if self.closing:
            raise ApiError(
                503,
                "This server is shutting down and takes no new turns; nothing was changed. "
                "Send the same request again in a few seconds (another server will take it).",
                code="shutting_down",
                retry_after=RETRY_AFTER_SECONDS,
            )

    def enter(self) -> None:
        """A turn starts (call `leave` when it has ended, whatever happened)."""
        self.running += 1
        if self._idle is not None:
            self._idle.clear()

    def leave(self) -> None:
        """A turn has ended."""
        self.running -= 1
        if self.running == 0 and self._idle is not None:
            self._idle.set()

    async def drain(self, grace: float) -> int:
        """Refuse new turns, wait up to `grace` seconds for the running ones.

        Returns how many were still running when the wait ended.
        """
        self.closing = True
        if self.running:
            logger.info("shutdown: waiting up to %gs for %d running turn(s)", grace, self.running)
            self._idle = asyncio.Event()
            try:
                await asyncio.wait_for(self._idle.wait(), grace)
            except TimeoutError:
                logger.warning(
                    "shutdown: %d turn(s) still running after the grace period of %gs; closing "
                    "anyway (they will not be saved)",
                    self.running,
                    grace,
                )
        return self.running


async def store_problem(store: Store) -> ApiError | None:
    """None if the store answers a read now; else the 503 `/ready` answers with."""
    try:
        await store.revision(_PROBE_ID)
    except PicoflowError as exc:  # StoreError: every store wraps its driver's errors
        logger.warning("readiness check: the store did not answer: %s", exc)
        return ApiError(
            503,
            "The session store is unavailable right now, so this server cannot run turns. "
            "Try again in a few seconds.",
            code="store_unavailable",
            retry_after=RETRY_AFTER_SECONDS,
        )
    return None
