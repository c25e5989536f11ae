"""The memory bank in SQLite: a table of entries and an FTS5 index ranked by bm25 (L1, L4).

The FTS5 table is kept in step with `bank` inside the same transactions, so a search never sees
an entry the table lacks. Queries are built from words only (each quoted, as a prefix), so
nothing a user types is FTS5 syntax. Vectors are kept in `bank_vector` and, where the
connection has sqlite-vec (`picoflow[vectors]`), indexed in `bank_vec` (`_bank_vec`), changed in
the same transactions; without it the owner's vectors are scored in Python.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import sys
from array import array
from typing import Any

from picoflow.stores import _bank, _bank_vec
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
logger = logging.getLogger(__name__)
# Past this many vectors of one owner the Python scan costs tens of milliseconds a search
# (docs/benchmarks.md): say once which extra makes it an indexed search.
SLOW_SCAN = 2000
_warned = False


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
    """An owner's entries matching any word, ranked by bm25 (the best first).

    The index ranks first and only the page's entries are joined: joining every match before
    ranking cost twice as much where a query matches thousands of entries (docs/benchmarks.md).
    The index narrows to the owner by the words of the owner's name; only if that let in an
    entry of another owner whose name holds those words ("ada" in "ada@example.com") is the
    ranking done again with the owner checked exactly on every match, which costs as much
    again. Ties go to the newest (the index's later row: an edit re-indexes an entry).
    """
    match = "(" + " OR ".join('"' + word.replace('"', "") + '"*' for word in words) + ")"
    tokens = query_words(owner)
    if tokens:
        match = 'owner : "' + " ".join(tokens) + '" AND ' + match
    rows = _ranked(db, match, owner, offset + limit, exact=False)
    if not all(row[-1] for row in rows):
        rows = _ranked(db, match, owner, offset + limit, exact=True)
    return [_entry(row) for row in rows[offset:]]


def _ranked(
    db: sqlite3.Connection, match: str, owner: str, count: int, *, exact: bool
) -> list[tuple[Any, ...]]:
    """The best `count` matches as entry rows, each ending with whether it is the owner's.

    Two statements, the ranking then the entries by id: SQLite plans the one-statement join
    of the two less well (a third slower).
    """
    only = " AND owner = ?" if exact else ""
    hits = db.execute(
        f"SELECT entry_id, rank FROM bank_fts WHERE bank_fts MATCH ?{only} "
        "ORDER BY rank, bank_fts.rowid DESC LIMIT ?",
        (match, owner, count) if exact else (match, count),
    ).fetchall()
    rank = {key: score for key, score in hits}
    rows = db.execute(
        f"SELECT {_COLUMNS}, owner = ?, rowid FROM bank "
        "WHERE id IN (SELECT value FROM json_each(?))",
        (owner, json.dumps(list(rank))),
    ).fetchall()
    rows.sort(key=lambda row: (row[5], row[-1]), reverse=True)  # ties: the newest first
    rows.sort(key=lambda row: rank[row[0]])  # stable: the best rank first
    return [row[:-1] for row in rows]


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
        _bank_vec.drop(db, entry_id)
    return entry


def delete(db: sqlite3.Connection, owner: str, entry_id: str) -> bool:
    """Remove one entry of the owner; False if there was none."""
    gone = db.execute("DELETE FROM bank WHERE id = ? AND owner = ?", (entry_id, owner)).rowcount
    if gone:
        db.execute("DELETE FROM bank_fts WHERE entry_id = ?", (entry_id,))
        db.execute("DELETE FROM bank_vector WHERE entry_id = ?", (entry_id,))
        _bank_vec.drop(db, entry_id)
    return bool(gone)


def forget(db: sqlite3.Connection, owner: str) -> int:
    """Remove every entry of the owner; how many there were."""
    gone = db.execute("DELETE FROM bank WHERE owner = ?", (owner,)).rowcount
    db.execute("DELETE FROM bank_fts WHERE owner = ?", (owner,))
    db.execute("DELETE FROM bank_vector WHERE owner = ?", (owner,))
    _bank_vec.drop_owner(db, owner)
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


def set_vector(
    db: sqlite3.Connection,
    owner: str,
    entry_id: str,
    vector: list[float],
    model: str | None = None,
) -> bool:
    """Keep an entry's (unit) embedding (L4); False if the owner has no such entry.

    A vector of another model or dimension than the bank's is refused before anything is
    written (`EmbeddingsMismatchError`).
    """
    row = db.execute("SELECT 1 FROM bank WHERE id = ? AND owner = ?", (entry_id, owner)).fetchone()
    if row is None:
        return False
    _bank_vec.admit(db, model, len(vector))
    db.execute(
        "INSERT OR REPLACE INTO bank_vector (entry_id, owner, vector) VALUES (?, ?, ?)",
        (entry_id, owner, _packed(vector)),
    )
    _bank_vec.put(db, owner, entry_id, vector)
    return True


def nearest(
    db: sqlite3.Connection,
    owner: str,
    vector: list[float],
    limit: int,
    model: str | None = None,
) -> list[tuple[BankEntry, float]]:
    """The owner's `limit` entries most similar to `vector`, best first (ties: the newest).

    From the vec0 index where the connection has it, else scored in Python; either way only
    ids and vectors are read to rank, whole entries only for the ones returned.
    """
    if not _bank_vec.check(db, model, len(vector)):
        return []  # no vector kept yet
    if _bank_vec.usable(db):
        ranked = _bank_vec.knn(db, owner, vector, limit)
    else:
        ranked = _scanned(db, owner, vector, limit)
    if not ranked:
        return []
    # by id (`+owner`: not by the owner's index, which would read all of the owner's rows)
    found = db.execute(
        f"SELECT {_COLUMNS}, rowid FROM bank "
        "WHERE id IN (SELECT value FROM json_each(?)) AND +owner = ?",
        (json.dumps([key for key, _ in ranked]), owner),
    ).fetchall()
    found.sort(key=lambda row: (row[5], row[-1]), reverse=True)  # the newest first
    newest = {row[0]: (i, _entry(row)) for i, row in enumerate(found)}
    kept = sorted((pair for pair in ranked if pair[0] in newest), key=lambda p: newest[p[0]][0])
    kept.sort(key=lambda pair: -pair[1])  # stable: equal scores stay newest first
    return [(newest[key][1], score) for key, score in kept]


def _scanned(
    db: sqlite3.Connection, owner: str, vector: list[float], limit: int
) -> list[tuple[str, float]]:
    """Cosine over every vector of the owner, in Python: the path without sqlite-vec."""
    rows = db.execute(
        "SELECT v.entry_id, v.vector FROM bank_vector AS v JOIN bank AS b ON b.id = v.entry_id "
        "WHERE v.owner = ? AND b.owner = ? ORDER BY b.updated_at DESC, b.rowid DESC",
        (owner, owner),
    ).fetchall()
    global _warned
    if len(rows) > SLOW_SCAN and not _warned:
        _warned = True
        logger.warning(
            "memory bank: owner has %d vectors, scored in Python on every search; install "
            "picoflow[vectors] (sqlite-vec) for an indexed search (docs/long-term-memory.md)",
            len(rows),
        )
    return _bank.nearest(vector, ((row[0], _unpacked(row[1])) for row in rows), limit)
