"""Issue 35 items 4-6 in the demos: a way back, endings that say what happened, and what a
guest reads while a person decides (the corpora measure the reading; these pin the replies)."""

from __future__ import annotations

import pytest

from demo.hotel.flow import PROVIDERS, HotelFlow
from demo.reading import corrects_a_number, goes_back, way_back
from picoflow import FlowEngine
from picoflow.stores import MemoryStore


@pytest.mark.parametrize(
    "text",
    [
        "ok can we start over", "let's start again", "from scratch please",
        "i want to change my dates", "can I change the budget?", "different dates maybe",
        "redo the plan",
    ],
)  # fmt: skip
def test_way_back_reads_a_wish_to_go_back_to_the_criteria(text: str) -> None:
    assert way_back(text)


@pytest.mark.parametrize(
    "text", ["book number 3", "the cheapest one", "does it have a pool?", "change of plans, bye"]
)
def test_way_back_is_no_choice_nor_question(text: str) -> None:
    assert not way_back(text)


def test_go_back_and_a_corrected_number_are_read_alone() -> None:
    assert goes_back("ok go back") and goes_back("back please") and not goes_back("go back to 3")
    assert corrects_a_number("i said 250 not 200") and not corrects_a_number("250 not bad")


async def _pending_booking() -> tuple[FlowEngine, str, dict]:
    flow = HotelFlow.using("offline:hotel")
    engine = FlowEngine([flow], store=MemoryStore(), providers=PROVIDERS)
    config = {"today": "2026-05-15", "approval_limit": 500}
    first = await engine.run("HotelFlow", "Hi, I need a hotel in Portland", config=config)
    result = first
    for line in ["July 1 to July 6", "search now", "book number 2"]:
        result = await engine.run("HotelFlow", line, first.session_id)
    return engine, first.session_id or "", result.pending_approvals[0] | {"reply": result.message}


async def test_a_booking_waiting_for_approval_is_told_in_the_guests_words() -> None:
    engine, session, approval = await _pending_booking()
    assert approval["reply"] == (
        "Thank you! Your booking at Gresham Butte Lodge (5 nights, $725.56 in total) needs a "
        "quick check by our team because its total is over $500. Nothing is booked yet: I'll "
        "confirm here as soon as it is approved."
    )
    waiting = await engine.run("HotelFlow", "is it done?", session)
    assert "chosen_hotel" not in waiting.message and "hotel=" not in waiting.message
    assert waiting.message.startswith("Your booking at Gresham Butte Lodge (5 nights, $725.56")


async def test_an_operators_reject_note_reaches_the_guest() -> None:
    engine, session, approval = await _pending_booking()
    await engine.run("HotelFlow", "any news?", session)
    done = await engine.resolve_approval(
        session, approval["id"], "reject", by="maria", note="it is overbooked that week"
    )
    assert done.message.startswith(
        "I'm sorry, our team could not approve that booking: it is overbooked that week. "
        "Nothing was booked."
    )
    assert "chosen_hotel" not in done.message and not done.completed
