"""A trigram FTS5 index over SQLite's archive, so `search_archive` no longer scans (L4).

The archive's search is substring, case-insensitive, every word required, newest first (M9's
conformance suite pins that), and FTS5's trigram tokenizer answers such queries from an index:
each word of three or more characters is a phrase the index looks up. The index serves the
selective queries, whose matches are few and which the newest-first scan would have to read the
whole archive for (a word said once, long ago, or not at all); a common query is left to the
scan, which finds its page among the newest rows at once. Every row the index finds is still
checked with the scan's `LIKE` conditions (short words included, which a trigram cannot see).
Triggers keep the index in step with the archive table in every transaction, and a file
written before the index existed is indexed once when it is opened.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from picoflow.stores._checks import decode
from picoflow.stores.base import ArchiveEntry

__all__ = [
    "ARCHIVE_INDEX_SCHEMA",
    "archive_entry",
    "search_rows",
    "ensure_archive_index",
    "few_matches",
    "match_expression",
    "MIN_INDEXED",
    "RECENT_ROWS",
]

MIN_INDEXED = 3  # characters: a trigram index finds no shorter substring
# A query matching more archived rows than this (in every session) is common: the newest-first
# scan finds a page of it sooner than the index can list every match.
SELECTIVE = 2000
# The newest positions a search reads with `LIKE` before it asks the index: a common query
# fills its page from them (a few milliseconds at most), so the index only serves rare ones.
RECENT_ROWS = 500

ARCHIVE_INDEX_SCHEMA = """
CREATE VIRTUAL TABLE IF NOT EXISTS archive_fts USING fts5(
    text, content = 'archive', content_rowid = 'rowid', tokenize = 'trigram'
);
CREATE TRIGGER IF NOT EXISTS archive_fts_insert AFTER INSERT ON archive BEGIN
    INSERT INTO archive_fts (rowid, text) VALUES (new.rowid, new.text);
END;
CREATE TRIGGER IF NOT EXISTS archive_fts_delete AFTER DELETE ON archive BEGIN
    INSERT INTO archive_fts (archive_fts, rowid, text) VALUES ('delete', old.rowid, old.text);
END;
CREATE TABLE IF NOT EXISTS picoflow_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


def archive_entry(position: int, message: str, compacted_at: str | None) -> ArchiveEntry:
    """A row of `search_rows` as `search_archive` returns it, stamped if it was (M16)."""
    entry: ArchiveEntry = {"position": position, "message": decode(message)}
    if compacted_at is not None:
        entry["compacted_at"] = compacted_at
    return entry


def ensure_archive_index(db: sqlite3.Connection) -> None:
    """Add what a file made by an older picoflow lacks: `compacted_at`, the index (once)."""
    columns = [row[1] for row in db.execute("PRAGMA table_info(archive)").fetchall()]
    if "compacted_at" not in columns:  # M16: entries archived before it carry no stamp
        try:
            db.execute("ALTER TABLE archive ADD COLUMN compacted_at TEXT")
        except sqlite3.OperationalError as exc:
            if "duplicate column" not in str(exc):  # another process added it just now
                raise
    done = db.execute("SELECT 1 FROM picoflow_meta WHERE key = 'archive_fts'").fetchone()
    if done:
        return
    with db:
        db.execute("INSERT INTO archive_fts (archive_fts) VALUES ('rebuild')")
        db.execute("INSERT OR IGNORE INTO picoflow_meta (key, value) VALUES ('archive_fts', '1')")


def few_matches(db: sqlite3.Connection, match: str) -> list[int] | None:
    """The rowids the index finds for `match`, or None when there are too many to be worth it."""
    rows = db.execute(
        "SELECT rowid FROM archive_fts WHERE archive_fts MATCH ? LIMIT ?", (match, SELECTIVE + 1)
    ).fetchall()
    return None if len(rows) > SELECTIVE else [row[0] for row in rows]


def match_expression(words: list[str]) -> str | None:
    """The FTS5 query for the words the index can look up (each a quoted phrase), or None."""
    long = [word for word in words if len(word) >= MIN_INDEXED]
    if not long:
        return None
    return " AND ".join('"' + word.replace('"', '""') + '"' for word in long)


def search_rows(
    db: sqlite3.Connection,
    session_id: str,
    namespace: str,
    words: list[str],
    page: int,
    page_size: int,
) -> list[Any]:
    """(position, message, compacted_at) rows of one page: every word, newest first (M9, L4).

    A common query finds its page among the newest rows (a bounded scan); a selective one,
    which the scan would read the whole archive for, comes from the trigram index; only a
    query that is neither scans it all.
    """
    patterns = [_like_pattern(word) for word in words]
    scan = (
        "SELECT position, message, compacted_at FROM archive WHERE session_id = ? "
        "AND namespace = ?"
        + " AND text LIKE ? ESCAPE '\\'" * len(words)
        + " ORDER BY position DESC LIMIT ? OFFSET ?"
    )
    params: list[Any] = [session_id, namespace, *patterns, page_size, (page - 1) * page_size]
    newest = db.execute(
        "SELECT MAX(position) FROM archive WHERE session_id = ? AND namespace = ?",
        (session_id, namespace),
    ).fetchone()[0]
    if newest is None:
        return []
    need = page * page_size
    recent = db.execute(
        scan.replace(" ORDER BY", " AND position > ? ORDER BY"),
        [*params[:-2], newest - RECENT_ROWS, need, 0],
    ).fetchall()
    if len(recent) >= need:
        return recent[need - page_size :]
    match = match_expression(words)
    found = few_matches(db, match) if match else None
    if found is None:
        return db.execute(scan, params).fetchall()
    if not found:
        return []
    marks = ",".join("?" * len(found))
    return db.execute(
        scan.replace(" ORDER BY", f" AND rowid IN ({marks}) ORDER BY"),
        [*params[:-2], *found, *params[-2:]],
    ).fetchall()


def _like_pattern(word: str) -> str:
    r"""A `LIKE ... ESCAPE '\'` pattern matching `word` anywhere, taken literally.

    Example: `_like_pattern("50%_off")` is `%50\%\_off%`, so a `%` or `_` the user typed
    matches itself instead of acting as a wildcard.
    """
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"
