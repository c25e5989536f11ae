"""How MongoStore maps session documents and archive entries to BSON, and back (P1, P6).

A stored session is the P1 document plus internal fields, all starting with `_`:

- `_id`: the session id (the document keeps `id` too, because people query it);
- `_expires_at`: `expires_at` as a BSON date, the field the TTL index watches (the ISO string
  itself stays untouched, so a load returns exactly what was saved);
- `_escaped_keys`: present and true when some key had to be escaped (see below).

Keys. MongoDB gives keys that start with `$` or contain `.` a meaning of their own (operators,
paths; `{"$ref", "$id"}` even comes back as a DBRef), and BSON cannot hold a NUL in a key. State
keys, context keys and tool-call arguments are arbitrary user strings, so every key that has one
of these characters is percent-escaped on the way in and restored on the way out; the round trip
is exact. `%` itself is escaped too, so the escaping can always be undone. At the top level a
leading `_` is escaped as well, which keeps every stored `_`-field internal.

    "$price"   -> "%24price"
    "a.b"      -> "a%2Eb"
    "50%"      -> "50%25"
    "_note"    -> "%5Fnote"   (top level only)

What MongoDB cannot hold (over 15 MB, deeper than 100 levels, integers beyond 64 bits, lone
surrogates) is refused before anything is sent, by the check every store runs
(`picoflow.stores._limits`); its size counts the escaping and the internal fields above.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import bson
from bson.raw_bson import RawBSONDocument

from picoflow.stores import _checks
from picoflow.stores._limits import DocumentChecker
from picoflow.stores.base import REMEMBERED_SESSIONS, ArchiveEntry, JSONDict, MessageEncodings

__all__ = [
    "SessionEncoder",
    "archive_record",
    "entry_from_stored",
    "session_from_stored",
]

_ESCAPED = "_escaped_keys"


class _NotPlain(Exception):
    """A value that strict JSON would change or refuse; the JSON path decides which."""


class SessionEncoder:
    """Encodes one store's sessions, reusing the BSON of messages it encoded before.

    The engine saves a whole session every turn, but it keeps the message dicts of earlier
    turns as the very same objects and never mutates them (`SavedMessages`). Per session and
    namespace this encoder remembers the last such list and each message's BSON; a list that
    starts with the same objects reuses their bytes, so a save checks and encodes what the turn
    added, not the whole conversation. Plain lists, from callers who may
    have edited a dict in place, are encoded in full. The most recently saved `capacity`
    sessions are remembered.
    """

    def __init__(self, capacity: int = REMEMBERED_SESSIONS) -> None:
        self._encodings: MessageEncodings[_Encoded] = MessageEncodings(capacity)
        self._limits = DocumentChecker(capacity)

    def record(self, doc: JSONDict, session_id: str, revision: int) -> RawBSONDocument:
        """Encode a session for `insert_one`/`replace_one`; nothing is sent if this raises.

        Raises:
            TypeError: the document is not plain JSON (the message every store uses).
            DocumentLimitError: the document breaks a limit every store keeps (H7).
        """
        self._limits.check(doc, session_id)
        body, escaped = self._body(doc, session_id)
        record: JSONDict = {"_id": session_id}
        for key, value in body.items():
            record["%5F" + key[1:] if key.startswith("_") else key] = value
            escaped = escaped or key.startswith("_")
        record["revision"] = revision
        expires = _expiry_date(doc.get("expires_at"))
        if expires is not None:
            record["_expires_at"] = expires
        if escaped:
            record[_ESCAPED] = True
        return RawBSONDocument(bson.encode(record))

    def split(
        self, doc: JSONDict, session_id: str, revision: int
    ) -> tuple[JSONDict, dict[str, tuple[list[Any], list[Any]]]]:
        """The session's record with every namespace's messages empty, and those messages.

        The record is a plain dict (the caller adds its own internal fields, then encodes
        it); the messages map each stored namespace key to (the list saved, each message's
        BSON). Nothing is sent if this raises (TypeError, DocumentLimitError as `record`).
        """
        self._limits.check(doc, session_id)
        body, escaped = self._body(doc, session_id)
        lists: dict[str, tuple[list[Any], list[Any]]] = {}
        memory = body.get("memory")
        originals = doc.get("memory")
        if type(memory) is dict and type(originals) is dict:
            for namespace, entry in originals.items():
                key = _escape_key(namespace) if _is_special(namespace) else namespace
                stored = memory.get(key)
                if type(stored) is dict and isinstance(stored.get("messages"), list):
                    lists[key] = (entry["messages"], stored["messages"])
                    memory[key] = {**stored, "messages": []}
        record: JSONDict = {"_id": session_id}
        for key, value in body.items():
            record["%5F" + key[1:] if key.startswith("_") else key] = value
            escaped = escaped or key.startswith("_")
        record["revision"] = revision
        expires = _expiry_date(doc.get("expires_at"))
        if expires is not None:
            record["_expires_at"] = expires
        if escaped:
            record[_ESCAPED] = True
        return record, lists

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (it was deleted)."""
        self._encodings.forget(session_id)
        self._limits.forget(session_id)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._encodings.clear()
        self._limits.clear()

    def _body(self, doc: JSONDict, session_id: str) -> tuple[JSONDict, bool]:
        """The checked, escaped document, its message lists as cached BSON."""
        memory = doc.get("memory")
        if type(memory) is not dict:
            return _plain(doc, session_id)
        lists = {
            namespace: self._messages(session_id, namespace, entry["messages"])
            for namespace, entry in memory.items()
            if type(namespace) is str
            and type(entry) is dict
            and isinstance(entry.get("messages"), list)
        }
        skeleton = {
            namespace: {**entry, "messages": []} if namespace in lists else entry
            for namespace, entry in memory.items()
        }
        body, escaped = _plain({**doc, "memory": skeleton}, session_id)
        for namespace, (encoded, messages_escaped) in lists.items():
            key = _escape_key(namespace) if _is_special(namespace) else namespace
            body["memory"][key]["messages"] = encoded
            escaped = escaped or messages_escaped
        return body, escaped

    def _messages(
        self, session_id: str, namespace: str, messages: list[Any]
    ) -> tuple[list[Any], bool]:
        """The BSON of each message, and whether any had a key escaped."""
        encoded = self._encodings.encode(
            session_id, namespace, messages, lambda m: _encode_message(m, session_id)
        )
        return [value for value, _ in encoded], any(escaped for _, escaped in encoded)


