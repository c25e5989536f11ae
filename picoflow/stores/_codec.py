"""JSON text of session documents, reusing the text of messages encoded in an earlier save.

The engine saves the whole session every turn, but it hands over the message dicts of earlier
turns as the very same objects and never mutates them (`SavedMessages`). Per session and
namespace the codec remembers the last such list and each message's JSON text; a list that
starts with the same objects reuses their text, so a save encodes what the turn added, not the
whole conversation. Plain lists (a caller who may have edited a dict in place) are encoded in
full. `MemoryStore` keeps the parts, `SQLiteStore` the whole text; both are exactly what
`_checks.encode` makes of the document.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from picoflow.stores import _checks
from picoflow.stores.base import REMEMBERED_SESSIONS, JSONDict, MessageEncodings

__all__ = ["JSONCodec"]

_Texts = dict[str, list[str]]  # namespace -> the JSON text of each of its messages


class JSONCodec:
    """Encodes the documents of one store's sessions.

    Args:
        capacity: How many recently saved sessions to remember (None: all of them, for a store
            that keeps every session in memory anyway).
    """

    def __init__(self, capacity: int | None = REMEMBERED_SESSIONS) -> None:
        """Start with nothing remembered."""
        self._encodings: MessageEncodings[str] = MessageEncodings(capacity)

    def parts(self, doc: JSONDict, session_id: str) -> tuple[str, _Texts]:
        """The document with every namespace's `messages` empty, and the texts of those messages.

        A document without the engine's memory layout comes back whole, with no texts.

        Raises:
            TypeError: the document is not plain JSON (the message every store uses).
        """
        memory = doc.get("memory")
        if not _splittable(memory):
            return _checks.encode(doc, session_id), {}
        texts = self._texts(session_id, memory)
        skeleton = {
            **doc,
            "memory": {ns: {**entry, "messages": []} for ns, entry in memory.items()},
        }
        return _checks.encode(skeleton, session_id), texts

    def text(self, doc: JSONDict, session_id: str) -> str:
        """The whole document as JSON text, identical to `_checks.encode(doc, session_id)`.

        Raises:
            TypeError: the document is not plain JSON (the message every store uses).
        """
        memory = doc.get("memory")
        if not _splittable(memory):
            return _checks.encode(doc, session_id)
        texts = self._texts(session_id, memory)
        spaces = [
            _checks.encode(namespace, session_id)
            + ":"
            + _splice(entry, "messages", "[" + ",".join(texts[namespace]) + "]", session_id)
            for namespace, entry in memory.items()
        ]
        return _splice(doc, "memory", "{" + ",".join(spaces) + "}", session_id)

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (it was deleted)."""
        self._encodings.forget(session_id)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._encodings.clear()

    def _texts(self, session_id: str, memory: dict[str, Any]) -> _Texts:
        return {
            namespace: self._encodings.encode(
                session_id,
                namespace,
                entry["messages"],
                lambda m: _checks.encode(m, session_id),
            )
            for namespace, entry in memory.items()
        }


def _splittable(memory: Any) -> TypeGuard[dict[str, dict[str, Any]]]:
    """Whether `memory` has the engine's layout: namespace -> {"messages": [...], ...}."""
    return type(memory) is dict and all(
        type(namespace) is str and type(entry) is dict and isinstance(entry.get("messages"), list)
        for namespace, entry in memory.items()
    )


def _splice(mapping: dict[Any, Any], key: str, value_text: str, session_id: str) -> str:
    """The JSON text of `mapping`, with `value_text` (already JSON) as the value of `key`.

    The keys before and after `key` are encoded as two dicts, so the order and the coercion of
    non-string keys are exactly `json`'s.
    """
    keys = list(mapping)
    at = keys.index(key)
    head = _checks.encode({k: mapping[k] for k in keys[:at]}, session_id)[:-1]  # drop "}"
    tail = _checks.encode({k: mapping[k] for k in keys[at + 1 :]}, session_id)[1:]  # drop "{"
    middle = _checks.encode(key, session_id) + ":" + value_text
    return head + ("," if at else "") + middle + ("," if at < len(keys) - 1 else "") + tail
