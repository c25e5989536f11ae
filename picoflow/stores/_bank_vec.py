"""The memory bank's vector index on SQLite: sqlite-vec's `vec0`, one partition per owner (L4).

`bank_vec` is a `vec0` virtual table keyed by entry id with the owner as its partition key, so
a k-nearest-neighbour search reads only that owner's vectors, in C, in the SQL statement. It is
an index, not the record: each vector is also kept in `bank_vector` (doubles), which is what a
connection without the extension (`_sqlite_driver`) scores in Python. Every change of a vector
(set, an edited text, a delete, forgetting an owner) changes both in the caller's transaction.

The table's dimension is fixed when it is made, so it is made with the first vector. The bank's
model and dimension are recorded in `picoflow_meta` (`bank_embeddings`): a vector or a query of
another one is refused (`_bank.check_model`). A connection without the extension cannot write
the index; if it changes vectors of a file that has one, it marks the index stale, and the
Python path answers until a connection with the extension rebuilds it (at the next vector it
writes, or when a store opens the file).
"""

from __future__ import annotations

import json
import sqlite3
import sys
from array import array
from typing import Any

from picoflow.stores import _bank
from picoflow.stores._sqlite_driver import has_index

__all__ = [
    "CHUNK_SIZE",
    "admit",
    "check",
    "drop",
    "drop_owner",
    "knn",
    "prepare",
    "put",
    "usable",
]

# vec0 keeps each partition's vectors in chunks of this many slots, allocated whole: small
# enough that a bank of a hundred entries wastes little, large enough that a bank of 10,000 is
# read in few chunks (docs/long-term-memory.md gives the size per entry).
CHUNK_SIZE = 128
_MAX_K = 4096  # vec0's own limit on k
_MODEL = "bank_embeddings"
_STALE = "bank_vec_stale"


def _recorded(db: sqlite3.Connection) -> dict[str, Any] | None:
    """The bank's model record; for a file from before records, the dimension of its vectors."""
    row = db.execute("SELECT value FROM picoflow_meta WHERE key = ?", (_MODEL,)).fetchone()
    if row is not None:
        record: dict[str, Any] = json.loads(row[0])
        return record
    old = db.execute("SELECT length(vector) FROM bank_vector LIMIT 1").fetchone()
    return {"model": None, "dimensions": int(old[0]) // 8} if old else None


def admit(db: sqlite3.Connection, model: str | None, dimensions: int) -> None:
    """Refuse a vector of another model or dimension; record the bank's model (write txn)."""
    before = _recorded(db)
    after = _bank.check_model(before, model, dimensions)
    if after != before:
        db.execute(
            "INSERT OR REPLACE INTO picoflow_meta (key, value) VALUES (?, ?)",
            (_MODEL, json.dumps(after)),
        )


def check(db: sqlite3.Connection, model: str | None, dimensions: int) -> bool:
    """Refuse a query of another model or dimension; False if the bank has no vectors yet."""
    recorded = _recorded(db)
    if recorded is None:
        return False
    _bank.check_model(recorded, model, dimensions)
    return True


def _exists(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'bank_vec'").fetchone()
    return found is not None


def _stale(db: sqlite3.Connection) -> bool:
    found = db.execute("SELECT 1 FROM picoflow_meta WHERE key = ?", (_STALE,)).fetchone()
    return found is not None


def usable(db: sqlite3.Connection) -> bool:
    """Whether a search on this connection can be answered by the index."""
    return has_index(db) and _exists(db) and not _stale(db)


def _float32(vector: list[float]) -> bytes:
    return array("f", vector).tobytes()  # vec0 reads native-order float32


def _doubles(blob: bytes) -> list[float]:
    numbers = array("d", blob)  # `bank_vector`, as `_bank_sqlite` packs it (little-endian)
    if sys.byteorder == "big":
        numbers.byteswap()
    return list(numbers)


def _ensure(db: sqlite3.Connection, dimensions: int) -> None:
    """Make the index (first vector, or a file from before it) or rebuild a stale one."""
    if _exists(db) and not _stale(db):
        return
    if not _exists(db):
        db.execute(
            "CREATE VIRTUAL TABLE bank_vec USING vec0(owner TEXT PARTITION KEY, "
            f"entry_id TEXT PRIMARY KEY, embedding FLOAT[{dimensions}] distance_metric=cosine, "
            f"chunk_size={CHUNK_SIZE})"
        )
    else:
        db.execute("DELETE FROM bank_vec")
    rows = db.execute("SELECT owner, entry_id, vector FROM bank_vector").fetchall()
    db.executemany(
        "INSERT INTO bank_vec (owner, entry_id, embedding) VALUES (?, ?, ?)",
        [(owner, key, _float32(_doubles(blob))) for owner, key, blob in rows],
    )
    db.execute("DELETE FROM picoflow_meta WHERE key = ?", (_STALE,))


def _changed_without_index(db: sqlite3.Connection) -> bool:
    """After a vector change: True if this connection maintains the index (it has vec0)."""
    if has_index(db):
        return True
    if _exists(db):  # made by a connection with the extension: it is now behind
        db.execute("INSERT OR IGNORE INTO picoflow_meta (key, value) VALUES (?, '1')", (_STALE,))
    return False


def put(db: sqlite3.Connection, owner: str, entry_id: str, vector: list[float]) -> None:
    """Index an entry's (unit) vector, replacing the one it had (the caller's transaction)."""
    if not _changed_without_index(db):
        return
    _ensure(db, len(vector))
    db.execute("DELETE FROM bank_vec WHERE entry_id = ?", (entry_id,))
    db.execute(
        "INSERT INTO bank_vec (owner, entry_id, embedding) VALUES (?, ?, ?)",
        (owner, entry_id, _float32(vector)),
    )


def drop(db: sqlite3.Connection, entry_id: str) -> None:
    """Remove an entry's vector from the index (its text changed, or it was deleted)."""
    if _changed_without_index(db) and _exists(db):
        db.execute("DELETE FROM bank_vec WHERE entry_id = ?", (entry_id,))


def drop_owner(db: sqlite3.Connection, owner: str) -> None:
    """Remove every vector of the owner; vec0 then frees the owner's chunks."""
    if _changed_without_index(db) and _exists(db):
        db.execute("DELETE FROM bank_vec WHERE owner = ?", (owner,))


def knn(
    db: sqlite3.Connection, owner: str, vector: list[float], limit: int
) -> list[tuple[str, float]]:
    """The ids of the owner's `limit` nearest vectors and their cosine (above 0), best first."""
    if limit < 1:
        return []
    rows = db.execute(
        "SELECT entry_id, distance FROM bank_vec WHERE embedding MATCH ? AND k = ? AND owner = ?",
        (_float32(_bank.unit(vector)), min(limit, _MAX_K), owner),
    ).fetchall()
    # a zero vector (an embedding of nothing the model knows) has no cosine: None
    scored = [(str(key), 1.0 - float(gap)) for key, gap in rows if gap is not None]
    return [(key, score) for key, score in scored if score > 0.0]


def prepare(db: sqlite3.Connection) -> None:
    """When a store opens the file: make or rebuild the index if vectors are kept without it."""
    if not has_index(db) or (_exists(db) and not _stale(db)):
        return
    db.execute("BEGIN IMMEDIATE")  # another process may be opening the file too
    try:
        recorded = _recorded(db)
        if recorded is not None:
            _ensure(db, int(recorded["dimensions"]))
        db.execute("COMMIT")
    finally:
        if db.in_transaction:
            db.execute("ROLLBACK")