_Encoded = tuple[Any, bool]  # (RawBSONDocument, or a plain value for a non-dict; escaped?)


def _encode_message(message: Any, session_id: str) -> _Encoded:
    value, escaped = _plain(message, session_id)
    if type(value) is dict:
        return RawBSONDocument(bson.encode(value)), escaped
    return value, escaped


def session_from_stored(stored: JSONDict) -> JSONDict:
    """The P1 document of a stored session: internal fields dropped, escaped keys restored."""
    escaped = stored.get(_ESCAPED, False)
    doc = {key: value for key, value in stored.items() if not key.startswith("_")}
    return _unescape(doc) if escaped else doc


def archive_record(
    session_id: str, namespace: str, entry: ArchiveEntry, extra: JSONDict | None = None
) -> RawBSONDocument:
    """Encode one archive entry, with the lowercased text that searches run against.

    The entry was checked by `_checks.check_entries`; `extra` holds internal fields (the TTL
    date `x`).
    """
    message, escaped = _plain(entry["message"], session_id)
    record: JSONDict = {
        "session_id": session_id,
        "namespace": namespace,
        "position": entry["position"],
        "message": message,
        "text": _checks.search_text(entry["message"]),
    }
    if entry.get("compacted_at") is not None:  # M16
        record["compacted_at"] = entry["compacted_at"]
    if escaped:
        record[_ESCAPED] = True
    record.update(extra or {})
    return RawBSONDocument(bson.encode(record))


def entry_from_stored(stored: JSONDict) -> ArchiveEntry:
    """An archive entry as `search_archive` returns it."""
    message = stored["message"]
    if stored.get(_ESCAPED, False):
        message = _unescape(message)
    entry: ArchiveEntry = {"position": stored["position"], "message": message}
    if stored.get("compacted_at") is not None:  # M16: absent on entries written before it
        entry["compacted_at"] = stored["compacted_at"]
    return entry


def _plain(value: Any, session_id: str) -> tuple[Any, bool]:
    """`value` checked as strict JSON, and whether some key must be escaped.

    The fast path only reads `value`: plain dicts, lists, strings, finite floats and ints
    (checked to fit 64 bits already) are stored as they are. Anything else (a tuple, an enum)
    goes through strict JSON first, exactly as the other stores keep it.
    """
    try:
        needs_escape = _scan(value)
    except _NotPlain:
        value = json.loads(_checks.encode(value, session_id))
        needs_escape = _scan(value)
    return (_escape(value) if needs_escape else value), needs_escape


def _scan(value: Any) -> bool:
    """True if some key needs escaping; raises _NotPlain for what BSON would change.

    Iterative, with the key test inlined: this runs on every message a store has not encoded
    before (every message, after another process saved the session), so it stays close to
    the cost of `json.dumps` on the same data.
    """
    found = False
    stack: list[Any] = [[value]]
    while stack:
        container = stack.pop()
        if type(container) is dict:
            for key in container:
                if type(key) is not str:
                    raise _NotPlain  # JSON would turn it into a string
                if key[:1] == "$" or "." in key or "%" in key or "\x00" in key:
                    found = True
            container = container.values()
        for item in container:
            kind = type(item)
            if kind is dict or kind is list:
                stack.append(item)
            elif kind is not str and kind is not bool and item is not None:
                _check_number(kind, item)
    return found


def _check_number(kind: type, value: Any) -> None:
    if kind is not int and (kind is not float or not math.isfinite(value)):
        raise _NotPlain


def _is_special(key: str) -> bool:
    return key.startswith("$") or "." in key or "%" in key or "\x00" in key


def _escape_key(key: str) -> str:
    key = key.replace("%", "%25").replace(".", "%2E").replace("\x00", "%00")
    return "%24" + key[1:] if key.startswith("$") else key


def _escape(value: Any) -> Any:
    if type(value) is dict:
        return {
            (_escape_key(key) if _is_special(key) else key): _escape(item)
            for key, item in value.items()
        }
    if type(value) is list:
        return [_escape(item) for item in value]
    return value


def _unescape(value: Any) -> Any:
    # Every `%` in a stored key was written by _escape_key, so unquote is its exact inverse.
    if type(value) is dict:
        return {
            (unquote(key) if "%" in key else key): _unescape(item) for key, item in value.items()
        }
    if type(value) is list:
        return [_unescape(item) for item in value]
    return value


def _expiry_date(expires_at: object) -> datetime | None:
    """`expires_at` as an aware datetime for the TTL index, or None (no TTL for this session)."""
    if not isinstance(expires_at, str):
        return None
    try:
        moment = datetime.fromisoformat(expires_at)
    except ValueError:
        return None  # not ours to judge: the document keeps the string, the engine checks it
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
