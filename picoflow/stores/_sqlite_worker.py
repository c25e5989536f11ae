"""The threads SQLiteStore runs its SQL on: one writer, a few readers, each with its own connection.

sqlite3 blocks, so a call that may wait (for the write lock, for the disk) runs on a thread;
what never waits runs on the event loop instead (`_sqlite_loop`). A call is one job: a plain
function that gets the thread's connection and runs all of its statements (a whole transaction)
in one trip, instead of one trip per statement. The writer and the readers are separate threads
with separate connections, so a write that waits for the file's write lock (another process
holds it) never holds up a read: in WAL mode readers do not wait for writers.

A job runs to its end even if the coroutine awaiting it is cancelled (a thread cannot be
stopped); write jobs look at their `Gate` before they commit and roll back instead, and
`interrupt()` cuts short a wait for the lock. Either way nothing is half-written.
"""

from __future__ import annotations

import asyncio
import itertools
import queue
import sqlite3
import threading
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["Gate", "Worker", "ReaderPool", "WouldWait"]

_T = TypeVar("_T")
Connect = Callable[[], sqlite3.Connection]
_Job = tuple[
    Callable[[], None],
    Callable[[sqlite3.Connection], Any],
    asyncio.Future[Any],
    asyncio.AbstractEventLoop,
]


class Gate:
    """What a write job must know of its caller.

    `cancelled` is set by a caller who stopped waiting: the job rolls back instead of
    committing. `may_wait` is False for a job run on the event loop, which must not wait for
    the write lock: it raises `WouldWait` instead, and the caller runs it on the writer thread.
    """

    __slots__ = ("cancelled", "may_wait")

    def __init__(self, *, may_wait: bool = True) -> None:
        self.cancelled = False
        self.may_wait = may_wait


class WouldWait(Exception):
    """A write on the event loop found the write lock taken; nothing was done."""


class Worker:
    """One thread and one connection, opened in the thread on its first job.

    Args:
        connect: Opens the connection (runs on the worker's thread).
        name: The thread's name, for debuggers and thread dumps.
    """

    def __init__(self, connect: Connect, name: str) -> None:
        """Start nothing yet: the thread starts with the first job."""
        self._connect = connect
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._connection: sqlite3.Connection | None = None
        self._stopped = False
        self.pending = 0

    async def run(
        self, job: Callable[[sqlite3.Connection], _T], check: Callable[[], None] = lambda: None
    ) -> _T:
        """Run `check()`, then `job(connection)` on the thread; their exceptions are raised here.

        `check` runs before the connection is opened too: it may refuse a file that must not be
        opened at all.
        """
        if self._stopped:
            raise RuntimeError(f"{self._name} was stopped; its store was closed.")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[_T] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._main, name=self._name, daemon=True)
            self._thread.start()
        self.pending += 1
        self._jobs.put((check, job, future, loop))
        try:
            return await future
        finally:
            self.pending -= 1

    def interrupt(self) -> None:
        """Abort the statement running now (a wait for the lock), if any; safe from any thread.

        SQLite ignores an interrupt that arrives when no statement runs, so a later job is
        never hit by it.
        """
        connection = self._connection
        if connection is not None:
            connection.interrupt()

    async def stop(self) -> None:
        """Let the queued jobs finish, close the connection and end the thread."""
        self._stopped = True
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(None)
            await asyncio.to_thread(thread.join)

    def _main(self) -> None:
        try:
            while (item := self._jobs.get()) is not None:
                check, job, future, loop = item
                try:
                    check()
                    if self._connection is None:
                        self._connection = self._connect()
                    outcome: tuple[Any, BaseException | None] = (job(self._connection), None)
                except BaseException as exc:  # handed to the awaiting coroutine
                    outcome = (None, exc)
                try:
                    loop.call_soon_threadsafe(_settle, future, *outcome)
                except RuntimeError:  # the loop is closed: nobody waits for the result
                    pass
        finally:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.cancelled():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class ReaderPool:
    """A few reader workers; a read goes to an idle one, else to the next in turn."""

    def __init__(self, connect: Connect, size: int, name: str) -> None:
        """Create `size` workers; their threads start on their first job."""
        self._workers = [Worker(connect, f"{name}-reader-{i}") for i in range(size)]
        self._turn = itertools.cycle(self._workers)

    async def run(
        self, job: Callable[[sqlite3.Connection], _T], check: Callable[[], None] = lambda: None
    ) -> _T:
        """Run a read job on one reader's connection (see `Worker.run`)."""
        idle = next((w for w in self._workers if not w.pending), None)
        return await (idle or next(self._turn)).run(job, check)

    async def stop(self) -> None:
        """Stop every reader."""
        for worker in self._workers:
            await worker.stop()
