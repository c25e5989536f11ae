"""O5: every store keeps a streamed turn's events for a while, append-only, for any worker."""

from __future__ import annotations

from typing import Any

import pytest

from picoflow.stores.base import Store

# Far in the future: MongoDB's TTL monitor sweeps a kept stream once its expiry has passed in
# real time, whatever `now` a call is given.
NOW = "2099-12-02T08:00:00.000Z"
LATER = "2099-12-02T08:10:00.000Z"  # NOW + 10 minutes: the default keep
PAST = "2099-12-02T07:59:59.999Z"
TURN = "turn-0001-abcd"


def frames(*numbers: int) -> list[tuple[int, str]]:
    return [(n, f'event: token\ndata: {{"text": "{n}"}}\nid: {TURN}:{n}\n\n') for n in numbers]


async def test_o5_a_kept_stream_reads_back_after_any_event_and_knows_when_it_ended(
    store: Any,
) -> None:
    await store.stream_open(TURN, "ana", LATER, NOW)
    assert (await store.stream_read(TURN, 0, NOW)).events == []
    await store.stream_append(TURN, frames(1, 2), LATER)
    await store.stream_append(TURN, frames(3), LATER, ended=True)
    kept = await store.stream_read(TURN, 0, NOW)
    assert kept.owner == "ana" and kept.ended is True
    assert kept.events == frames(1, 2, 3)
    after_two = await store.stream_read(TURN, 2, NOW)
    assert after_two.events == frames(3) and after_two.ended is True
    assert (await store.stream_read(TURN, 3, NOW)).events == []


async def test_o5_a_stream_without_owner_and_one_still_running(store: Any) -> None:
    await store.stream_open(TURN, None, LATER, NOW)
    await store.stream_append(TURN, frames(1), LATER)
    kept = await store.stream_read(TURN, 0, NOW)
    assert kept.owner is None and kept.ended is False and kept.events == frames(1)


async def test_o5_unknown_and_expired_streams_read_as_none_and_purge_deletes_them(
    store: Any,
) -> None:
    assert await store.stream_read("never-opened", 0, NOW) is None
    await store.stream_open(TURN, "ana", NOW, PAST)
    await store.stream_open("turn-0002-abcd", "ana", LATER, PAST)
    await store.stream_append(TURN, frames(1), NOW)
    assert (await store.stream_read(TURN, 0, PAST)).events == frames(1)
    assert await store.stream_read(TURN, 0, LATER) is None  # expired, if not yet purged
    assert await store.stream_purge(LATER) == 1
    assert await store.stream_read(TURN, 0, PAST) is None  # gone for good
    assert await store.stream_read("turn-0002-abcd", 0, NOW) is not None


async def test_o5_an_append_moves_the_expiry_on(store: Any) -> None:
    await store.stream_open(TURN, "ana", NOW, PAST)
    await store.stream_append(TURN, frames(1), LATER)
    assert (await store.stream_read(TURN, 0, "2099-12-02T08:05:00.000Z")).events == frames(1)


async def test_o5_the_session_purge_deletes_expired_streams_too(store: Store) -> None:
    purge = getattr(store, "purge")  # noqa: B009 - every bundled store has one (W5)
    kept: Any = store
    await kept.stream_open(TURN, "ana", NOW, PAST)
    await purge(LATER)
    assert await kept.stream_read(TURN, 0, PAST) is None


async def test_o5_bad_calls_are_refused_with_what_to_do(store: Any) -> None:
    await store.stream_open(TURN, "ana", LATER, NOW)
    with pytest.raises(ValueError, match="already kept for turn 'turn-0001-abcd'"):
        await store.stream_open(TURN, "ana", LATER, NOW)
    with pytest.raises(ValueError, match="No kept stream for turn 'other-turn-id'.*Open it first"):
        await store.stream_append("other-turn-id", frames(1), LATER)
    with pytest.raises(ValueError, match="8 to 64 letters"):
        await store.stream_open("a:b", "ana", LATER, NOW)
    with pytest.raises(ValueError, match=r"list of \(n, text\) tuples"):
        await store.stream_append(TURN, [(0, "x")], LATER)
    with pytest.raises(ValueError, match="without gaps, got \\[1, 3\\]"):
        await store.stream_append(TURN, frames(1, 3), LATER)
    assert (await store.stream_read(TURN, 0, NOW)).events == []  # nothing half-written


async def test_o5_a_read_says_until_when_the_stream_is_kept(store: Any) -> None:
    """A reader tells a writer that still appends (the stamp moves) from one that stopped."""
    await store.stream_open(TURN, "ana", NOW, PAST)
    assert (await store.stream_read(TURN, 0, PAST)).expires_at == NOW
    await store.stream_append(TURN, [], LATER)  # a heartbeat: no events, a later expiry
    assert (await store.stream_read(TURN, 0, PAST)).expires_at == LATER
