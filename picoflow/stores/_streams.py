"""Kept stream events (O5): what a streamed turn sent, kept a while for a client that reconnects.

A streamed turn's events are written to the store as they are sent (in batches), so a client
whose connection dropped can reconnect to *any* worker with `Last-Event-ID` and get the rest.
The store sees opaque text: each event is `(n, frame)`, `n` counting from 1 within the turn
and `frame` the exact Server-Sent Events text the first client got, so a replay is
byte-for-byte the original. Kept streams are append-only and short-lived: each has an
`expires_at` (ISO 8601 UTC, moved on by every append), after which reads treat it as gone and
purges delete it.

The capability is four methods every bundled store has (`MemoryStreams` here, and mixins in
`_sqlite_streams` and `_mongo_streams`):

- `stream_open(turn_id, owner, expires_at, now)` starts a kept stream (an id in use is a
  ValueError); `owner` is the principal who may read it (H4). Stores without a TTL monitor
  delete expired streams here, at most every `PURGE_EVERY_SECONDS`.
- `stream_append(turn_id, events, expires_at, ended)` adds events after the last one; `ended`
  marks the last batch (the one with `done`). An unknown or expired turn is a ValueError.
- `stream_read(turn_id, after, now)` returns a `KeptStream` with the events after `after`, or
  None when no such stream is kept (never opened, expired, purged).
- `stream_purge(now)` deletes what expired before `now`; how many streams went.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from picoflow.stores import _checks

__all__ = [
    "KeptEvent",
    "KeptStream",
    "MemoryStreams",
    "PURGE_EVERY_SECONDS",
    "check_events",
    "check_turn_id",
    "is_turn_id",
    "purge_due",
]

KeptEvent = tuple[int, str]  # (n, the event's SSE text)

# Stores without a TTL monitor delete expired streams on a stream_open at most this often.
PURGE_EVERY_SECONDS = 60.0
_TURN_ID = re.compile(r"[A-Za-z0-9_-]{8,64}")


@dataclass(frozen=True, slots=True)
class KeptStream:
    """A kept stream as read: who may read it, the events asked for, whether `done` is in.

    `expires_at` moves on with every append, so a reader can tell a writer that still works
    (it appends at least every few seconds, events or not) from one that stopped.
    """

    owner: str | None
    events: list[KeptEvent]
    ended: bool
    expires_at: str


def is_turn_id(text: object) -> bool:
    """Whether `text` has the shape of a turn id (8 to 64 of `A-Z a-z 0-9 - _`)."""
    return isinstance(text, str) and _TURN_ID.fullmatch(text) is not None


def check_turn_id(turn_id: object) -> str:
    """A turn id fit for a kept stream, or ValueError saying what a valid one looks like."""
    if not isinstance(turn_id, str) or not is_turn_id(turn_id):
        raise ValueError(
            f"A kept stream's turn id must be 8 to 64 letters, digits, '-' or '_', got "
            f"{turn_id!r}. Use the id the server put in the stream's event ids."
        )
    return turn_id


def check_events(turn_id: str, events: object) -> list[KeptEvent]:
    """Events fit to append: a list of `(n, text)`, `n` ints counting up from 1 without gaps."""
    if not isinstance(events, list) or not all(
        isinstance(event, tuple)
        and len(event) == 2
        and isinstance(event[0], int)
        and not isinstance(event[0], bool)
        and event[0] > 0
        and isinstance(event[1], str)
        for event in events
    ):
        raise ValueError(
            f"Cannot keep events of turn '{turn_id}': give a list of (n, text) tuples, n an "
            "int from 1 and text the event's SSE text."
        )
    numbers = [n for n, _ in events]
    if numbers and numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        raise ValueError(
            f"Cannot keep events of turn '{turn_id}': their numbers must follow one another "
            f"without gaps, got {numbers}."
        )
    return events


def unknown_turn(turn_id: str) -> ValueError:
    """The error of an append to a stream that is not kept (never opened, or expired)."""
    return ValueError(
        f"No kept stream for turn '{turn_id}': it was never opened with stream_open, or it "
        "expired. Open it first, and keep streams longer than the turns take."
    )


def turn_in_use(turn_id: str) -> ValueError:
    """The error of a second `stream_open` with the same id."""
    return ValueError(
        f"A stream is already kept for turn '{turn_id}'. Give every streamed turn a new id."
    )


def purge_due(last: float) -> bool:
    """Whether `PURGE_EVERY_SECONDS` passed since `last` (a `time.monotonic()` reading)."""
    return time.monotonic() - last >= PURGE_EVERY_SECONDS


class MemoryStreams:
    """Kept streams in this process's memory: `MemoryStore`'s, and the server's fallback.

    A store of your own without the capability gets this in the server process: a client
    that reconnects to the same worker gets the rest, on another worker a 404.
    """

    _closed: bool = False
    _streams_purged: float = 0.0
    # turn id -> [owner, expires_at, events, ended]
    _kept_streams: dict[str, list[object]] | None = None

    def _streams(self) -> dict[str, list[object]]:
        _checks.check_open(self, self._closed)
        if self._kept_streams is None:
            self._kept_streams = {}
        return self._kept_streams

    async def stream_open(self, turn_id: str, owner: str | None, expires_at: str, now: str) -> None:
        """Start keeping a turn's stream for `owner` until `expires_at` (O5).

        Expired streams are deleted on the way, at most every `PURGE_EVERY_SECONDS`.
        """
        kept = self._streams()
        check_turn_id(turn_id)
        if purge_due(self._streams_purged):
            await self.stream_purge(now)
        if turn_id in kept:
            raise turn_in_use(turn_id)
        kept[turn_id] = [owner, expires_at, [], False]

    async def stream_append(
        self, turn_id: str, events: list[KeptEvent], expires_at: str, ended: bool = False
    ) -> None:
        """Add events after the last one kept; `ended` when `done` is among them."""
        record = self._streams().get(turn_id)
        checked = check_events(turn_id, events)
        if record is None:
            raise unknown_turn(turn_id)
        stored = record[2]
        assert isinstance(stored, list)
        stored.extend(checked)
        record[1] = expires_at
        record[3] = record[3] or ended

    async def stream_read(self, turn_id: str, after: int, now: str) -> KeptStream | None:
        """The events after `after`, or None if no stream is kept for the turn."""
        record = self._streams().get(turn_id)
        if record is None or str(record[1]) < now:
            return None
        owner, expires_at, stored, ended = record
        assert isinstance(stored, list)
        events = [event for event in stored if event[0] > after]
        owner = owner if isinstance(owner, str) else None
        return KeptStream(owner, events, bool(ended), str(expires_at))

    async def stream_purge(self, now: str) -> int:
        """Delete the streams that expired before `now`; how many."""
        kept = self._streams()
        self._streams_purged = time.monotonic()
        gone = [turn_id for turn_id, record in kept.items() if str(record[1]) < now]
        for turn_id in gone:
            del kept[turn_id]
        return len(gone)
