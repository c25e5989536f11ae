"""The documents every store accepts (H7): one check, with the same errors, on every store.

MongoDB is the strictest store, so its limits are everyone's: a flow tested on `MemoryStore` or
`SQLiteStore` never meets, in production, a document that MongoDB refuses. A document passes
when

- it is plain JSON: dicts with string keys, lists, strings, finite numbers, booleans and None
  (`TypeError` otherwise, as S5 gives at `save_state`; tuples and str/int/float subclasses are
  taken as JSON writes them);
- every integer fits in 64 bits (BSON has no bigger integer);
- every string and key is valid Unicode: no lone surrogate, which UTF-8 cannot hold;
- nothing nests deeper than 100 levels, the document itself being the first (MongoDB's limit);
- its size as MongoDB would hold it (BSON, keys escaped as `MongoStore` escapes them, with its
  internal fields) is at most 15 MB; MongoDB refuses 16 MB, the margin is its own overhead.

Everything else raises `DocumentLimitError` before anything is written. The engine runs the
check on every document it saves and every store runs it again, so a third-party store sees
only documents that passed, and a direct caller of a store API gets the same answer from each.
Sizes of messages measured before are reused (`MessageEncodings`), so the check costs what a
turn added, not what the conversation holds.
"""

from __future__ import annotations

import math
from typing import Any, TypeGuard

from picoflow.errors import StoreError
from picoflow.stores.base import (
    REMEMBERED_SESSIONS,
    JSONDict,
    MessageEncodings,
    searchable_text,
)

__all__ = [
    "DocumentLimitError",
    "DocumentChecker",
    "INT64_MAX",
    "INT64_MIN",
    "MAX_DEPTH",
    "MAX_DOCUMENT_BYTES",
    "check_archived_message",
    "check_value",
]

MAX_DOCUMENT_BYTES = 15 * 1024 * 1024
MAX_DEPTH = 100
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MEBIBYTE = 1024 * 1024
_MESSAGE_LEVEL = 5  # document > memory > namespace > messages > message
# MongoStore's internal fields, at most: `_id` (plus the id's text), `_expires_at` (a date),
# `_escaped_keys` (a boolean), each with its type byte and key.
_RECORD_FIELDS = (1 + 4 + 4 + 1) + (1 + 12 + 8) + (1 + 14 + 1)
_PLAIN = "Store only dicts with string keys, lists, strings, finite numbers, booleans and None."


class DocumentLimitError(StoreError, ValueError):
    """A document no store keeps (H7); retrying cannot help, and nothing was written.

    It is too large or too deep, holds an integer beyond 64 bits, or text that is not valid
    Unicode. A `StoreError` that is not `retryable` (a server answers it with a refusal, not
    "retry later", H3), and a `ValueError` for code that checks values.
    """

    def __init__(self, message: str) -> None:
        """Carry the message; never retryable."""
        super().__init__(message, retryable=False)


class _Refused(Exception):
    """A value the check refuses; `path` is filled in (innermost first) on the way out."""

    def __init__(self, problem: str, kind: type[Exception], advice: str = "") -> None:
        super().__init__(problem)
        self.problem = problem
        self.kind = kind
        self.advice = advice
        self.path: list[str] = []
        self.item: Any = None  # the message it happened in, to name the message's index

    def where(self, prefix: str = "") -> str:
        """The path of the refused value, e.g. `steps.Explore.state.total`."""
        segments = ([prefix] if prefix else []) + self.path[::-1]
        if len(segments) > 8:  # a path 100 levels deep says no more than its ends
            segments[4:-3] = [f"[...{len(segments) - 7} levels...]"]
        return "".join(segments).lstrip(".") or "the document"

    def raised(self, subject: str, written: str, prefix: str = "") -> Exception:
        """The exception a caller sees: `subject` names the document or entry."""
        where = self.where(prefix)
        if self.kind is TypeError:
            return TypeError(f"{subject} is not plain JSON: {where} {self.problem}. {_PLAIN}")
        return DocumentLimitError(
            f"{subject} cannot be stored: {where} {self.problem}. {self.advice}; "
            f"nothing was {written}."
        )


