"""MongoStore's kept stream events (O5): one document per streamed turn, TTL-indexed.

A kept stream is one document in the `<sessions>_streams` collection: `_id` the turn id, `o`
the owner, `e` the events as `[n, frame]` pairs, `end` once `done` is in, `x` the expiry.
An append is one `update_one` (`$push` with `$each`, `$set` of the new expiry), so a batch of
events costs one round trip and a reader sees it whole. MongoDB's TTL monitor deletes expired
streams (within a minute or so); reads ignore them from the moment they expire.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

from pymongo.errors import DuplicateKeyError

from picoflow.stores import _checks
from picoflow.stores._mongo_rows import date_of
from picoflow.stores._streams import (
    KeptEvent,
    KeptStream,
    check_events,
    check_turn_id,
    turn_in_use,
    unknown_turn,
)

__all__ = ["MongoStreams"]

_Collection = Any


class MongoStreams:
    """The kept-stream methods of `MongoStore`."""

    _closed: bool
    _names: tuple[str, ...]
    _streams_ready: bool = False

    if TYPE_CHECKING:

        def _collections(
            self, action: str
        ) -> AbstractAsyncContextManager[tuple[_Collection, _Collection, _Collection]]: ...

    async def _kept_streams(self, sessions: _Collection) -> _Collection:
        """The collection beside the sessions, its TTL index made once."""
        name = f"{self._names[0]}_streams"  # dates come back aware, as the sessions' do
        kept = sessions.database.get_collection(name, codec_options=sessions.codec_options)
        if not self._streams_ready:
            await kept.create_index("x", expireAfterSeconds=0)
            self._streams_ready = True
        return kept

    async def stream_open(self, turn_id: str, owner: str | None, expires_at: str, now: str) -> None:
        """Start keeping a turn's stream for `owner` until `expires_at` (O5)."""
        _checks.check_open(self, self._closed)
        check_turn_id(turn_id)
        record: dict[str, Any] = {"_id": turn_id, "o": owner, "e": [], "end": False}
        record["x"] = date_of(expires_at)
        async with self._collections(f"keep the stream of turn '{turn_id}'") as (sessions, _, _):
            kept = await self._kept_streams(sessions)
            try:
                await kept.insert_one(record)
            except DuplicateKeyError:
                raise turn_in_use(turn_id) from None

    async def stream_append(
        self, turn_id: str, events: list[KeptEvent], expires_at: str, ended: bool = False
    ) -> None:
        """Add events after the last one kept; `ended` when `done` is among them."""
        _checks.check_open(self, self._closed)
        checked = check_events(turn_id, events)
        change: dict[str, Any] = {"$set": {"x": date_of(expires_at)}}
        if ended:
            change["$set"]["end"] = True
        if checked:
            change["$push"] = {"e": {"$each": [[n, frame] for n, frame in checked]}}
        async with self._collections(f"keep the events of turn '{turn_id}'") as (sessions, _, _):
            kept = await self._kept_streams(sessions)
            written = await kept.update_one({"_id": turn_id}, change)
        if not written.matched_count:
            raise unknown_turn(turn_id)

    async def stream_read(self, turn_id: str, after: int, now: str) -> KeptStream | None:
        """The events after `after`, or None if no stream is kept for the turn."""
        _checks.check_open(self, self._closed)
        async with self._collections(f"read the stream of turn '{turn_id}'") as (sessions, _, _):
            kept = await self._kept_streams(sessions)
            stored = await kept.find_one({"_id": turn_id})
        if stored is None or stored["x"] < date_of(now):
            return None
        events = [(int(n), str(frame)) for n, frame in stored["e"] if n > after]
        expires_at = stored["x"].isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return KeptStream(stored["o"], events, bool(stored["end"]), expires_at)

    async def stream_purge(self, now: str) -> int:
        """Delete the streams that expired before `now` (the TTL monitor does it too)."""
        _checks.check_open(self, self._closed)
        async with self._collections("delete expired streams") as (sessions, _, _):
            kept = await self._kept_streams(sessions)
            gone = await kept.delete_many({"x": {"$lt": date_of(now)}})
        return int(gone.deleted_count)
