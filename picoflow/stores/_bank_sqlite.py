"""The memory bank in SQLite: a table of entries and an FTS5 index ranked by bm25 (L1, L4).

The FTS5 table is kept in step with `bank` inside the same transactions, so a search never sees
an entry the table lacks. Queries are built from words only (each quoted, as a prefix), so
nothing a user types is FTS5 syntax.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from array import array
from typing import Any

from picoflow.stores import _bank
from picoflow.stores._bank import BankEntry, query_words

__all__ = [
    "BANK_SCHEMA",
    "add",
    "list_entries",
    "search",
    "update",
    "delete",
    "forget",
    "set_vector",
    "nearest",
]

BANK_SCHEMA = """
CREATE TABLE IF NOT EXISTS bank (
    id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    kind TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    source TEXT
);
CREATE INDEX IF NOT EXISTS bank_by_owner ON bank (owner, updated_at);
CREATE VIRTUAL TABLE IF NOT EXISTS bank_fts USING fts5(
    text, entry_id UNINDEXED, owner, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS bank_vector (
    entry_id TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS bank_vector_by_owner ON bank_vector (owner);
"""

_COLUMNS = "id, owner, kind, text, created_at, updated_at, source"


def _entry(row: tuple[Any, ...]) -> BankEntry:
    return {
        "id": row[0],
        "owner": row[1],
        "kind": row[2],
        "text": row[3],
        "created_at": row[4],
        "updated_at": row[5],
        "source": json.loads(row[6]) if row[6] else None,
    }


def add(db: sqlite3.Connection, entry: BankEntry) -> None:
    """Insert an entry and its index row (the caller holds the write transaction)."""
    source = json.dumps(entry["source"]) if entry["source"] is not None else None
    db.execute(
        f"INSERT INTO bank ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            entry["id"],
            entry["owner"],
            entry["kind"],
            entry["text"],
            entry["created_at"],
            entry["updated_at"],
            source,
        ),
    )
    db.execute(
        "INSERT INTO bank_fts (text, entry_id, owner) VALUES (?, ?, ?)",
        (entry["text"], entry["id"], entry["owner"]),
    )


def list_entries(db: sqlite3.Connection, owner: str, limit: int, offset: int) -> list[BankEntry]:
    """An owner's entries, the most recently written first."""
    rows = db.execute(
        f"SELECT {_COLUMNS} FROM bank WHERE owner = ? ORDER BY updated_at DESC, rowid DESC "
        "LIMIT ? OFFSET ?",
        (owner, limit, offset),
    ).fetchall()
    return [_entry(row) for row in rows]


def search(
    db: sqlite3.Connection, owner: str, words: list[str], limit: int, offset: int
) -> list[BankEntry]:
    """An owner's entries matching any word, ranked by bm25 (the best first)."""
    match = "(" + " OR ".join('"' + word.replace('"', "") + '"*' for word in words) + ")"
    tokens = query_words(owner)
    if tokens:  # the index narrows to the owner's entries; the join checks the owner exactly
        match = 'owner : "' + " ".join(tokens) + '" AND ' + match
    rows = db.execute(
        f"SELECT {', '.join('b.' + c.strip() for c in _COLUMNS.split(','))} "
        "FROM bank_fts JOIN bank AS b ON b.id = bank_fts.entry_id "
        "WHERE bank_fts MATCH ? AND b.owner = ? "
        "ORDER BY bm25(bank_fts), b.updated_at DESC LIMIT ? OFFSET ?",
        (match, owner, limit, offset),
    ).fetchall()
    return [_entry(row) for row in rows]


def update(
    db: sqlite3.Connection, owner: str, entry_id: str, text: str | None, kind: str | None, at: str
) -> BankEntry | None:
    """Change an entry's text or kind; None if the owner has no such entry."""
    row = db.execute(
        f"SELECT {_COLUMNS} FROM bank WHERE id = ? AND owner = ?", (entry_id, owner)
    ).fetchone()
    if row is None:
        return None
    entry = _entry(row)
    entry["text"] = text if text is not None else entry["text"]
    entry["kind"] = kind if kind is not None else entry["kind"]
    entry["updated_at"] = at
    db.execute(
        "UPDATE bank SET text = ?, kind = ?, updated_at = ? WHERE id = ?",
        (entry["text"], entry["kind"], at, entry_id),
    )
    db.execute("DELETE FROM bank_fts WHERE entry_id = ?", (entry_id,))
    db.execute(
        "INSERT INTO bank_fts (text, entry_id, owner) VALUES (?, ?, ?)",
        (entry["text"], entry_id, owner),
    )
    if text is not None:  # the old vector embeds the old text
        db.execute("DELETE FROM bank_vector WHERE entry_id = ?", (entry_id,))
    return entry


def delete(db: sqlite3.Connection, owner: str, entry_id: str) -> bool:
    """Remove one entry of the owner; False if there was none."""
    gone = db.execute("DELETE FROM bank WHERE id = ? AND owner = ?", (entry_id, owner)).rowcount
    if gone:
        db.execute("DELETE FROM bank_fts WHERE entry_id = ?", (entry_id,))
        db.execute("DELETE FROM bank_vector WHERE entry_id = ?", (entry_id,))
    return bool(gone)


def forget(db: sqlite3.Connection, owner: str) -> int:
    """Remove every entry of the owner; how many there were."""
    gone = db.execute("DELETE FROM bank WHERE owner = ?", (owner,)).rowcount
    db.execute("DELETE FROM bank_fts WHERE owner = ?", (owner,))
    db.execute("DELETE FROM bank_vector WHERE owner = ?", (owner,))
    return int(gone)


def _packed(vector: list[float]) -> bytes:
    """A vector as little-endian doubles: read back 15 times faster than JSON (L4)."""
    numbers = array("d", vector)
    if sys.byteorder == "big":
        numbers.byteswap()
    return numbers.tobytes()


def _unpacked(blob: bytes) -> array[float]:
    """The doubles as an array: scored as they are, never copied into a list."""
    numbers = array("d", blob)
    if sys.byteorder == "big":
        numbers.byteswap()
    return numbers


def set_vector(db: sqlite3.Connection, owner: str, entry_id: str, vector: list[float]) -> bool:
    """Keep an entry's embedding (L4); False if the owner has no such entry."""
    row = db.execute("SELECT 1 FROM bank WHERE id = ? AND owner = ?", (entry_id, owner)).fetchone()
    if row is None:
        return False
    db.execute(
        "INSERT OR REPLACE INTO bank_vector (entry_id, owner, vector) VALUES (?, ?, ?)",
        (entry_id, owner, _packed(vector)),
    )
    return True


def nearest(
    db: sqlite3.Connection, owner: str, vector: list[float], limit: int
) -> list[tuple[BankEntry, float]]:
    """The owner's `limit` entries most similar to `vector`, best first (ties: the newest).

    Only ids and vectors are read to score; whole entries only for the ones returned.
    """
    rows = db.execute(
        "SELECT v.entry_id, v.vector FROM bank_vector AS v JOIN bank AS b ON b.id = v.entry_id "
        "WHERE v.owner = ? AND b.owner = ? ORDER BY b.updated_at DESC, b.rowid DESC",
        (owner, owner),
    ).fetchall()
    ranked = _bank.nearest(vector, ((row[0], _unpacked(row[1])) for row in rows), limit)
    if not ranked:
        return []
    marks = ", ".join("?" for _ in ranked)
    found = db.execute(
        f"SELECT {_COLUMNS} FROM bank WHERE owner = ? AND id IN ({marks})",
        (owner, *(key for key, _ in ranked)),
    ).fetchall()
    entries = {row[0]: _entry(row) for row in found}
    return [(entries[key], score) for key, score in ranked if key in entries]