def check_value(value: Any, where: str, level: int) -> None:
    """Refuse, at once, a value no store would keep, `level` levels deep in a document.

    `save_state` runs this, so a tool fails where it saves.

    Raises:
        TypeError: the value is not plain JSON.
        DocumentLimitError: an integer beyond 64 bits, a lone surrogate, too deep, or on its
            own over the size limit of a whole document.
    """
    try:
        size = _size(value, level)
    except _Refused as exc:
        kind = DocumentLimitError if exc.kind is DocumentLimitError else TypeError
        advice = f" {exc.advice}." if exc.advice else ""
        raise kind(f"Cannot save {exc.where(where)}: it {exc.problem}.{advice}") from None
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentLimitError(
            f"Cannot save {where}: it is {size / _MEBIBYTE:.1f} MB, over the 15 MB limit of a "
            "whole session in every store. Keep large data out of state (store a reference "
            "to it instead)."
        )


class _Handoff:
    """The document the engine checked last, which the store's check of it need not walk again.

    One slot: the engine hands a checked document straight to `store.create`/`store.save`,
    whose check runs before anything else can, and takes it out of the slot. A store that does
    not check leaves it there until the engine's next check replaces it; the engine never
    changes a document it saved.
    """

    __slots__ = ("doc", "size")

    def __init__(self) -> None:
        self.doc: JSONDict | None = None
        self.size = 0


_HANDOFF = _Handoff()


class DocumentChecker:
    """Checks the documents of one store (or engine), reusing the sizes of saved messages.

    Args:
        capacity: How many recently saved sessions to remember message sizes of (None: all).
        hands_off: The engine's checker: a document it passed is not walked again by the
            store's check of that very object (`_Handoff`), so a turn is checked once.
    """

    def __init__(
        self, capacity: int | None = REMEMBERED_SESSIONS, *, hands_off: bool = False
    ) -> None:
        """Start with nothing remembered."""
        self._sizes: MessageEncodings[int] = MessageEncodings(capacity)
        self._hands_off = hands_off

    def check(self, doc: JSONDict, session_id: str) -> int:
        """Return the document's size as MongoDB would hold it, or raise what is wrong.

        Raises:
            TypeError: the document is not plain JSON.
            DocumentLimitError: the document breaks a limit above; nothing may be written.
        """
        if _HANDOFF.doc is doc and not self._hands_off:
            _HANDOFF.doc = None
            return _HANDOFF.size
        try:
            size = self._size(doc, session_id)
        except _Refused as exc:
            raise exc.raised(f"Session '{session_id}'", "written") from None
        size += _RECORD_FIELDS + _utf8_len(session_id) + 2 * sum(k[:1] == "_" for k in doc)
        if size > MAX_DOCUMENT_BYTES:
            raise DocumentLimitError(_too_large(session_id, size, doc))
        if self._hands_off:
            _HANDOFF.doc, _HANDOFF.size = doc, size
        return size

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (it was deleted)."""
        self._sizes.forget(session_id)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._sizes.clear()

    def _size(self, doc: JSONDict, session_id: str) -> int:
        memory = doc.get("memory")
        if not _splittable(memory):
            return _size(doc, 1)
        skeleton = {
            **doc,
            "memory": {ns: {**entry, "messages": []} for ns, entry in memory.items()},
        }
        size = _size(skeleton, 1)
        for namespace, entry in memory.items():
            messages = entry["messages"]
            try:
                sizes = self._sizes.encode(session_id, namespace, messages, _message_size)
            except _Refused as exc:
                index = next(i for i, m in enumerate(messages) if m is exc.item)
                exc.path.append(f"memory.{namespace}.messages[{index}]")
                raise
            size += _list_size(len(sizes), sum(sizes)) - 5  # the skeleton counted []
        return size


def check_archived_message(session_id: str, namespace: str, message: Any) -> None:
    """Refuse an archive entry's message that no store keeps, as `check` refuses a document.

    An archive record holds the message and its search text (about as large again).

    Raises:
        TypeError: the message is not plain JSON.
        DocumentLimitError: it breaks a limit, or its record would be over 15 MB.
    """
    origin = f"A message archived from session '{session_id}', namespace '{namespace}'"
    try:
        size = _size(message, 2)
    except _Refused as exc:
        raise exc.raised(origin, "archived", "message") from None
    text = searchable_text(message) if isinstance(message, dict) else ""
    size += 5 + _utf8_len(text) + 200 + _utf8_len(session_id) + _utf8_len(namespace)
    if size > MAX_DOCUMENT_BYTES:
        raise DocumentLimitError(
            f"{origin} is {size / _MEBIBYTE:.1f} MB with its search text, over the 15 MB "
            "limit every store keeps. Keep large data out of messages (store a reference "
            "instead); nothing was archived."
        )


def _message_size(message: Any) -> int:
    try:
        return _size(message, _MESSAGE_LEVEL)
    except _Refused as exc:
        exc.item = message
        raise


def _size(value: Any, level: int) -> int:
    """The BSON size of `value` as an element's payload; raises _Refused for what no store keeps."""
    kind = type(value)
    if kind is str:
        return 5 + _utf8_len(value)
    if kind is dict or kind is list or kind is tuple:
        return _container_size(value, level)
    if kind is int:
        if _INT32_MIN <= value <= _INT32_MAX:
            return 4
        if INT64_MIN <= value <= INT64_MAX:
            return 8
        shown = value if value.bit_length() <= 256 else f"of {value.bit_length()} bits"
        raise _Refused(
            f"holds the integer {shown}, beyond the 64 bits any store keeps",
            DocumentLimitError,
            "Store such numbers as strings",
        )
    if value is None:
        return 0
    if kind is bool:
        return 1
    if kind is float:
        if math.isfinite(value):
            return 8
        raise _Refused(f"is {value!r}; NaN and infinity are not JSON", TypeError)
    return _subclass_size(value, level)


