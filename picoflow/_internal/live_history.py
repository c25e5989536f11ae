"""A namespace's live message list, which knows how much of it a save has not seen change.

Every turn the engine serialises each namespace and reuses the dicts of the messages it saved
last time. Which those are used to take a pass over the whole history (is item i still the
object saved at i?), so a turn's save got slower as the conversation grew. Histories grow by
appending; anything else (compaction's cut, `Memory.erase`, a flow that edits
`Step.get_messages()` in place) goes through a handful of list methods, which this list
overrides to note the lowest position they touched. The save then knows the unchanged prefix
at once. A plain list in its place (a flow that assigned one) is compared item by item, as
before. What this cannot see is a change that bypasses the list's own methods (calling
`list.__setitem__(history, ...)` or `list.pop(history)` on it directly, or `heapq` on it): such
a change may be saved with the message as it was. `Step.get_messages()` says so.
"""

from __future__ import annotations

import operator
import sys
from collections.abc import Iterable
from typing import Any, SupportsIndex

from langchain_core.messages import BaseMessage

__all__ = ["LiveHistory", "unchanged_since_sync"]

_UNTOUCHED = sys.maxsize


class LiveHistory(list[BaseMessage]):
    """A list of messages that notes the lowest position changed since its last save.

    `synced` is the copy the engine took at that save (see `session._dump_messages`), and
    `_low` the lowest position at or after 1 that any call other than an append may have
    changed since then. The system slot (0) is compared by identity on its own.
    """

    __slots__ = ("synced", "_low")

    def __init__(self, items: Iterable[BaseMessage] = ()) -> None:
        """Hold `items`, with no save seen yet (the first save compares item by item)."""
        super().__init__(items)
        self.synced: list[BaseMessage] | None = None
        self._low = _UNTOUCHED

    def mark_synced(self, synced: list[BaseMessage]) -> None:
        """A save has just serialised this list; `synced` is its copy of the items."""
        self.synced = synced
        self._low = _UNTOUCHED

    def copy_history(self) -> LiveHistory:
        """A new list with the same items and the same knowledge of what changed."""
        twin = LiveHistory(self)
        twin.synced, twin._low = self.synced, self._low
        return twin

    def _touched(self, index: int) -> None:
        self._low = min(self._low, max(index, 1))

    def _touched_key(self, key: SupportsIndex | slice) -> None:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self))
            self._touched(min(start, stop) if step < 0 else start)
        else:
            index = operator.index(key)  # TypeError for a key no list takes, as list says
            self._touched(index + len(self) if index < 0 else index)

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(key, slice) or operator.index(key) not in (0, -len(self)):
            self._touched_key(key)  # the system slot on its own shifts nothing
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        self._touched_key(key)
        super().__delitem__(key)

    def insert(self, index: SupportsIndex, value: BaseMessage) -> None:
        """`list.insert`, noting the position."""
        self._touched_key(slice(index, index))
        super().insert(index, value)

    def pop(self, index: SupportsIndex = -1) -> BaseMessage:
        """`list.pop`, noting the position."""
        self._touched_key(index)
        return super().pop(index)

    def remove(self, value: BaseMessage) -> None:
        """`list.remove`, noting the position."""
        self._touched(self.index(value))
        super().remove(value)

    def clear(self) -> None:
        """`list.clear`: nothing is kept."""
        self._touched(1)
        super().clear()

    def sort(self, *args: Any, **kwargs: Any) -> None:
        """`list.sort`: nothing is known to be kept."""
        self._touched(1)
        super().sort(*args, **kwargs)

    def reverse(self) -> None:
        """`list.reverse`: nothing is known to be kept."""
        self._touched(1)
        super().reverse()

    def __imul__(self, count: SupportsIndex) -> LiveHistory:
        if operator.index(count) < 1:
            self._touched(1)
        super().__imul__(count)
        return self


def unchanged_since_sync(items: list[BaseMessage], synced: list[BaseMessage]) -> int | None:
    """`keep` as `stores.base.unchanged` finds it, known without a pass; None when not known.

    Known when `items` is a `LiveHistory` whose last save took exactly `synced`.
    """
    if type(items) is not LiveHistory or items.synced is not synced:
        return None
    return min(len(items), len(synced), items._low)
