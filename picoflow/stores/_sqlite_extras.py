"""SQLiteStore's waiting list (K7), idle sessions (M14), owner ledger (O3) and memory bank (L1-L5).

A mixin of `SQLiteStore`: the methods run on its reader and writer connections through
`_read`, `_write` and `_transaction`, so they share its locking, cancellation and errors.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, TypeVar

from picoflow.stores import _bank, _bank_sqlite, _checks
from picoflow.stores._bank import BankEntry
from picoflow.stores._idle import check_idle_query, idle_summary
from picoflow.stores._sqlite_mixin import SQLiteParts
from picoflow.stores._waiting import check_limit, summary
from picoflow.stores.base import JSONDict

if TYPE_CHECKING:
    pass

__all__ = ["EXTRAS_SCHEMA", "SQLiteExtras"]

_T = TypeVar("_T")

LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS owner_usage (
    owner TEXT NOT NULL,
    day TEXT NOT NULL,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (owner, day)
);
"""

# M14: running sessions by when they were last saved, so `idle_sessions` reads one range of
# an index that holds no finished session. The expressions must be spelled exactly as in
# `_IDLE`, or SQLite does not use the index. `json_valid` first: a row damaged outside
# picoflow must stay writable and readable (it is refused with a clear error when loaded),
# and must not stop a store from opening the file and building the index.
_UPDATED = "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.updated_at') END)"
_RUNNING = "(CASE WHEN json_valid(doc) THEN json_extract(doc, '$.run_status') END) = 'running'"
IDLE_SCHEMA = f"""
CREATE INDEX IF NOT EXISTS sessions_idle ON sessions ({_UPDATED}, id) WHERE {_RUNNING};
"""
EXTRAS_SCHEMA = LEDGER_SCHEMA + IDLE_SCHEMA

_IDLE = (
    f"SELECT id, json_extract(doc, '$.flow'), {_UPDATED}, expires_at FROM sessions "
    f"WHERE {_RUNNING} AND {_UPDATED} < ?1 AND {_UPDATED} >= ?2 "
    f"AND ({_UPDATED}, id) > (?2, ?3) ORDER BY {_UPDATED}, id LIMIT ?4"
)

_WAITING = (  # K7: a pending approval, or an operator record that is not null
    "SELECT doc FROM sessions WHERE json_extract(doc, '$.operator') IS NOT NULL OR EXISTS "
    "(SELECT 1 FROM json_each(sessions.doc, '$.approvals') AS a "
    "WHERE json_extract(a.value, '$.status') = 'pending') "
    "ORDER BY json_extract(doc, '$.updated_at') DESC LIMIT ?"
)


