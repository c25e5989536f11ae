"""What the mixins of `SQLiteStore` (ledger, bank, leases, streams) take from the store itself.

Each mixin runs its SQL through the store's reader and writer threads and its IMMEDIATE
transaction; declaring those once here keeps the mixins from restating the store's internals.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from picoflow.stores._sqlite_worker import Gate

__all__ = ["SQLiteParts"]

_T = TypeVar("_T")


class SQLiteParts:
    """The store's workers and transaction, as its mixins call them."""

    if TYPE_CHECKING:

        async def _read(self, action: str, job: Callable[[sqlite3.Connection], _T]) -> _T: ...

        async def _write(
            self, action: str, job: Callable[[sqlite3.Connection, Gate], _T]
        ) -> _T: ...

        def _transaction(
            self, db: sqlite3.Connection, gate: Gate
        ) -> AbstractContextManager[None]: ...

    def _in_transaction(
        self, work: Callable[[sqlite3.Connection], _T]
    ) -> Callable[[sqlite3.Connection, Gate], _T]:
        """A `_write` job running `work` in one IMMEDIATE transaction."""

        def job(db: sqlite3.Connection, gate: Gate) -> _T:
            with self._transaction(db, gate):
                return work(db)

        return job
