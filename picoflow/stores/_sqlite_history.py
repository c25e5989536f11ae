"""SQLiteStore's history (W1, W5): a revision row per save, and message versions.

A full copy of the document per save would cost a long conversation its whole size every turn
(400 KB at turn 300 of HotelFlow); a chain of deltas with periodic full copies makes reading an
old revision walk the chain. Instead a revision is stored as two parts, each written once:

- `revisions`: one row per save, with the document minus its messages (a few KB: steps,
  context, usage), the number of messages of each namespace, and the note of the turn;
- `message_versions`: a message text is written once, with the revision that wrote it, when
  it first appears at its position (appended, or a changed system slot, or a full rewrite).

A revision's messages are, per position below its count, the version written by the latest
revision at or before it. A save therefore writes what the turn added (the same rows the
`messages` table gets) plus one small row, in the same transaction as the session row, and
any revision is read with one query, without walking a chain. Retention records in each
revision row where the kept revisions start (`kept_from`; reads honour it at once), and every
`_GC_EVERY` revisions deletes the revision rows before it and the message versions no kept
revision can read any more.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from picoflow.errors import StoreError
from picoflow.stores import _checks, _history
from picoflow.stores._codec import JSONCodec
from picoflow.stores._limits import DocumentChecker
from picoflow.stores._sqlite_rows import Plan, RowMemory, fill
from picoflow.stores._sqlite_worker import Gate
from picoflow.stores.base import JSONDict

__all__ = [
    "HISTORY_SCHEMA",
    "SQLiteHistory",
    "delete_history",
    "history",
    "load_revision",
    "record",
]

# `revisions` is a rowid table (issue 39): each row holds a whole session document, and in a
# WITHOUT ROWID table a row over about 1 KB spills into overflow pages, so every save wrote two
# or three pages for it and the insert cost three times as much. Files made before keep their
# WITHOUT ROWID table; the same statements work on both.
HISTORY_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
    session_id TEXT NOT NULL,
    revision INTEGER NOT NULL,
    saved_at TEXT NOT NULL,
    note TEXT NOT NULL,
    doc TEXT NOT NULL,
    counts TEXT NOT NULL,
    kept_from INTEGER NOT NULL,
    PRIMARY KEY (session_id, revision)
);
CREATE TABLE IF NOT EXISTS message_versions (
    session_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    position INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, namespace, position, revision)
) WITHOUT ROWID;
"""

_GC_EVERY = 16  # revisions between two deletes of rows no kept revision reads any more
# Where the kept revisions of session ?1 start, as its newest revision row recorded it.
_KEPT_FROM = "SELECT kept_from FROM revisions WHERE session_id = ?1 ORDER BY revision DESC LIMIT 1"


def record(
    db: sqlite3.Connection,
    session_id: str,
    revision: int,
    text: str,
    texts: dict[str, list[str]],
    plan: Plan,
    note: JSONDict,
) -> None:
    """Write revision `revision` (inside the save's transaction) and apply retention."""
    counts = json.dumps({namespace: len(items) for namespace, items in texts.items()})
    kept_note = json.dumps({name: note[name] for name in _history.NOTE_FIELDS})
    oldest = revision - int(note["keep"]) + 1
    if note["max_age"] is not None:
        oldest = max(oldest, _oldest_young(db, session_id, revision, note))
    # The newest row says where the kept revisions start; the rows before that go every
    # `_GC_EVERY` revisions, so most commits touch no old page (W1: what a save costs).
    db.execute(
        "INSERT OR REPLACE INTO revisions "
        "(session_id, revision, saved_at, note, doc, counts, kept_from) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (session_id, revision, _history.now_stamp(), kept_note, text, counts, max(oldest, 0)),
    )
    if plan.rows:
        db.executemany(
            "INSERT OR REPLACE INTO message_versions "
            "(session_id, namespace, position, revision, message) VALUES (?, ?, ?, ?, ?)",
            [(session_id, ns, position, revision, item) for ns, position, item in plan.rows],
        )
    if oldest > 0 and revision % _GC_EVERY == 0:
        db.execute(
            "DELETE FROM revisions WHERE session_id = ? AND revision < ?", (session_id, oldest)
        )
        _sweep(db, session_id, oldest)


