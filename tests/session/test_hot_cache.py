"""The engine's cache of recently saved sessions under load from many sessions at once (P4).

Found by the reliability suite: with more sessions in flight than the cache holds, one session's
entry could be pushed out by other sessions' saves while its revision was being read, and the
turn failed with a KeyError.
"""

from __future__ import annotations

import asyncio
from typing import Any

from picoflow.memory import Namespace
from picoflow.session._cache import HotSessions


class SlowRevisions:
    """A store whose `revision()` waits until the test lets it answer."""

    def __init__(self) -> None:
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()
        self.loads: list[str] = []

    async def revision(self, session_id: str) -> int:
        self.entered.set()
        await self.gate.wait()
        return 1

    async def load(self, session_id: str) -> dict[str, Any]:
        self.loads.append(session_id)
        return {"id": session_id, "revision": 1}


def doc(session_id: str, revision: int = 1) -> dict[str, Any]:
    return {"id": session_id, "revision": revision}


async def test_p4_an_entry_evicted_during_its_revision_read_is_still_used() -> None:
    hot = HotSessions(size=2)
    spaces: dict[str, Namespace] = {}
    hot.keep(doc("a"), spaces)
    store = SlowRevisions()
    reading = asyncio.ensure_future(hot.load(store, "a"))
    await store.entered.wait()
    hot.keep(doc("b"), spaces)
    hot.keep(doc("c"), spaces)  # pushes "a" out while its revision is being read
    store.gate.set()
    loaded, cached = await reading
    assert loaded == doc("a") and cached is spaces and store.loads == []
    hot.keep(doc("d"), spaces)
    assert len(hot._entries) == 2  # the bound holds again at the next save


async def test_p4_a_stale_entry_evicted_during_its_revision_read_is_loaded_again() -> None:
    hot = HotSessions(size=1)
    hot.keep(doc("a", revision=0), {})
    store = SlowRevisions()
    reading = asyncio.ensure_future(hot.load(store, "a"))
    await store.entered.wait()
    hot.keep(doc("b"), {})
    store.gate.set()
    loaded, cached = await reading
    assert loaded == doc("a") and cached is None and store.loads == ["a"]