def _subclass_size(value: Any, level: int) -> int:
    """Subclasses of JSON types (a `StrEnum`, an `IntEnum`) count as what JSON writes."""
    if isinstance(value, str):
        return _size(str.__str__(value), level)
    if isinstance(value, bool):
        return 1
    if isinstance(value, int):
        return _size(int(value), level)
    if isinstance(value, float):
        return _size(float(value), level)
    if isinstance(value, dict):
        return _size(dict(value), level)
    if isinstance(value, list):
        return _size(list(value), level)
    raise _Refused(f"is a {type(value).__name__}, which is not JSON", TypeError)


def _container_size(value: Any, level: int) -> int:
    if level > MAX_DEPTH:
        raise _Refused(
            f"nests deeper than the {MAX_DEPTH} levels any store keeps (MongoDB's limit)",
            DocumentLimitError,
            "Flatten the data",
        )
    inner = level + 1
    total = 5  # int32 length and the closing NUL
    if type(value) is dict:
        return _dict_size(value, inner)
    if value and set(map(type, value)) == {str}:  # e.g. `sequence`, one pass in C
        joined = "".join(value)
        if joined.isascii():
            return _list_size(len(value), 5 * len(value) + len(joined))
    for index, item in enumerate(value):
        try:
            total += 2 + len(str(index)) + _size(item, inner)
        except _Refused as exc:
            exc.path.append(f"[{index}]")
            raise
    return total


def _dict_size(value: dict[Any, Any], inner: int) -> int:
    total = 5  # int32 length and the closing NUL
    for key, item in value.items():
        # Plain keys and the common leaves are sized here, without a call each (issue 24:
        # this walk was a tenth of a turn); the rest goes through `_key_len` and `_size`.
        if type(key) is str and key.isascii() and key.isidentifier():
            total += 2 + len(key)
        else:
            total += 2 + _key_len(key)  # a refused key is named by the dict's path
        kind = type(item)
        if kind is str and item.isascii():
            total += 5 + len(item)
            continue
        if item is None:
            continue
        if kind is int and _INT32_MIN <= item <= _INT32_MAX:  # counters, revisions, tokens
            total += 4
            continue
        if kind is bool:
            total += 1
            continue
        if kind is dict and not item and inner <= MAX_DEPTH:
            total += 5
            continue
        try:
            total += _size(item, inner)
        except _Refused as exc:
            exc.path.append(_segment(key))
            raise
    return total