def _oldest_young(db: sqlite3.Connection, session_id: str, revision: int, note: JSONDict) -> int:
    rows = db.execute(
        "SELECT revision, saved_at FROM revisions WHERE session_id = ? ORDER BY revision",
        (session_id,),
    ).fetchall()
    return _history.kept([*rows, (revision, _history.now_stamp())], note)


def _sweep(db: sqlite3.Connection, session_id: str, oldest: int) -> None:
    """Delete message versions that no revision from `oldest` on reads."""
    db.execute(
        "DELETE FROM message_versions WHERE session_id = ?1 AND revision < ?2 AND EXISTS ("
        "SELECT 1 FROM message_versions AS newer WHERE newer.session_id = ?1 "
        "AND newer.namespace = message_versions.namespace "
        "AND newer.position = message_versions.position "
        "AND newer.revision > message_versions.revision AND newer.revision <= ?2)",
        (session_id, oldest),
    )
    longest: dict[str, int] = {}
    for (counts,) in db.execute(
        "SELECT counts FROM revisions WHERE session_id = ?", (session_id,)
    ).fetchall():
        for namespace, count in json.loads(counts).items():
            longest[namespace] = max(longest.get(namespace, 0), count)
    namespaces = [
        row[0]
        for row in db.execute(
            "SELECT DISTINCT namespace FROM message_versions WHERE session_id = ?", (session_id,)
        ).fetchall()
    ]
    for namespace in namespaces:
        db.execute(
            "DELETE FROM message_versions WHERE session_id = ? AND namespace = ? AND position >= ?",
            (session_id, namespace, longest.get(namespace, 0)),
        )


def history(db: sqlite3.Connection, session_id: str, limit: int | None) -> list[JSONDict]:
    """The kept revisions of a session, newest first."""
    rows = db.execute(
        "SELECT revision, saved_at, note FROM revisions WHERE session_id = ?1 "
        f"AND revision >= ({_KEPT_FROM}) ORDER BY revision DESC LIMIT ?2",
        (session_id, -1 if limit is None else limit),
    ).fetchall()
    return [_history.entry(int(r), at, json.loads(note)) for r, at, note in rows]


def load_revision(
    db: sqlite3.Connection, session_id: str, revision: int
) -> tuple[str, list[tuple[str, str]]] | None:
    """A revision's document text and its (namespace, message) rows in order, in one snapshot."""
    db.execute("BEGIN")
    try:
        row = db.execute(
            "SELECT doc, counts FROM revisions WHERE session_id = ?1 AND revision = ?2 "
            f"AND revision >= ({_KEPT_FROM})",
            (session_id, revision),
        ).fetchone()
        if row is None:
            return None
        counts: dict[str, int] = json.loads(row[1])
        found = db.execute(
            "SELECT namespace, position, message FROM message_versions AS v "
            "WHERE session_id = ?1 AND revision <= ?2 AND revision = ("
            "SELECT MAX(revision) FROM message_versions AS w WHERE w.session_id = ?1 "
            "AND w.namespace = v.namespace AND w.position = v.position AND w.revision <= ?2) "
            "ORDER BY namespace, position",
            (session_id, revision),
        ).fetchall()
    finally:
        db.execute("ROLLBACK")
    rows = [(ns, text) for ns, position, text in found if position < counts.get(ns, 0)]
    _check_complete(session_id, revision, counts, rows)
    return row[0], rows


def _check_complete(
    session_id: str, revision: int, counts: dict[str, int], rows: list[tuple[str, Any]]
) -> None:
    have: dict[str, int] = {}
    for namespace, _ in rows:
        have[namespace] = have.get(namespace, 0) + 1
    if any(have.get(namespace, 0) != count for namespace, count in counts.items()):
        raise StoreError(
            f"Revision {revision} of session '{session_id}' cannot be rebuilt: some of its "
            "message versions are missing, so the history tables were changed outside "
            "picoflow. Restore the file from a backup, or ignore this revision.",
            retryable=False,
        )


