"""A per-process cache of recently saved sessions, validated by revision on every turn.

Turning stored JSON back into LangChain message objects costs microseconds per message, so a
long conversation would make every turn slower than the last. The engine therefore keeps, for the
sessions it saved recently, the saved document and its live message objects. Before a turn uses
them it asks the store for the session's current revision (one small read): if another process
saved in between, the revision differs and the session is loaded from the store as usual. The
store stays the single source of truth; the cache only saves work (P4 is unaffected).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from picoflow.memory import Namespace
from picoflow.stores.base import JSONDict, Store

__all__ = ["HotSessions"]


@dataclass(slots=True)
class _Entry:
    doc: JSONDict  # the document as saved; never mutated (each turn builds a new one)
    spaces: dict[str, Namespace]


class HotSessions:
    """The last saved document and memory of up to `size` sessions, least recently used out."""

    def __init__(self, size: int = 256) -> None:
        self._size = size
        self._entries: OrderedDict[str, _Entry] = OrderedDict()

    async def load(
        self, store: Store, session_id: str
    ) -> tuple[JSONDict | None, dict[str, Namespace] | None]:
        """The session's document and, when the cache is current, its live namespaces."""
        entry = self._entries.get(session_id)
        if entry is not None:  # `revision` is part of the core (P2): one small read
            if await store.revision(session_id) == entry.doc["revision"]:
                # Other sessions' saves may have pushed the entry out during that read; it is
                # still current (this session's turns are serialised), so it goes back in.
                self._entries[session_id] = entry
                self._entries.move_to_end(session_id)
                return entry.doc, entry.spaces
            self._entries.pop(session_id, None)
        return await store.load(session_id), None

    def keep(self, doc: JSONDict, spaces: dict[str, Namespace]) -> None:
        """Remember a document that was just saved, with the namespaces it was built from."""
        self._entries[doc["id"]] = _Entry(doc, spaces)
        self._entries.move_to_end(doc["id"])
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)

    def forget(self, session_id: str) -> None:
        """Drop a session (it was deleted)."""
        self._entries.pop(session_id, None)