def _key_len(key: Any) -> int:
    """The key's BSON length as `MongoStore` writes it (`$`, `.`, `%`, NUL escaped)."""
    if type(key) is str and key.isascii() and key.isidentifier():  # most keys: one C check
        return len(key)
    if type(key) is not str:
        if not isinstance(key, str):
            raise _Refused(
                f"has the key {key!r} ({type(key).__name__}); keys must be strings", TypeError
            )
        key = str.__str__(key)
    try:
        size = _utf8_len(key)
    except _Refused as exc:
        exc.problem = f"has the key {key!r} with {exc.problem[4:]}"
        raise
    if "%" in key or "." in key or "\x00" in key:
        size += 2 * (key.count("%") + key.count(".") + key.count("\x00"))
    return size + 2 if key[:1] == "$" else size


def _utf8_len(text: str) -> int:
    if text.isascii():
        return len(text)
    try:
        return len(text.encode())
    except UnicodeEncodeError as exc:
        raise _Refused(
            f"has a lone surrogate ({text[exc.start]!r} at index {exc.start}), which is not "
            "valid Unicode",
            DocumentLimitError,
            "Store only valid Unicode text (decode bytes with errors='replace')",
        ) from None


def _segment(key: Any) -> str:
    if isinstance(key, str) and key and key.isprintable() and "." not in key and key.isascii():
        return f".{key}"
    return f"[{key!r}]"


def _list_size(count: int, payload: int) -> int:
    """The BSON size of a list of `count` items whose payloads sum to `payload` bytes.

    Each item also has a type byte and its index as a key: "0", "1", ...
    """
    digits, start, width = 0, 0, 1
    while start < count:  # the digits of 0..9, then 10..99, ...
        end = min(count, 10**width)
        digits += (end - start) * width
        start, width = end, width + 1
    return 5 + 2 * count + digits + payload


def _splittable(memory: Any) -> TypeGuard[dict[str, dict[str, Any]]]:
    return type(memory) is dict and all(
        type(namespace) is str and type(entry) is dict and isinstance(entry.get("messages"), list)
        for namespace, entry in memory.items()
    )


def _too_large(session_id: str, size: int, doc: JSONDict) -> str:
    """Name the biggest part of an oversized session and what shrinks it."""
    parts: dict[str, tuple[int, str]] = {}
    keep_out = "keep large data out of %s (store a reference to it instead)"
    for namespace, entry in _dicts(doc.get("memory")).items():
        parts[f"memory namespace '{namespace}'"] = (
            _size(entry, 3),
            f"compact it (get_memory().enable_summary('{namespace}')) or erase what the flow "
            "no longer needs",
        )
    for step, entry in _dicts(doc.get("steps")).items():
        parts[f"the state of step '{step}'"] = (_size(entry, 3), keep_out % "step state")
    for key, value in doc.items():
        if key not in ("memory", "steps"):
            parts[f"the field '{key}'"] = (_size(value, 2), keep_out % "it")
    name, (part_size, advice) = max(parts.items(), key=lambda item: item[1][0])
    return (
        f"Session '{session_id}' is {size:,} bytes ({size / _MEBIBYTE:.1f} MB), over the "
        f"limit of {MAX_DOCUMENT_BYTES:,} bytes (15 MB) every store keeps (MongoDB refuses "
        f"documents over 16 MB). Its largest part is {name} "
        f"({part_size / _MEBIBYTE:.1f} MB): {advice}. Nothing was written."
    )


def _dicts(value: object) -> dict[str, JSONDict]:
    if not isinstance(value, dict):
        return {}
    return {key: item for key, item in value.items() if isinstance(item, dict)}