def trim_archive(
    db: sqlite3.Connection, session_id: str, namespace: str, limit: int | None
) -> None:
    """Keep the archived messages of the newest `limit` positions of a namespace (W5).

    Evicted messages take consecutive positions, so that is the newest `limit` of them; one
    indexed range delete, whatever the archive holds. Runs in the caller's write.
    """
    if limit is None:
        return
    db.execute(
        "DELETE FROM archive WHERE session_id = ?1 AND namespace = ?2 AND position <= ("
        "SELECT MAX(position) FROM archive WHERE session_id = ?1 AND namespace = ?2) - ?3",
        (session_id, namespace, limit),
    )


def delete_history(db: sqlite3.Connection, session_ids: list[str]) -> None:
    """Remove every trace of these sessions (inside the caller's transaction)."""
    for table in ("sessions", "messages", "archive", "revisions", "message_versions"):
        column = "id" if table == "sessions" else "session_id"
        db.executemany(f"DELETE FROM {table} WHERE {column} = ?", [(s,) for s in session_ids])


class SQLiteHistory:
    """SQLiteStore's history methods (W1, W5); the store supplies reads, writes, transactions."""

    _codec: JSONCodec
    _limits: DocumentChecker
    _rows: RowMemory

    # SQLiteStore's own: a read on a reader thread, a write transaction, BEGIN IMMEDIATE.
    _read: Callable[..., Awaitable[Any]]
    _write: Callable[..., Awaitable[Any]]
    _transaction: Callable[[sqlite3.Connection, Gate], AbstractContextManager[None]]

    if TYPE_CHECKING:

        async def stream_purge(self, now: str) -> int: ...  # O5, `_sqlite_streams`

    async def history(self, session_id: str, *, limit: int | None = None) -> list[JSONDict]:
        """The session's kept revisions, newest first: what each turn was (W1)."""
        listed: list[JSONDict] = await self._read(
            f"read the history of session '{session_id}'",
            lambda db: history(db, session_id, limit),
        )
        return listed

    async def load_revision(self, session_id: str, revision: int) -> JSONDict | None:
        """The document exactly as `revision` saved it, or None if it is not kept (W1)."""
        _history.check_revision(revision)
        stored = await self._read(
            f"load revision {revision} of session '{session_id}'",
            lambda db: load_revision(db, session_id, revision),
        )
        if stored is None:
            return None
        return fill(_checks.decode(stored[0], session_id), stored[1], session_id)

    async def oldest_archived(self, session_id: str, namespace: str) -> int | None:
        """The lowest archived position (above 1: older entries were trimmed, W5), or None."""
        oldest: int | None = await self._read(
            f"read the archive of session '{session_id}'",
            lambda db: db.execute(
                "SELECT MIN(position) FROM archive WHERE session_id = ? AND namespace = ?",
                (session_id, namespace),
            ).fetchone()[0],
        )
        return oldest

    async def purge(self, now: str) -> int:
        """Delete every session that expired before `now` (ISO), with all it left (W5).

        Expired kept streams (O5) go too.
        """
        gone = await self._delete_where(
            "purge expired sessions",
            "SELECT id FROM sessions WHERE expires_at IS NOT NULL AND expires_at < ?",
            now,
        )
        await self.stream_purge(now)
        return gone

    async def delete_owner(self, owner: str) -> int:
        """Delete every session `owner` owns, with its history and archive (W5)."""
        return await self._delete_where(
            "delete the sessions of an owner",
            "SELECT id FROM sessions WHERE json_extract(doc, '$.owner') = ?",
            owner,
        )

    async def _delete_where(self, action: str, select: str, value: str) -> int:
        def delete(db: sqlite3.Connection, gate: Gate) -> list[str]:
            with self._transaction(db, gate):
                ids = [row[0] for row in db.execute(select, (value,)).fetchall()]
                delete_history(db, ids)
                if ids:  # L4: the text index keeps deleted terms until its segments merge
                    db.execute("INSERT INTO archive_fts (archive_fts) VALUES ('optimize')")
                return ids

        ids = await self._write(action, delete)
        for session_id in ids:
            self._codec.forget(session_id)
            self._limits.forget(session_id)
            self._rows.forget(session_id)
        return len(ids)
