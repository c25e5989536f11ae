"""MemoryStore: sessions in a dict of this process, for tests and single-process demos.

Nothing survives a restart, and two processes never see each other's sessions. Use
`SQLiteStore` for anything a person relies on.
"""

from __future__ import annotations

import json
from typing import Any

from picoflow.errors import SessionConflictError, SessionNotFoundError
from picoflow.stores import _bank, _checks, _history
from picoflow.stores._bank import BankEntry
from picoflow.stores._codec import JSONCodec
from picoflow.stores._idle import check_idle_query, idle_summary
from picoflow.stores._leases import MemoryLeases
from picoflow.stores._limits import DocumentChecker
from picoflow.stores._streams import MemoryStreams
from picoflow.stores._waiting import check_limit, summary
from picoflow.stores.base import ArchiveEntry, JSONDict

__all__ = ["MemoryStore"]


class MemoryStore(MemoryLeases, MemoryStreams):
    """Keeps sessions in process memory, with the same rules as the persistent stores (P2).

    Documents are kept as JSON text, not as the caller's objects: a caller can never change a
    stored session by mutating a dict it passed in or got back, and a value JSON cannot hold
    fails here exactly as it would in SQLite or MongoDB, so tests on this store mean something.
    Messages are encoded one by one and, for the engine's `SavedMessages` lists, their text is
    reused while the same message dict is saved again, so a save costs what the turn added, not
    what the conversation holds.

    No method awaits between reading and writing a key, so each call is atomic under asyncio:
    two concurrent saves with the same expected revision have exactly one winner (P4).
    """

    def __init__(self) -> None:
        """Start empty; no event loop is needed to construct the store."""
        self._docs: dict[str, tuple[int, _Encoded]] = {}
        self._codec = JSONCodec(capacity=None)  # every session is kept here anyway
        self._limits = DocumentChecker(capacity=None)
        # (session_id, namespace) -> {position: (message JSON, search text, compacted_at)}
        self._archive: dict[tuple[str, str], dict[int, tuple[str, str, str | None]]] = {}
        # session_id -> its revisions, oldest first: (revision, saved_at, note, encoded) (W1)
        self._revisions: dict[str, list[tuple[int, str, JSONDict, _Encoded]]] = {}
        self.archive_limit: int | None = None  # W5: entries kept per namespace, newest
        self._closed = False
        self._owner_tokens: dict[tuple[str, str], int] = {}  # (owner, day) -> tokens (O3)
        self._bank: dict[str, dict[str, str]] = {}  # owner -> entry id -> entry JSON (L1)
        self._leases: dict[str, tuple[str, float]] = {}  # O4: session id -> (holder, expiry)
        self._vectors: dict[str, dict[str, list[float]]] = {}  # owner -> entry id -> vector (L4)
        self._embedding_model: dict[str, Any] | None = None  # the bank's {"model", "dimensions"}

    def __repr__(self) -> str:
        """Show how many sessions are held, for logs and debuggers."""
        return f"MemoryStore(sessions={len(self._docs)})"

    async def create(self, doc: JSONDict, *, note: JSONDict | None = None) -> None:
        """Store a new session at revision 0; an existing id is a conflict and changes nothing.

        Raises:
            ValueError: `doc["id"]` is not a non-empty string or `doc["revision"]` is not 0.
            TypeError: the document is not plain JSON.
            DocumentLimitError: the document breaks a limit every store keeps (H7).
            SessionConflictError: a session with this id already exists.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_new_doc(doc)
        full_note = _history.check_note(note, session_id)
        self._limits.check(doc, session_id)
        text = self._codec.parts(doc, session_id)
        if session_id in self._docs:
            actual = self._docs[session_id][0]
            raise SessionConflictError(
                session_id, 0, actual, _checks.conflict_on_create_message(session_id, actual)
            )
        self._docs[session_id] = (0, text)
        self._revisions[session_id] = [(0, _history.now_stamp(), full_note, text)]

    async def load(self, session_id: str) -> JSONDict | None:
        """Return a fresh copy of the stored document, or None if there is none."""
        _checks.check_open(self, self._closed)
        stored = self._docs.get(session_id)
        return None if stored is None else _decode(stored[1])

    async def revision(self, session_id: str) -> int | None:
        """The stored revision, or None; no copy is made."""
        _checks.check_open(self, self._closed)
        stored = self._docs.get(session_id)
        return None if stored is None else stored[0]

    async def save(
        self, doc: JSONDict, expected_revision: int, *, note: JSONDict | None = None
    ) -> int:
        """Replace the session if its revision is still `expected_revision`; return the new one.

        Raises:
            ValueError: `doc["id"]` is not a string or `expected_revision` is not an int >= 0.
            TypeError: the document is not plain JSON.
            DocumentLimitError: the document breaks a limit every store keeps (H7).
            SessionNotFoundError: no session has this id.
            SessionConflictError: another writer saved first; nothing was written.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_saved_doc(doc, expected_revision)
        full_note = _history.check_note(note, session_id)
        self._limits.check(doc, session_id)
        revision = expected_revision + 1
        text = self._codec.parts({**doc, "revision": revision}, session_id)
        stored = self._docs.get(session_id)
        if stored is None:
            raise SessionNotFoundError(session_id)
        if stored[0] != expected_revision:
            raise SessionConflictError(session_id, expected_revision, stored[0])
        self._docs[session_id] = (revision, text)
        revisions = self._revisions.setdefault(session_id, [])
        revisions.append((revision, _history.now_stamp(), full_note, text))
        oldest = _history.kept([(r[0], r[1]) for r in revisions], full_note)
        while revisions[0][0] < oldest:
            revisions.pop(0)
        return revision

    async def waiting(self, limit: int = 100) -> list[JSONDict]:
        """Sessions with a pending approval or an operator, newest first (K7)."""
        _checks.check_open(self, self._closed)
        limit = check_limit(limit)
        found = [summary(_checks.decode(encoded[0])) for _, encoded in self._docs.values()]
        listed = [item for item in found if item is not None]
        listed.sort(key=lambda item: str(item["updated_at"]), reverse=True)
        return listed[:limit]

    async def idle_sessions(
        self, before: str, *, after: tuple[str, str] | None = None, limit: int = 100
    ) -> list[JSONDict]:
        """Running sessions last saved before `before` (ISO), oldest first, one page (M14).

        `after` is the `(updated_at, id)` of the previous page's last session. A scan of every
        session: this store holds one process's sessions, in memory.
        """
        _checks.check_open(self, self._closed)
        start = check_idle_query(before, after, limit)
        found = []
        for session_id, (_, encoded) in self._docs.items():
            doc = _checks.decode(encoded[0])
            stamp = doc.get("updated_at")
            if doc.get("run_status") != "running" or not isinstance(stamp, str):
                continue
            if stamp < before and (stamp, session_id) > start:
                found.append(((stamp, session_id), idle_summary(doc, session_id)))
        found.sort(key=lambda item: item[0])
        return [item for _, item in found[:limit]]

    async def history(self, session_id: str, *, limit: int | None = None) -> list[JSONDict]:
        """The session's kept revisions, newest first: what each turn was (W1)."""
        _checks.check_open(self, self._closed)
        revisions = self._revisions.get(session_id, [])
        listed = [_history.entry(r, at, note) for r, at, note, _ in reversed(revisions)]
        return listed if limit is None else listed[:limit]

    async def load_revision(self, session_id: str, revision: int) -> JSONDict | None:
        """The document exactly as `revision` saved it, or None if it is not kept (W1)."""
        _checks.check_open(self, self._closed)
        _history.check_revision(revision)
        for number, _, _, text in self._revisions.get(session_id, []):
            if number == revision:
                return _decode(text)
        return None

    async def purge(self, now: str) -> int:
        """Delete every session that expired before `now` (ISO), with all it left (W5)."""
        _checks.check_open(self, self._closed)
        gone = [
            session_id
            for session_id, (_, text) in self._docs.items()
            if _expired(_checks.decode(text[0]).get("expires_at"), now)
        ]
        for session_id in gone:
            await self.delete(session_id)
        await self.stream_purge(now)  # O5: expired kept streams too
        return len(gone)

    async def delete_owner(self, owner: str) -> int:
        """Delete every session `owner` owns, with its history and archive (W5)."""
        _checks.check_open(self, self._closed)
        owned = [
            session_id
            for session_id, (_, text) in self._docs.items()
            if _checks.decode(text[0]).get("owner") == owner
        ]
        for session_id in owned:
            await self.delete(session_id)
        return len(owned)

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its whole archive; True if a session document existed."""
        _checks.check_open(self, self._closed)
        for key in [key for key in self._archive if key[0] == session_id]:
            del self._archive[key]
        self._codec.forget(session_id)
        self._limits.forget(session_id)
        self._revisions.pop(session_id, None)
        return self._docs.pop(session_id, None) is not None

    async def archive(self, session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
        """Keep evicted messages by position; a position already archived keeps its first entry.

        The session document need not exist yet: compaction of a session's first turn archives
        before the engine creates the document.
        """
        _checks.check_open(self, self._closed)
        _checks.check_entries(session_id, namespace, entries)
        encoded = [
            (entry["position"], _checks.encode(entry["message"], session_id), entry)
            for entry in entries
        ]
        slot = self._archive.setdefault((session_id, namespace), {})
        for position, text, entry in encoded:
            found = (text, _checks.search_text(entry["message"]), entry.get("compacted_at"))
            slot.setdefault(position, found)
        if self.archive_limit is not None and slot:  # the newest `archive_limit` positions
            floor = max(slot) - self.archive_limit
            for position in [position for position in slot if position <= floor]:
                del slot[position]

    async def oldest_archived(self, session_id: str, namespace: str) -> int | None:
        """The lowest archived position (above 1: older entries were trimmed, W5), or None."""
        _checks.check_open(self, self._closed)
        slot = self._archive.get((session_id, namespace))
        return min(slot) if slot else None

    async def search_archive(
        self,
        session_id: str,
        namespace: str,
        query: str,
        *,
        page: int = 1,
        page_size: int = 10,
    ) -> list[ArchiveEntry]:
        """Entries containing every word of `query` (any case), newest first, one page."""
        _checks.check_open(self, self._closed)
        _checks.check_page(page, page_size)
        words = _checks.search_words(query)
        slot = self._archive.get((session_id, namespace), {})
        hits = [
            position
            for position, (_, text, _) in slot.items()
            if all(word in text for word in words)
        ]
        hits.sort(reverse=True)
        start = (page - 1) * page_size
        return [_entry(position, *slot[position]) for position in hits[start : start + page_size]]

    async def add_owner_tokens(self, owner: str, day: str, tokens: int) -> int:
        """Add to an owner's tokens of one day and return the new total (O3's ledger)."""
        _checks.check_open(self, self._closed)
        key = (owner, day)
        total = self._owner_tokens.get(key, 0) + tokens
        self._owner_tokens[key] = total
        return total

    async def owner_tokens(self, owner: str, day: str) -> int:
        """An owner's tokens of one day (O3)."""
        _checks.check_open(self, self._closed)
        return self._owner_tokens.get((owner, day), 0)

    # -- the long-term memory bank (L1, L4, L5) -----------------------------------------------

    async def bank_add(self, entry: BankEntry) -> BankEntry:
        """Keep a new entry (built with `stores._bank.new_entry`)."""
        _checks.check_open(self, self._closed)
        checked = _bank.checked_entry(entry)
        self._bank.setdefault(checked["owner"], {})[checked["id"]] = json.dumps(checked)
        return checked

    def _entries(self, owner: str) -> list[BankEntry]:
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        entries = [json.loads(text) for text in self._bank.get(owner, {}).values()]
        return sorted(entries, key=lambda entry: entry["updated_at"], reverse=True)

    async def bank_list(self, owner: str, *, page: int = 1, page_size: int = 50) -> list[BankEntry]:
        """An owner's entries, the most recently written first, one page."""
        _bank.check_page(page, page_size)
        return self._entries(owner)[(page - 1) * page_size : page * page_size]

    async def bank_search(
        self, owner: str, query: str, *, page: int = 1, page_size: int = 10
    ) -> list[BankEntry]:
        """An owner's entries matching any word of `query`, the most relevant first."""
        _bank.check_page(page, page_size)
        ranked = _bank.rank(self._entries(owner), _bank.query_words(query))
        return ranked[(page - 1) * page_size : page * page_size]

    async def bank_update(
        self, owner: str, entry_id: str, *, text: str | None = None, kind: str | None = None
    ) -> BankEntry | None:
        """Change an entry's text or kind; None if the owner has no entry with that id."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        text = _bank.check_text(text) if text is not None else None
        kind = _bank.check_kind(kind) if kind is not None else None
        stored = self._bank.get(owner, {}).get(entry_id)
        if stored is None:
            return None
        entry: BankEntry = json.loads(stored)
        entry["text"] = text if text is not None else entry["text"]
        entry["kind"] = kind if kind is not None else entry["kind"]
        entry["updated_at"] = _bank.stamp()
        self._bank[owner][entry_id] = json.dumps(entry)
        if text is not None:  # the old vector embeds the old text
            self._vectors.get(owner, {}).pop(entry_id, None)
        return entry

    async def bank_set_vector(
        self, owner: str, entry_id: str, vector: list[float], *, model: str | None = None
    ) -> bool:
        """Keep an entry's embedding (L4); False if the owner has no entry with that id.

        A vector of another model or dimension than the bank's is refused
        (`EmbeddingsMismatchError`).
        """
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        checked = _bank.unit(_bank.check_vector(vector))
        if entry_id not in self._bank.get(owner, {}):
            return False
        self._embedding_model = _bank.check_model(self._embedding_model, model, len(checked))
        self._vectors.setdefault(owner, {})[entry_id] = checked
        return True

    async def bank_nearest(
        self, owner: str, vector: list[float], *, limit: int = 100, model: str | None = None
    ) -> list[tuple[BankEntry, float]]:
        """The owner's `limit` entries most similar to `vector` (cosine above 0), best first."""
        query = _bank.check_vector(vector)
        if self._embedding_model is None:
            return []  # no vector kept yet
        _bank.check_model(self._embedding_model, model, len(query))
        entries = {entry["id"]: entry for entry in self._entries(owner)}  # newest first
        vectors = self._vectors.get(owner, {})
        pairs = ((key, vectors[key]) for key in entries if key in vectors)
        return [(entries[key], score) for key, score in _bank.nearest(query, pairs, limit)]

    async def bank_delete(self, owner: str, entry_id: str) -> bool:
        """Delete one entry of the owner; False if there was none."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        self._vectors.get(owner, {}).pop(entry_id, None)
        return self._bank.get(owner, {}).pop(entry_id, None) is not None

    async def bank_forget(self, owner: str) -> int:
        """Delete every entry of the owner (a right-to-be-forgotten request); how many."""
        _checks.check_open(self, self._closed)
        _bank.check_owner(owner)
        self._vectors.pop(owner, None)
        return len(self._bank.pop(owner, {}))

    async def aclose(self) -> None:
        """Drop every session; the store refuses further calls with StoreError."""
        self._closed = True
        self._docs.clear()
        self._archive.clear()
        self._revisions.clear()
        self._codec.clear()
        self._limits.clear()
        self._kept_streams = None


_Encoded = tuple[str, dict[str, list[str]]]  # (document without messages, message texts)


def _decode(encoded: _Encoded) -> JSONDict:
    skeleton_text, texts = encoded
    doc = _checks.decode(skeleton_text)
    for namespace, messages in texts.items():
        doc["memory"][namespace]["messages"] = json.loads("[" + ",".join(messages) + "]")
    return doc


def _entry(position: int, text: str, _: str, compacted_at: str | None) -> ArchiveEntry:
    """An archived message as `search_archive` returns it, stamped if it was (M16)."""
    entry: ArchiveEntry = {"position": position, "message": _checks.decode(text)}
    if compacted_at is not None:
        entry["compacted_at"] = compacted_at
    return entry


def _expired(expires_at: object, now: str) -> bool:
    """Whether an `expires_at` stamp lies before `now` (both ISO 8601 UTC, same format)."""
    return isinstance(expires_at, str) and expires_at < now
