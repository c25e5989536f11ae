"""Streams that survive a disconnect (O5): event ids, events kept in the store, resuming.

Every event of a streamed turn gets an SSE `id:` of `<turn id>:<n>` (n counts from 1). The
turn runs in a task of its own (`_stream`), so it ends and is saved whether or not its client
stays. While it runs, its events are held here (`LiveTurn`) for every client that follows it
on this worker, and written to the store in batches (`StreamKeeper`): one write when the
stream opens, then one for the events of each `flush_every` seconds (a batch waits that long
for more, unless `done` comes first: a quick turn is two writes in all). A silent turn still
writes an empty batch every `HEARTBEAT_SECONDS`, so a client following it from another worker
can tell a long tool call from a worker that died.

A client that lost its connection sends `GET /ai/stream/{turn id}` with `Last-Event-ID` and
gets the events after it: from this worker's memory if the turn runs here, else from the store,
polling it until `done` (`_resume`). Kept streams expire `ttl` seconds after their last write.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from collections.abc import AsyncIterator
from typing import Protocol

from picoflow._internal.seconds import is_seconds
from picoflow._internal.state import now_iso
from picoflow.errors import PicoflowError
from picoflow.stores._streams import KeptEvent, KeptStream, MemoryStreams
from picoflow.stores.base import abilities_of

__all__ = [
    "HEARTBEAT_SECONDS",
    "KEEPALIVE",
    "KEEPALIVE_SECONDS",
    "LiveTurn",
    "StreamKeeper",
    "KeptStreams",
    "beat_while_silent",
]

logger = logging.getLogger(__name__)

HEARTBEAT_SECONDS = 10.0  # a running turn writes at least this often, events or not
KEEPALIVE_SECONDS = 15.0  # a silent stream sends a comment this often (under nginx's 60 s)
# An SSE comment: every client ignores it (EventSource, the chat page), proxies see traffic.
KEEPALIVE = ": keep-alive\n\n"
DEFAULT_TTL_SECONDS = 600.0
_FLUSH_SECONDS = 0.1
_POLL_SECONDS = 0.25


class KeptStreams(Protocol):
    """How this module calls a store with the `streams` ability (`stores.base`, `_streams`)."""

    async def stream_open(
        self, turn_id: str, owner: str | None, expires_at: str, now: str
    ) -> None: ...

    async def stream_append(
        self, turn_id: str, events: list[KeptEvent], expires_at: str, ended: bool = False
    ) -> None: ...

    async def stream_read(self, turn_id: str, after: int, now: str) -> KeptStream | None: ...


class LiveTurn:
    """A streamed turn running on this worker: its frames so far, for whoever follows it."""

    def __init__(self, turn_id: str, owner: str | None) -> None:
        """Start with no frames; `owner` is the principal who may follow the turn (H4)."""
        self.turn_id = turn_id
        self.owner = owner
        self.frames: list[str] = []
        self.ended = False
        self.beats = 0  # silences so far, each a keep-alive comment for every follower
        self._changed = asyncio.Event()

    def add(self, frame: str, *, last: bool = False) -> None:
        """One more frame; `last` for `done`. Wakes everyone who waits for one."""
        self.frames.append(frame)
        self.ended = self.ended or last
        self._wake()

    def end(self) -> None:
        """No frame will come any more (the turn's events ended without `done`: a bug)."""
        self.ended = True
        self._wake()

    def beat(self) -> None:
        """The turn was silent a while: its followers send a keep-alive comment (O5)."""
        self.beats += 1
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_beyond(self, count: int, beats: int | None = None) -> None:
        """Return once there are more than `count` frames, or the turn has ended.

        With `beats`, also once a beat came after that many (`beat`).
        """
        while len(self.frames) <= count and not self.ended:
            if beats is not None and self.beats != beats:
                return
            await self._changed.wait()

    async def wait_end(self, seconds: float) -> None:
        """Return once the turn has ended, or after `seconds`, whichever comes first."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                while not self.ended:
                    await self._changed.wait()

    async def follow(self, after: int) -> AsyncIterator[str]:
        """The frames after the `after`-th, as they come, until the turn ends.

        A beat while it waits (`beat_while_silent`) sends a keep-alive comment.
        """
        sent, beats = after, self.beats
        while True:
            while sent < len(self.frames):
                sent += 1
                yield self.frames[sent - 1]
            if self.ended:
                return
            if self.beats != beats:
                beats = self.beats
                yield KEEPALIVE
                continue
            await self.wait_beyond(sent, beats)


async def beat_while_silent(live: LiveTurn, every: float) -> None:
    """Beat `live` after each `every` seconds in which it added no frame, until it ends.

    Proxies and load balancers hang up on a connection that carries nothing for a while
    (nginx after 60 s): a turn waiting on a slow model or tool would lose its clients. One
    timer per turn, checked once per period, so a turn's frames cost nothing more; a silence
    is noticed within two periods.
    """
    seen = len(live.frames)
    while not live.ended:
        await asyncio.sleep(every)
        if len(live.frames) == seen and not live.ended:
            live.beat()
        seen = len(live.frames)


class StreamKeeper:
    """This app's streamed turns: the ones running here, and the store that keeps them all.

    Args:
        store: The engine's store. One without the capability (a store of your own) keeps
            streams in this process only: resuming then works on this worker, not on others.
        ttl: Seconds a stream is kept after its last write.
        flush_every: Seconds between two writes of a running turn's events.
        poll_every: Seconds between two reads of a turn running on another worker.
        heartbeat_every: Seconds after which a silent turn writes an empty batch.
        silent_after: Seconds without a write after which a turn followed from another worker
            counts as lost (three heartbeats by default).
    """

    def __init__(
        self,
        store: object | None = None,
        ttl: float = DEFAULT_TTL_SECONDS,
        *,
        flush_every: float = _FLUSH_SECONDS,
        poll_every: float = _POLL_SECONDS,
        heartbeat_every: float = HEARTBEAT_SECONDS,
        silent_after: float = 3 * HEARTBEAT_SECONDS,
        keepalive_every: float | None = KEEPALIVE_SECONDS,
    ) -> None:
        """Keep streams in `store` if it can, else in this process."""
        if not is_seconds(ttl):
            raise ValueError(
                f"create_app(stream_ttl=...) must be a number of seconds > 0, got {ttl!r}. "
                "Keep streams at least as long as a client may take to reconnect (600 is "
                "the default)."
            )
        if keepalive_every is not None and not is_seconds(keepalive_every):
            raise ValueError(
                "create_app(stream_keepalive=...) must be a number of seconds > 0, or None to "
                f"send no keep-alive comments, got {keepalive_every!r}. Keep it under your "
                "proxy's idle timeout (nginx closes an idle connection after 60 s; 15 is the "
                "default)."
            )
        kept = abilities_of(store).streams  # asked once, here: the store keeps streams or not
        self.store: KeptStreams = kept if kept is not None else MemoryStreams()
        self.ttl = float(ttl)
        self.flush_every = flush_every
        self.poll_every = poll_every
        self.heartbeat_every = heartbeat_every
        self.silent_after = silent_after
        self.keepalive_every = None if keepalive_every is None else float(keepalive_every)
        self.live: dict[str, LiveTurn] = {}
        self.writes = 0  # store writes made, for the benchmark and the tests

    def new_turn(self, owner: str | None) -> tuple[LiveTurn, asyncio.Future[bool]]:
        """A new live turn, and the write that opens its kept stream (True once it is in).

        The write starts now and runs alongside the turn; the first frame waits for it, so a
        client never holds an id that another worker could not find.
        """
        live = LiveTurn(secrets.token_urlsafe(12), owner)
        self.live[live.turn_id] = live
        opened = asyncio.ensure_future(self._open(live))
        return live, opened

    async def _open(self, live: LiveTurn) -> bool:
        now = time.time()
        try:
            expires = _stamp(now + self.ttl)
            await self.store.stream_open(live.turn_id, live.owner, expires, _stamp(now))
        except (PicoflowError, ValueError) as exc:
            logger.warning("stream %s is not kept (a reconnect gets 404): %s", live.turn_id, exc)
            return False
        self.writes += 1
        return True

    async def keep(self, live: LiveTurn, opened: asyncio.Future[bool]) -> None:
        """Write the turn's frames as they come, in batches, until `done` is written.

        A store failure stops the keeping (logged), never the turn or its first client. The
        live turn is forgotten here once everything is in the store.
        """
        try:
            if await opened:
                await self._write_all(live)
        except (PicoflowError, ValueError) as exc:
            logger.warning("stream %s: events not kept after a store error: %s", live.turn_id, exc)
        finally:
            self.live.pop(live.turn_id, None)

    async def _write_all(self, live: LiveTurn) -> None:
        written = 0
        while True:
            try:
                async with asyncio.timeout(self.heartbeat_every):
                    await live.wait_beyond(written)
            except TimeoutError:
                pass  # nothing new: write an empty batch, the heartbeat
            else:
                await live.wait_end(self.flush_every)  # let more events come: one write for all
            batch, ended = live.frames[written:], live.ended
            events = [(written + offset, frame) for offset, frame in enumerate(batch, 1)]
            expires = _stamp(time.time() + self.ttl)
            await self.store.stream_append(live.turn_id, events, expires, ended)
            self.writes += 1
            written += len(batch)
            if ended:
                return

    async def read(self, turn_id: str, after: int) -> KeptStream | None:
        """What the store keeps of a turn after event `after` (None: not kept)."""
        return await self.store.stream_read(turn_id, after, now_iso())


def event_id(turn_id: str, n: int) -> str:
    """The SSE id of a turn's n-th event."""
    return f"{turn_id}:{n}"


def _stamp(seconds: float) -> str:
    """A Unix time as stores stamp times (ISO 8601 UTC with milliseconds and a Z)."""
    whole, millis = divmod(int(seconds * 1000), 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{millis:03d}Z"
