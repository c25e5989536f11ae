"""MemoryStore: sessions in a dict of this process, for tests and single-process demos.

Nothing survives a restart, and two processes never see each other's sessions. Use
`SQLiteStore` for anything a person relies on.
"""

from __future__ import annotations

import json
from typing import Any

from picoflow.errors import SessionConflictError, SessionNotFoundError
from picoflow.stores import _checks
from picoflow.stores.base import ArchiveEntry, JSONDict, SavedMessages, encode_new

__all__ = ["MemoryStore"]


class MemoryStore:
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
        self._codecs: dict[str, _MessageCodec] = {}
        # (session_id, namespace) -> {position: (message JSON, lowercased search text)}
        self._archive: dict[tuple[str, str], dict[int, tuple[str, str]]] = {}
        self._closed = False

    def __repr__(self) -> str:
        """Show how many sessions are held, for logs and debuggers."""
        return f"MemoryStore(sessions={len(self._docs)})"

    async def create(self, doc: JSONDict) -> None:
        """Store a new session at revision 0; an existing id is a conflict and changes nothing.

        Raises:
            ValueError: `doc["id"]` is not a non-empty string or `doc["revision"]` is not 0.
            SessionConflictError: a session with this id already exists.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_new_doc(doc)
        text = self._encode(doc, session_id)
        if session_id in self._docs:
            actual = self._docs[session_id][0]
            raise SessionConflictError(
                session_id, 0, actual, _checks.conflict_on_create_message(session_id, actual)
            )
        self._docs[session_id] = (0, text)

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

    async def save(self, doc: JSONDict, expected_revision: int) -> int:
        """Replace the session if its revision is still `expected_revision`; return the new one.

        Raises:
            ValueError: `doc["id"]` is not a string or `expected_revision` is not an int >= 0.
            SessionNotFoundError: no session has this id.
            SessionConflictError: another writer saved first; nothing was written.
        """
        _checks.check_open(self, self._closed)
        session_id = _checks.check_saved_doc(doc, expected_revision)
        revision = expected_revision + 1
        text = self._encode({**doc, "revision": revision}, session_id)
        stored = self._docs.get(session_id)
        if stored is None:
            raise SessionNotFoundError(session_id)
        if stored[0] != expected_revision:
            raise SessionConflictError(session_id, expected_revision, stored[0])
        self._docs[session_id] = (revision, text)
        return revision

    async def delete(self, session_id: str) -> bool:
        """Remove the session and its whole archive; True if a session document existed."""
        _checks.check_open(self, self._closed)
        for key in [key for key in self._archive if key[0] == session_id]:
            del self._archive[key]
        self._codecs.pop(session_id, None)
        return self._docs.pop(session_id, None) is not None

    async def archive(self, session_id: str, namespace: str, entries: list[ArchiveEntry]) -> None:
        """Keep evicted messages by position; a position already archived keeps its first entry.

        The session document need not exist yet: compaction of a session's first turn archives
        before the engine creates the document.
        """
        _checks.check_open(self, self._closed)
        _checks.check_entries(session_id, namespace, entries)
        encoded = [
            (entry["position"], (_checks.encode(entry["message"], session_id), entry["message"]))
            for entry in entries
        ]
        slot = self._archive.setdefault((session_id, namespace), {})
        for position, (text, message) in encoded:
            slot.setdefault(position, (text, _checks.search_text(message)))

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
            position for position, (_, text) in slot.items() if all(word in text for word in words)
        ]
        hits.sort(reverse=True)
        start = (page - 1) * page_size
        return [
            {"position": position, "message": _checks.decode(slot[position][0])}
            for position in hits[start : start + page_size]
        ]

    async def aclose(self) -> None:
        """Drop every session; the store refuses further calls with StoreError."""
        self._closed = True
        self._docs.clear()
        self._archive.clear()
        self._codecs.clear()

    def _encode(self, doc: JSONDict, session_id: str) -> _Encoded:
        codec = self._codecs.get(session_id)
        if codec is None:
            codec = self._codecs[session_id] = _MessageCodec()
        return codec.encode(doc, session_id)


_Encoded = tuple[str, dict[str, list[str]]]  # (document without messages, message texts)


class _MessageCodec:
    """Encodes a session's documents, reusing the text of the unchanged messages.

    Per namespace it remembers the message dicts of the last document and their JSON text; a
    message list that starts with the very same dict objects reuses their text, found in one
    C-level pass. Only a new system slot and what follows the first difference are encoded
    again. That is done only for `SavedMessages` lists, whose dicts the engine promises never
    to mutate; any other list (a caller editing a loaded document) is encoded in full.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[list[Any], list[str]]] = {}

    def encode(self, doc: JSONDict, session_id: str) -> _Encoded:
        memory = doc.get("memory")
        if not isinstance(memory, dict) or not all(
            isinstance(entry, dict) and isinstance(entry.get("messages"), list)
            for entry in memory.values()
        ):
            return _checks.encode(doc, session_id), {}
        skeleton = {
            **doc,
            "memory": {ns: {**entry, "messages": []} for ns, entry in memory.items()},
        }
        texts = {
            ns: self._texts_of(ns, entry["messages"], session_id) for ns, entry in memory.items()
        }
        return _checks.encode(skeleton, session_id), texts

    def _texts_of(self, namespace: str, messages: list[Any], session_id: str) -> list[str]:
        if not isinstance(messages, SavedMessages):  # no promise the dicts are unchanged
            self._last.pop(namespace, None)
            return [_checks.encode(m, session_id) for m in messages]
        previous = self._last.get(namespace, ([], []))
        texts = encode_new(messages, previous, lambda m: _checks.encode(m, session_id))
        self._last[namespace] = (list(messages), texts)
        return texts


def _decode(encoded: _Encoded) -> JSONDict:
    skeleton_text, texts = encoded
    doc = _checks.decode(skeleton_text)
    for namespace, messages in texts.items():
        doc["memory"][namespace]["messages"] = json.loads("[" + ",".join(messages) + "]")
    return doc
