"""SQLiteStore's `messages` table: one row per message, so a save writes what the turn added.

A session row holds the document with each namespace's `messages` left empty; the messages are
rows of their own, keyed by (session, namespace, position). The engine saves the whole session
every turn but hands over the messages of earlier turns as the very same dicts (`SavedMessages`),
so the store remembers, per session, the revision it last wrote and the message objects it
wrote then. A save against that very revision writes only the positions whose object changed
(the new messages, and the system slot when the prompt changed) and deletes positions beyond
the new end; anything else (another process saved in between, a plain list, a session this
store never wrote) rewrites the session's rows in full. The rows are written in the same
transaction as the compare-and-set of the session row, and only when it matched, so a plan
made from a stale memory is never applied.

Documents written before this table existed keep their messages in the session row; a load
uses a namespace's row messages only when the document's own list is empty, so such documents
read as before and move to rows on their next save.
"""

from __future__ import annotations

import json
import sqlite3
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from picoflow.errors import StoreError
from picoflow.stores.base import REMEMBERED_SESSIONS, JSONDict, SavedMessages, unchanged

__all__ = ["MESSAGES_SCHEMA", "Plan", "RowMemory", "apply", "fill"]

MESSAGES_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    namespace TEXT NOT NULL,
    position INTEGER NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (session_id, namespace, position)
) WITHOUT ROWID;
"""


@dataclass(slots=True)
class Plan:
    """The row writes of one save: everything (`full`), or per namespace a cut and new rows."""

    full: bool
    cuts: list[tuple[str, int]] = field(default_factory=list)  # delete positions >= this
    rows: list[tuple[str, int, str]] = field(default_factory=list)  # (namespace, position, text)
    gone: list[str] = field(default_factory=list)  # namespaces no longer in the document


class RowMemory:
    """Per session: the revision this store last wrote, and the message objects it wrote then.

    Args:
        capacity: How many recently saved sessions to remember.
    """

    def __init__(self, capacity: int = REMEMBERED_SESSIONS) -> None:
        """Start with nothing remembered."""
        self._capacity = capacity
        self._sessions: OrderedDict[str, tuple[int, dict[str, list[Any]]]] = OrderedDict()

    def plan(
        self,
        session_id: str,
        expected_revision: int | None,
        memory: Any,
        texts: dict[str, list[str]],
    ) -> Plan:
        """The rows to write for a save against `expected_revision` (None: a create)."""
        known = self._sessions.get(session_id)
        if expected_revision is None or known is None or known[0] != expected_revision:
            return _full(texts)
        previous = known[1]
        plan = Plan(full=False, gone=[ns for ns in previous if ns not in texts])
        for namespace, namespace_texts in texts.items():
            messages = memory[namespace]["messages"]
            old = previous.get(namespace)
            if old is None or not isinstance(messages, SavedMessages):
                plan.cuts.append((namespace, 0))
                plan.rows += [(namespace, i, text) for i, text in enumerate(namespace_texts)]
                continue
            changed = _changed_positions(messages, old)
            plan.rows += [(namespace, i, namespace_texts[i]) for i in changed]
            if len(old) > len(messages):
                plan.cuts.append((namespace, len(messages)))
        return plan

    def written(self, session_id: str, revision: int, memory: dict[str, Any]) -> None:
        """Remember what a successful save wrote (only `SavedMessages` lists can be trusted)."""
        lists: dict[str, list[Any]] = {
            namespace: entry["messages"]  # read-only, so kept as it is
            for namespace, entry in memory.items()
            if isinstance(entry["messages"], SavedMessages)
        }
        if len(lists) != len(memory):
            self._sessions.pop(session_id, None)
            return
        self._sessions[session_id] = (revision, lists)
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > self._capacity:
            self._sessions.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (deleted, or a write whose outcome is unknown)."""
        self._sessions.pop(session_id, None)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._sessions.clear()


def _full(texts: dict[str, list[str]]) -> Plan:
    rows = [(ns, i, text) for ns, ns_texts in texts.items() for i, text in enumerate(ns_texts)]
    return Plan(full=True, rows=rows)


def _changed_positions(messages: list[Any], old: list[Any]) -> list[int]:
    """Positions whose object is not the one written last time.

    The system slot (0) on its own, then everything from the first difference after it
    (histories grow by appending; see `unchanged`).
    """
    if not messages:
        return []
    keep, slot_kept = unchanged(messages, old)
    return ([] if slot_kept else [0]) + list(range(max(keep, 1), len(messages)))


def apply(db: sqlite3.Connection, session_id: str, plan: Plan) -> None:
    """Write a plan's rows (inside the caller's transaction)."""
    if plan.full:
        db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
    for namespace in plan.gone:
        db.execute(
            "DELETE FROM messages WHERE session_id = ? AND namespace = ?", (session_id, namespace)
        )
    for namespace, start in plan.cuts:
        db.execute(
            "DELETE FROM messages WHERE session_id = ? AND namespace = ? AND position >= ?",
            (session_id, namespace, start),
        )
    if plan.rows:
        db.executemany(
            "INSERT OR REPLACE INTO messages (session_id, namespace, position, message) "
            "VALUES (?, ?, ?, ?)",
            [(session_id, ns, position, text) for ns, position, text in plan.rows],
        )


def fill(doc: JSONDict, rows: list[tuple[str, str]], session_id: str) -> JSONDict:
    """Put the (namespace, message text) rows, in position order, into a loaded document.

    Raises:
        StoreError: a row is not JSON (changed outside picoflow); retrying cannot help.
    """
    grouped: dict[str, list[str]] = {}
    for namespace, text in rows:
        grouped.setdefault(namespace, []).append(text)
    memory = doc.get("memory")
    for namespace, texts in grouped.items():
        entry = memory.get(namespace) if isinstance(memory, dict) else None
        if isinstance(entry, dict) and entry.get("messages") == []:
            try:
                entry["messages"] = json.loads("[" + ",".join(texts) + "]")
            except ValueError:  # JSONDecodeError, or text that is not UTF-8
                raise StoreError(
                    f"The stored messages of session '{session_id}', namespace '{namespace}' "
                    "are damaged: they are not JSON, so they were changed outside picoflow. "
                    "Delete the session or restore it from a backup.",
                    retryable=False,
                ) from None
    return doc
