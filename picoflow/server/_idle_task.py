"""Idle compaction in the served app (M14): `create_app(..., compact_idle_every=...)`.

A served engine has no scheduler of its own; this runs `engine.compact_idle(every)` when the
app starts and then every `every`, in one task of the app's event loop, stopped before the
shutdown drains the running turns. Several workers may each run it: the session lock and the
revision check make that safe (a session compacted twice over conflicts and is skipped), only
wasteful; a single worker or a cron job is the economical choice (docs/memory.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta

from picoflow._housekeeping.idle import duration_seconds
from picoflow.engine import FlowEngine

__all__ = ["IdleCompaction"]

logger = logging.getLogger(__name__)


class IdleCompaction:
    """The app's idle-compaction loop: checked when the app is built, run while it serves."""

    def __init__(self, engine: FlowEngine, every: timedelta | float) -> None:
        """Check `every` now, so a bad setting stops `create_app`, not the first run.

        One duration for both: every `every`, the sessions idle at least `every` are
        compacted, so each is compacted between one and two periods after its last turn.
        Separate values take a loop of your own (docs/memory.md shows one).

        Raises:
            TypeError: `every` is neither a timedelta nor a number of seconds.
            ValueError: `every` is not positive.
        """
        self._engine = engine
        self._every = duration_seconds(every, "create_app(compact_idle_every=...)")
        self._older_than = every
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the loop in the running event loop (the app's lifespan calls this)."""
        self._task = asyncio.create_task(self._loop(), name="picoflow-compact-idle")

    async def stop(self) -> None:
        """Cancel the loop and wait for it: a compaction cut short saves nothing (P3)."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _loop(self) -> None:
        while True:
            try:
                report = await self._engine.compact_idle(self._older_than)
            except Exception:  # the store is down: try again next time, the app keeps serving
                logger.exception("idle compaction failed; trying again in %gs", self._every)
            else:
                logger.info(
                    "idle compaction: %d looked at, %d compacted, %d failed",
                    report["looked_at"],
                    report["compacted"],
                    len(report["failed"]),
                )
                for failure in report["failed"]:
                    logger.warning(
                        "idle compaction of session %s failed: %s",
                        failure["session_id"],
                        failure["error"],
                    )
            await asyncio.sleep(self._every)
