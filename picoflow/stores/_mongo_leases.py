"""MongoStore's session leases (O4): one document per leased session, with an expiry.

A mixin of `MongoStore`: its calls reach the database through `_collections`, so they share
its connection and its error translation. The leases live beside the sessions in
`<sessions>_leases`, `{"_id": session id, "holder": token, "expires_at": date}`.

Taking a lease is one `findOneAndUpdate` with `upsert`, filtered on "held by me, or expired":
a lease another holder still holds does not match, so the upsert tries to insert a second
document with the same `_id` and the unique `_id` index refuses it (a duplicate key: not
acquired). A missing lease is inserted; of two workers that race for it, one insert wins. A
TTL index on `expires_at` removes the leases of holders that died; the filter never waits for
it (MongoDB's TTL monitor runs once a minute), an expired lease is free at once.
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pymongo.errors import DuplicateKeyError

from picoflow.stores import _checks
from picoflow.stores._leases import check_lease, check_release

__all__ = ["MongoLeases"]

_Collection = Any


class MongoLeases:
    """The `acquire_lease` and `release_lease` methods of `MongoStore`."""

    _closed: bool
    _names: tuple[str, ...]
    _leases_ready = False  # whether the TTL index of the leases was made (by this store)

    if TYPE_CHECKING:

        def _collections(
            self, action: str
        ) -> AbstractAsyncContextManager[tuple[_Collection, _Collection, _Collection]]: ...

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        """Take or renew the session's lease for `seconds`; True if `holder` holds it now."""
        _checks.check_open(self, self._closed)
        seconds = check_lease(session_id, holder, seconds)
        async with self._collections(f"take the lease of session '{session_id}'") as (s, _, _):
            leases = await self._lease_collection(s)
            now = datetime.now(UTC)
            free = {"$or": [{"holder": holder}, {"expires_at": {"$lte": now}}]}
            try:
                await leases.find_one_and_update(
                    {"_id": session_id, **free},
                    {"$set": {"holder": holder, "expires_at": now + timedelta(seconds=seconds)}},
                    upsert=True,
                )
            except DuplicateKeyError:
                return False  # held by another holder whose time has not run out
        return True

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Remove the session's lease if `holder` still holds it."""
        _checks.check_open(self, self._closed)
        check_release(session_id, holder)
        action = f"release the lease of session '{session_id}'"
        async with self._collections(action) as (sessions, _, _):
            leases = await self._lease_collection(sessions)
            await leases.delete_one({"_id": session_id, "holder": holder})

    async def _lease_collection(self, sessions: _Collection) -> _Collection:
        """The leases beside the sessions, their TTL index made once."""
        leases = sessions.database.get_collection(f"{self._names[0]}_leases")
        if not self._leases_ready:
            await leases.create_index("expires_at", expireAfterSeconds=0)
            self._leases_ready = True
        return leases
