"""Saved message lists and the reuse of their encodings: what makes a save cost what a turn added.

The engine saves the whole session every turn; these pieces let it (and every store) encode only
the messages the turn added. `stores.base` re-exports them: that is where store authors look.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Callable, Iterable
from itertools import compress, count, islice
from operator import is_not
from typing import Any, Generic, SupportsIndex, TypeVar

__all__ = [
    "JSONDict",
    "MessageEncodings",
    "REMEMBERED_SESSIONS",
    "SavedMessages",
    "encode_new",
    "unchanged",
]

JSONDict = dict[str, Any]


class SavedMessages(list[JSONDict]):
    """A namespace's messages as the engine saves them: dicts it never mutates afterwards.

    The engine saves the whole session every turn but keeps the dicts of earlier messages as
    the very same objects, so a store can reuse what it encoded for them last time and a save
    costs what the turn added. Only this promise makes that safe: a caller of the store API
    who edits a message dict in place and saves again passes plain lists (documents from
    `load()` have them), which every store encodes in full. It is a plain list to JSON.

    The list itself is read-only (its mutating methods raise `TypeError`), and it may name the
    list it grew from (`base`) and how much of that it kept, so a store that encoded `base`
    knows what to reuse without comparing the two lists item by item: checking, encoding and
    writing a save then cost what the turn added, however long the conversation. Copies
    (`list(saved)`, `copy`, pickle) are plain lists: they carry no promise.
    """

    __slots__ = ("_base", "_kept")

    def __init__(
        self,
        items: Iterable[JSONDict] = (),
        *,
        base: SavedMessages | None = None,
        kept: tuple[int, bool] = (0, False),
    ) -> None:
        """Hold `items`; `base` and `kept` as `unchanged(self, base)` would find them."""
        super().__init__(items)
        self._base = base
        self._kept = kept

    def grown_from(self, base: list[Any]) -> tuple[int, bool] | None:
        """What `unchanged(self, base)` returns, if this list was made from `base`; else None."""
        return self._kept if self._base is base else None

    def forget_base(self) -> None:
        """Let go of the list this one grew from (so a history never holds a chain of them)."""
        self._base = None

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(
            "SavedMessages is read-only: stores reuse what they encoded for it. Copy it with "
            "list(...) to change it (a plain list is encoded in full)."
        )

    append = extend = insert = pop = remove = clear = sort = reverse = _read_only
    __setitem__ = __delitem__ = __iadd__ = __imul__ = _read_only

    def __copy__(self) -> list[JSONDict]:
        return list(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> list[JSONDict]:
        return copy.deepcopy(list(self), memo)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (list, (list(self),))


_Out = TypeVar("_Out")


def unchanged(items: list[Any], old_items: list[Any]) -> tuple[int, bool]:
    """How much of `items` is still `old_items`: `(keep, slot_kept)`.

    Items 1 to `keep - 1` are the very objects at those indexes of `old_items`, and the system
    slot (index 0) is too when `slot_kept`. Histories grow by appending and saved messages are
    never mutated, so after index 0 the unchanged part is a prefix; the system slot is compared
    on its own, so a new prompt does not end the reuse. A `SavedMessages` made from `old_items`
    says so itself (no pass over the lists); otherwise one C-level pass finds the prefix.
    """
    if type(items) is SavedMessages:
        known = items.grown_from(old_items)
        if known is not None:
            return known
    pairs = map(is_not, islice(items, 1, None), islice(old_items, 1, None))  # no list copies
    changed = next(compress(count(1), pairs), None)
    keep = min(len(items), len(old_items)) if changed is None else changed
    return keep, bool(items) and bool(old_items) and items[0] is old_items[0]


def encode_new(
    items: list[Any],
    previous: tuple[list[Any], list[_Out]],
    encode: Callable[[Any], _Out],
    found: tuple[int, bool] | None = None,
) -> list[_Out]:
    """`[encode(i) for i in items]`, reusing the outputs of objects encoded last time.

    `previous` holds those items and their outputs; `found` is `unchanged(items, previous[0])`
    when the caller has it already. A save then costs what the turn added, not what the
    conversation holds. The engine's session dump and the stores' encoders all use this.
    """
    if not items:
        return []
    old_items, old_out = previous
    keep, slot_kept = unchanged(items, old_items) if found is None else found
    if keep > 1:
        out = old_out[:keep]  # one copy of the reused part, however long it is
        if not slot_kept:
            out[0] = encode(items[0])
    else:
        out = [old_out[0] if slot_kept else encode(items[0])]
    out += [encode(item) for item in items[max(keep, 1) :]]
    return out


# How many recently saved sessions a persistent store keeps message encodings of.
REMEMBERED_SESSIONS = 256


class MessageEncodings(Generic[_Out]):
    """A store's memory of how it encoded each session's messages, for `encode_new` to reuse.

    Per session and namespace it keeps the last `SavedMessages` list encoded and its outputs;
    the `capacity` most recently saved sessions are kept (None: all). Plain lists carry no
    promise that their dicts are unchanged: they are encoded in full, and remembered by nobody.
    """

    def __init__(self, capacity: int | None = REMEMBERED_SESSIONS) -> None:
        """Start with nothing remembered."""
        self._capacity = capacity
        self._sessions: OrderedDict[str, dict[str, tuple[list[Any], list[_Out]]]] = OrderedDict()

    def encode(
        self, session_id: str, namespace: str, messages: list[Any], encode: Callable[[Any], _Out]
    ) -> list[_Out]:
        """`[encode(m) for m in messages]`, reusing what was encoded for the same dicts."""
        if not isinstance(messages, SavedMessages):
            known = self._sessions.get(session_id)
            if known is not None:
                known.pop(namespace, None)
            return [encode(message) for message in messages]
        known = self._sessions.setdefault(session_id, {})
        self._sessions.move_to_end(session_id)
        while self._capacity is not None and len(self._sessions) > self._capacity:
            self._sessions.popitem(last=False)
        outputs = encode_new(messages, known.get(namespace, ([], [])), encode)
        known[namespace] = (messages, outputs)  # read-only, so kept as it is
        return outputs

    def forget(self, session_id: str) -> None:
        """Drop what is remembered of a session (it was deleted)."""
        self._sessions.pop(session_id, None)

    def clear(self) -> None:
        """Drop everything (the store was closed)."""
        self._sessions.clear()
