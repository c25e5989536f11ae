"""HotelFlow remembers a returning guest (issue 23), on every store, through the engine.

L1: the bank is the owner's (the H4 principal, else `config.user_id`), in the store's database;
L5: flow code writes and forgets it (`flow.memory_bank()`), and no other owner ever sees it.
"""

from __future__ import annotations

from typing import Any

from demo.hotel.flow import PROVIDERS, HotelFlow
from demo.hotel.returning import NO_OWNER
from picoflow import FlowEngine, TurnResult
from picoflow.stores.base import Store

TODAY = "2026-05-15"
OFFER = "Last time you chose a suite with pool and breakfast included — same again?"
FIRST_VISIT = [
    "", "Hi, I need a hotel in Portland", "July 1 to July 6",
    "a suite with a pool and breakfast included", "search now", "book number 1",
]  # fmt: skip


class Guest:
    """One session of HotelFlow on the offline model, for an owner (or for nobody)."""

    def __init__(self, engine: FlowEngine, owner: str | None = None, user_id: str | None = None):
        self.engine, self.owner = engine, owner
        self.config = {"today": TODAY, **({"user_id": user_id} if user_id else {})}
        self.session: str | None = None

    async def say(self, *lines: str) -> TurnResult:
        result = None
        for text in lines:
            config = self.config if self.session is None else None
            result = await self.engine.run(
                "HotelFlow", text, self.session, config, owner=self.owner
            )
            assert result.success, result.message
            self.session = result.session_id
        assert result is not None
        return result

    async def explore(self) -> dict[str, Any]:
        assert self.session is not None
        doc = await self.engine.get_session(self.session)
        assert doc is not None
        return dict(doc["steps"]["ExploreStep"]["state"])


def engine_on(store: Store) -> FlowEngine:
    return FlowEngine([HotelFlow.using("offline:hotel")], store=store, providers=PROVIDERS)


async def test_l1_a_booking_is_offered_again_in_the_next_session_of_the_same_owner(
    store: Store,
) -> None:
    engine = engine_on(store)
    first = Guest(engine, owner="ada")
    booked = await first.say(*FIRST_VISIT)
    assert booked.completed and "HF-" in booked.message
    (entry,) = await engine.memory_bank("ada").list()
    assert (entry["kind"], entry["text"]) == (
        "preference", "Usual stay: suite; amenities: pool, breakfast included."
    )  # fmt: skip
    assert entry["source"]["session_id"] == first.session

    again = Guest(engine, owner="ada")
    greeting = await again.say("")
    assert "Welcome back!" in greeting.message
    offered = await again.say(
        "Hi, I need a hotel in Portland", "August 3 to August 7", "under $400"
    )
    assert OFFER in offered.message
    assert "criteria" not in await again.explore()  # offered, not searched with
    taken = await again.say("yes, same as last time")
    assert "suite, with pool, breakfast included" in taken.message
    await again.say("search now")
    criteria = (await again.explore())["criteria"]
    assert (criteria["room_type"], criteria["amenities"]) == (
        "suite",
        ["pool", "breakfast included"],
    )


async def test_l1_the_usual_stay_is_never_searched_with_unasked(store: Store) -> None:
    engine = engine_on(store)
    await Guest(engine, user_id="ada").say(*FIRST_VISIT)  # config.user_id is the owner too
    guest = Guest(engine, user_id="ada")
    await guest.say("", "Hi, I need a hotel in Portland", "August 3 to August 7", "under $400")
    listed = await guest.say("search now")  # the offer stood unanswered
    assert listed.step == "PresentStep"
    criteria = (await guest.explore())["criteria"]
    assert (criteria["room_type"], criteria["amenities"]) == (None, [])
    declined = Guest(engine, user_id="ada")
    await declined.say("", "Hi, I need a hotel in Portland", "August 3 to August 7", "under $400")
    reply = await declined.say("no thanks")
    assert reply.message.startswith("No problem. Which room type would you like")


async def test_l5_another_owner_and_an_anonymous_guest_get_nothing(store: Store) -> None:
    engine = engine_on(store)
    await Guest(engine, owner="ada").say(*FIRST_VISIT)
    bob = Guest(engine, owner="bob")
    greeting = await bob.say("")
    assert "Welcome back" not in greeting.message
    asked = await bob.say("Hi, I need a hotel in Portland", "August 3 to August 7", "under $400")
    assert "Which room type would you like" in asked.message and "Last time" not in asked.message
    assert "usual" not in await bob.explore()
    nobody = Guest(engine)
    await nobody.say(*FIRST_VISIT)  # books, with no owner: nothing to remember it for
    forgot = await Guest(engine).say("", "forget what you know about me")
    assert forgot.message.startswith(NO_OWNER)
    assert await engine.memory_bank("bob").list() == []
    assert len(await engine.memory_bank("ada").list()) == 1


async def test_l5_forget_what_you_know_about_me_deletes_the_bank_and_this_session(
    store: Store,
) -> None:
    engine = engine_on(store)
    await Guest(engine, owner="ada").say(*FIRST_VISIT)
    await Guest(engine, owner="bob").say(*FIRST_VISIT)
    guest = Guest(engine, owner="ada")
    await guest.say("", "Hi, I need a hotel in Portland", "August 3 to August 7")
    forgot = await guest.say("forget what you know about me")
    assert forgot.message == (
        "Done: I have forgotten what I knew about you from earlier stays, and I won't remember "
        "this conversation either. How else can I help with your stay?"
    )
    assert forgot.step == "ExploreStep" and not forgot.completed
    assert await engine.memory_bank("ada").list() == []
    asked = await guest.say("under $400")
    assert "Which room type would you like" in asked.message  # no offer left in this session
    booked = await guest.say("a suite", "search now", "book number 1")
    assert booked.completed
    assert await engine.memory_bank("ada").list() == []  # the session that asked keeps nothing
    later = Guest(engine, owner="ada")
    assert "Welcome back" not in (await later.say("")).message
    assert len(await engine.memory_bank("bob").list()) == 1  # another owner's bank stays


async def test_l1_a_later_booking_rewrites_the_one_usual_stay(store: Store) -> None:
    engine = engine_on(store)
    await Guest(engine, owner="ada").say(*FIRST_VISIT)
    second = Guest(engine, owner="ada")
    await second.say("", "Hi, I need a hotel in Portland", "August 3 to August 7", "no preference")
    await second.say("two beds and wifi this time", "search now", "book number 1")
    (entry,) = await engine.memory_bank("ada").list()
    assert entry["text"] == "Usual stay: two beds; amenities: wifi."
