"""SQLiteStore's session leases (O4): one row per leased session, taken in one transaction.

A mixin of `SQLiteStore`. Each call is one `BEGIN IMMEDIATE` transaction through the store's
`_write` (so it shares its locking, cancellation and errors); taking the lease is one upsert
that only overwrites a row whose holder is this one or whose expiry has passed, so of two
processes that race for a free lease exactly one gets it. Expiry is wall-clock time
(`time.time()`, seconds): every process that shares the file runs on the same machine.

The table is made on first use (`CREATE TABLE IF NOT EXISTS` inside the first lease
transaction), so files written before leases existed get it too and stores that never lease
never have it. A released lease is deleted; the row of a holder that died stays until the
next turn of that session takes it over.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from picoflow.stores._leases import check_lease, check_release
from picoflow.stores._sqlite_mixin import SQLiteParts

if TYPE_CHECKING:
    from picoflow.stores._sqlite_worker import Gate

__all__ = ["SQLiteLeases"]

_T = TypeVar("_T")

LEASE_SCHEMA = """
CREATE TABLE IF NOT EXISTS session_leases (
    session_id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL
)
"""

_TAKE = (
    "INSERT INTO session_leases (session_id, holder, expires_at) VALUES (?, ?, ?) "
    "ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, "
    "expires_at = excluded.expires_at "
    "WHERE session_leases.holder = excluded.holder OR session_leases.expires_at <= ?"
)
_RELEASE = "DELETE FROM session_leases WHERE session_id = ? AND holder = ?"


class SQLiteLeases(SQLiteParts):
    """The `acquire_lease` and `release_lease` methods of `SQLiteStore`."""

    _lease_table = False  # whether this store made (or found) the table already

    async def acquire_lease(self, session_id: str, holder: str, seconds: float) -> bool:
        """Take or renew the session's lease for `seconds`; True if `holder` holds it now."""
        seconds = check_lease(session_id, holder, seconds)

        def take(db: sqlite3.Connection) -> bool:
            now = time.time()
            return bool(db.execute(_TAKE, (session_id, holder, now + seconds, now)).rowcount)

        return await self._write(f"take the lease of session '{session_id}'", self._lease_job(take))

    async def release_lease(self, session_id: str, holder: str) -> None:
        """Remove the session's lease if `holder` still holds it."""
        check_release(session_id, holder)

        def release(db: sqlite3.Connection) -> None:
            db.execute(_RELEASE, (session_id, holder))

        await self._write(f"release the lease of session '{session_id}'", self._lease_job(release))

    def _lease_job(
        self, work: Callable[[sqlite3.Connection], _T]
    ) -> Callable[[sqlite3.Connection, Gate], _T]:
        """A `_write` job running `work` in one IMMEDIATE transaction, the table made first."""

        def job(db: sqlite3.Connection, gate: Gate) -> _T:
            with self._transaction(db, gate):
                if not self._lease_table:
                    db.execute(LEASE_SCHEMA)
                result = work(db)
            if not gate.cancelled:  # committed: the table is there from now on
                self._lease_table = True
            return result

        return job
