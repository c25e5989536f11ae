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

Documents whose BSON form exceeds 15 MB are refused before anything is sent (MongoDB's own limit
is 16 MB; the margin leaves room for the server's per-write overhead).
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote

import bson
from bson.raw_bson import RawBSONDocument

from picoflow.errors import StoreError
from picoflow.stores import _checks
from picoflow.stores.base import REMEMBERED_SESSIONS, ArchiveEntry, JSONDict, MessageEncodings

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "SessionEncoder",
    "archive_record",
    "entry_from_stored",
    "session_from_stored",
]

MAX_DOCUMENT_BYTES = 15 * 1024 * 1024
_ESCAPED = "_escaped_keys"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_MEBIBYTE = 1024 * 1024
_KEEP_OUT = "keep large data out of %s (store a reference to it instead)"


class _NotPlain(Exception):
    """A value that strict JSON would change or refuse; the JSON path decides which."""


class _TooBig(Exception):
    """An integer that JSON holds but BSON (64-bit integers) cannot."""

    def __init__(self, value: int) -> None:
        self.value = value


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

    def record(self, doc: JSONDict, session_id: str, revision: int) -> RawBSONDocument:
        """Encode a session for `insert_one`/`replace_one`; nothing is sent if this raises.

        Raises:
            TypeError: the document is not plain JSON (the message every store uses).
            StoreError: the document is too large, or holds an integer beyond 64 bits.
        """
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
        data = _encode(record, session_id)
        if len(data) > MAX_DOCUMENT_BYTES:
            raise StoreError(_too_large_message(session_id, len(data), body), retryable=False)
        return RawBSONDocument(data)

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (it was deleted)."""
        self._encodings.forget(session_id)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._encodings.clear()

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
        return RawBSONDocument(_encode(value, session_id)), escaped
    return value, escaped


def session_from_stored(stored: JSONDict) -> JSONDict:
    """The P1 document of a stored session: internal fields dropped, escaped keys restored."""
    escaped = stored.get(_ESCAPED, False)
    doc = {key: value for key, value in stored.items() if not key.startswith("_")}
    return _unescape(doc) if escaped else doc


def archive_record(session_id: str, namespace: str, entry: ArchiveEntry) -> RawBSONDocument:
    """Encode one archive entry, with the lowercased text that searches run against."""
    message, escaped = _plain(entry["message"], session_id)
    record: JSONDict = {
        "session_id": session_id,
        "namespace": namespace,
        "position": entry["position"],
        "message": message,
        "text": _checks.search_text(entry["message"]),
    }
    if escaped:
        record[_ESCAPED] = True
    data = _encode(record, session_id)
    if len(data) > MAX_DOCUMENT_BYTES:
        raise StoreError(
            f"A message archived from session '{session_id}', namespace '{namespace}' is "
            f"{len(data) / _MEBIBYTE:.1f} MB, over MongoStore's 15 MB limit. Keep large data "
            "out of messages (store a reference instead); nothing was archived.",
            retryable=False,
        )
    return RawBSONDocument(data)


def entry_from_stored(stored: JSONDict) -> ArchiveEntry:
    """An archive entry as `search_archive` returns it."""
    message = stored["message"]
    if stored.get(_ESCAPED, False):
        message = _unescape(message)
    return {"position": stored["position"], "message": message}


def _plain(value: Any, session_id: str) -> tuple[Any, bool]:
    """`value` checked as strict JSON, and whether some key must be escaped.

    The fast path only reads `value`: plain dicts, lists, strings, finite floats and 64-bit
    ints are stored as they are. Anything else (a tuple, an enum, an int key) goes through
    strict JSON first, exactly as the other stores keep it, or fails with their TypeError.
    """
    try:
        needs_escape = _scan(value)
    except _NotPlain:
        value = json.loads(_checks.encode(value, session_id))
        needs_escape = _scan(value)
    except _TooBig as exc:
        raise StoreError(
            f"Session '{session_id}' holds the integer {exc.value}, which MongoDB cannot store "
            "(integers are limited to 64 bits). Store such numbers as strings; nothing was "
            "written.",
            retryable=False,
        ) from None
    return (_escape(value) if needs_escape else value), needs_escape


def _scan(value: Any) -> bool:
    """True if some key needs escaping; raises _NotPlain or _TooBig for what BSON would change.

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
    if kind is int:
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise _TooBig(value)
    elif kind is not float or not math.isfinite(value):
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


def _encode(record: JSONDict, session_id: str) -> bytes:
    try:
        return bson.encode(record)
    except UnicodeEncodeError as exc:  # a lone surrogate: JSON text holds it, UTF-8 cannot
        raise StoreError(
            f"Session '{session_id}' cannot be encoded for MongoDB: {exc}. Store only valid "
            "Unicode text; nothing was written.",
            retryable=False,
        ) from exc


def _too_large_message(session_id: str, size: int, body: JSONDict) -> str:
    """Name the biggest part of an oversized session and what shrinks it."""
    parts: dict[str, tuple[int, str]] = {}
    for namespace, entry in _dicts(body.get("memory")).items():
        parts[f"memory namespace '{namespace}'"] = (
            len(bson.encode(entry)),
            f"compact it (get_memory().enable_summary('{namespace}')) or erase what the flow "
            "no longer needs",
        )
    for step, entry in _dicts(body.get("steps")).items():
        parts[f"the state of step '{step}'"] = (len(bson.encode(entry)), _KEEP_OUT % "step state")
    for key, value in body.items():
        if key not in ("memory", "steps"):
            parts[f"the field '{key}'"] = (len(bson.encode({key: value})), _KEEP_OUT % "it")
    name, (part_size, advice) = max(parts.items(), key=lambda item: item[1][0])
    return (
        f"Session '{session_id}' would be {size / _MEBIBYTE:.1f} MB in MongoDB, over "
        f"MongoStore's 15 MB limit (MongoDB refuses documents over 16 MB). Its largest part is "
        f"{name} ({part_size / _MEBIBYTE:.1f} MB): {advice}. Nothing was written."
    )


def _dicts(value: object) -> dict[str, JSONDict]:
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, dict)}