class SQLiteExtras(SQLiteParts):
    """The ledger and bank methods of `SQLiteStore`."""

    async def waiting(self, limit: int = 100) -> list[JSONDict]:
        """Sessions with a pending approval or an operator, newest first (K7).

        A scan of the sessions table (JSON1 functions); the messages are not read.
        """
        limit = check_limit(limit)
        rows = await self._read(
            "list the sessions that wait for a person",
            lambda db: db.execute(_WAITING, (limit,)).fetchall(),
        )
        found = [summary(_checks.decode(row[0])) for row in rows]
        return [item for item in found if item is not None]

    async def idle_sessions(
        self, before: str, *, after: tuple[str, str] | None = None, limit: int = 100
    ) -> list[JSONDict]:
        """Running sessions last saved before `before` (ISO), oldest first, one page (M14).

        `after` is the `(updated_at, id)` of the previous page's last session. One range of
        the partial index `sessions_idle`; SQLite reads the three listed fields of those rows.
        """
        start = check_idle_query(before, after, limit)
        rows = await self._read(
            "list the idle sessions",
            lambda db: db.execute(_IDLE, (before, *start, limit)).fetchall(),
        )
        return [
            idle_summary({"flow": flow, "updated_at": updated, "expires_at": expires}, key)
            for key, flow, updated, expires in rows
        ]

    async def add_owner_tokens(self, owner: str, day: str, tokens: int) -> int:
        """Add to an owner's tokens of one day and return the new total (O3's ledger).

        Rows of days before yesterday are removed on the way: the ledger only serves the daily
        limit, so it stays a few rows per owner.
        """

        def add(db: sqlite3.Connection) -> int:
            db.execute(
                "INSERT INTO owner_usage (owner, day, tokens) VALUES (?, ?, ?) "
                "ON CONFLICT (owner, day) DO UPDATE SET tokens = tokens + excluded.tokens",
                (owner, day, tokens),
            )
            db.execute("DELETE FROM owner_usage WHERE owner = ? AND day < ?", (owner, day))
            row = db.execute(
                "SELECT tokens FROM owner_usage WHERE owner = ? AND day = ?", (owner, day)
            ).fetchone()
            return int(row[0])

        return await self._write(f"count the tokens of owner '{owner}'", self._in_transaction(add))

    async def owner_tokens(self, owner: str, day: str) -> int:
        """An owner's tokens of one day (O3)."""
        row = await self._read(
            f"read the tokens of owner '{owner}'",
            lambda db: db.execute(
                "SELECT tokens FROM owner_usage WHERE owner = ? AND day = ?", (owner, day)
            ).fetchone(),
        )
        return int(row[0]) if row else 0

    # -- the long-term memory bank (L1, L4, L5) -----------------------------------------------

    async def bank_add(self, entry: BankEntry) -> BankEntry:
        """Keep a new entry (built with `stores._bank.new_entry`); indexed for search at once."""
        checked = _bank.checked_entry(entry)

        def add(db: sqlite3.Connection) -> None:
            _bank_sqlite.add(db, checked)

        await self._write(f"remember for owner '{checked['owner']}'", self._in_transaction(add))
        return checked

    async def bank_list(self, owner: str, *, page: int = 1, page_size: int = 50) -> list[BankEntry]:
        """An owner's entries, the most recently written first, one page."""
        _bank.check_owner(owner)
        _bank.check_page(page, page_size)
        offset = (page - 1) * page_size
        return await self._read(
            f"list the memory of owner '{owner}'",
            lambda db: _bank_sqlite.list_entries(db, owner, page_size, offset),
        )

    async def bank_search(
        self, owner: str, query: str, *, page: int = 1, page_size: int = 10
    ) -> list[BankEntry]:
        """An owner's entries matching any word of `query`, ranked by FTS5's bm25."""
        _bank.check_owner(owner)
        _bank.check_page(page, page_size)
        words = _bank.query_words(query)
        if not words:
            return []
        offset = (page - 1) * page_size
        return await self._read(
            f"search the memory of owner '{owner}'",
            lambda db: _bank_sqlite.search(db, owner, words, page_size, offset),
        )

    async def bank_update(
        self, owner: str, entry_id: str, *, text: str | None = None, kind: str | None = None
    ) -> BankEntry | None:
        """Change an entry's text or kind; None if the owner has no entry with that id."""
        _bank.check_owner(owner)
        text = _bank.check_text(text) if text is not None else None
        kind = _bank.check_kind(kind) if kind is not None else None
        at = _bank.stamp()

        def update(db: sqlite3.Connection) -> BankEntry | None:
            return _bank_sqlite.update(db, owner, entry_id, text, kind, at)

        action = f"edit the memory of owner '{owner}'"
        return await self._write(action, self._in_transaction(update))

    async def bank_delete(self, owner: str, entry_id: str) -> bool:
        """Delete one entry of the owner; False if there was none."""
        _bank.check_owner(owner)

        def delete(db: sqlite3.Connection) -> bool:
            return _bank_sqlite.delete(db, owner, entry_id)

        action = f"delete from the memory of owner '{owner}'"
        return await self._write(action, self._in_transaction(delete))

    async def bank_forget(self, owner: str) -> int:
        """Delete every entry of the owner (a right-to-be-forgotten request); how many."""
        _bank.check_owner(owner)

        def forget(db: sqlite3.Connection) -> int:
            return _bank_sqlite.forget(db, owner)

        action = f"forget the memory of owner '{owner}'"
        return await self._write(action, self._in_transaction(forget))

    async def bank_set_vector(
        self, owner: str, entry_id: str, vector: list[float], *, model: str | None = None
    ) -> bool:
        """Keep an entry's embedding (L4); False if the owner has no entry with that id.

        `model` names the embedding model: a bank refuses vectors of another model or
        dimension (`EmbeddingsMismatchError`) instead of mixing them.
        """
        _bank.check_owner(owner)
        checked = _bank.unit(_bank.check_vector(vector))

        def set_vector(db: sqlite3.Connection) -> bool:
            return _bank_sqlite.set_vector(db, owner, entry_id, checked, model)

        action = f"store an embedding for owner '{owner}'"
        return await self._write(action, self._in_transaction(set_vector))

    async def bank_nearest(
        self, owner: str, vector: list[float], *, limit: int = 100, model: str | None = None
    ) -> list[tuple[BankEntry, float]]:
        """The owner's `limit` entries most similar to `vector` (cosine above 0), best first.

        With `picoflow[vectors]` a k-nearest-neighbour query on the owner's partition of the
        vec0 index; without it, cosine over the owner's vectors in Python, on the reader thread
        (docs/long-term-memory.md). A query of another model or dimension than the bank's is
        refused (`EmbeddingsMismatchError`).
        """
        _bank.check_owner(owner)
        query = _bank.check_vector(vector)
        return await self._read(
            f"search the embeddings of owner '{owner}'",
            lambda db: _bank_sqlite.nearest(db, owner, query, limit, model),
        )
