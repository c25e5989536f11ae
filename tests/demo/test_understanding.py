"""Issue 14: the offline model answers questions, acts only on a choice, reads every selection.

The corpus (``test_corpus.py``) measures breadth; these tests pin the exact replies of the
behaviours the issue names, through the real engine from a fixed "today" (2026-05-15).
"""

from __future__ import annotations

from datetime import date

from hotel_chat import Guest, offer_names, offline_engine
from langchain_core.messages import HumanMessage, SystemMessage

from demo.hotel import catalog
from demo.hotel.booking import numbered
from demo.hotel.formats import LIST_OPENER
from demo.hotel.offline.model import OfflineHotelModel
from demo.hotel.prompting import present_prompt
from demo.hotel.types import StayCriteria

TODAY = date(2026, 5, 15)
JULY = {"dates": [{"start": "2026-07-01", "end": "2026-07-06"}]}


async def listed_guest() -> Guest:
    """A guest looking at page 1 of the 30 hotels free on July 1-6."""
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("Hi, I need a hotel in Portland")
    await guest.say("July 1 to July 6")
    result = await guest.say("search now")
    assert result.step == "PresentStep", result.message
    return guest


def test_the_flows_own_opener_is_no_choice_even_with_one_hotel_hotel() -> None:
    """A single "… Hotel" in the list: the opener the flow sends itself shows it, books nothing."""
    criteria = StayCriteria.model_validate(JULY)
    found = [q for q in catalog.search(criteria, TODAY) if "Hotel" in q.hotel.name]
    offers = numbered(found[:1])
    model = OfflineHotelModel().bind_tools(
        [{"type": "function", "function": {"name": n, "parameters": {}}} for n in (
            "chosen_hotel", "show_hotels", "answer_question", "search_again", "go_compare",
        )]
    )  # fmt: skip
    prompt = present_prompt(offers, "price", 1, criteria)
    reply = model.invoke([SystemMessage(prompt), HumanMessage(LIST_OPENER)])
    assert [call["name"] for call in reply.tool_calls] == ["show_hotels"]


def test_generic_words_and_near_misses_name_no_hotel() -> None:
    for said in ("hotels", "the inns", "suites", "lodges", "Hotel", "that situation is odd"):
        assert catalog.mentioned_hotels(said) == [], said
    assert [h.name for h in catalog.mentioned_hotels("the Orenco Station")] == [
        "Orenco Station Suites"
    ]
    assert [h.name for h in catalog.mentioned_hotels("Hawthrone Bungalow")] == [
        "Hawthorne Bungalow Inn"
    ]  # one swapped pair of letters is still the name


async def test_a_question_is_answered_and_book_it_then_books_that_hotel() -> None:
    guest = await listed_guest()
    before = await guest.state("PresentStep")
    answer = await guest.say("does number 3 have a pool?")
    assert answer.message == "No, Murray Creek Inn (#3) does not have pool."
    assert await guest.state("PresentStep") == before and answer.step == "PresentStep"
    distance = await guest.say("and how far is it from the airport?")
    assert distance.message == (
        "Murray Creek Inn (#3) is 20.6 miles from PDX airport and 8.2 miles from downtown Portland."
    )
    booked = await guest.say("ok, book it")
    assert booked.completed and (await guest.booking())["hotel"] == "Murray Creek Inn"


async def test_a_number_off_the_list_is_named_and_the_rest_offered() -> None:
    guest = await listed_guest()
    reply = await guest.say("compare 1,3,40")
    assert reply.message == (
        "There is no number 40: the list has 30 hotels (1 to 30). Shall I go on with "
        "1. Columbia Slough Lodge and 3. Murray Creek Inn?"
    )
    assert reply.step == "PresentStep"


async def test_every_match_is_listed_ten_a_page_and_numbers_survive_sorting() -> None:
    guest = await listed_guest()
    names = offer_names(await guest.state("PresentStep"))
    assert len(names) == 30
    second = await guest.say("more")
    assert "page 2 of 3" in second.message and f"11. {names[10]} — " in second.message
    by_airport = await guest.say("sort by distance to the airport")
    first_line = by_airport.message.splitlines()[1]
    assert first_line.startswith("13. Cascade Runway Suites — ")  # closest to PDX, same number
    booked = await guest.say("book number 13")
    assert (await guest.booking())["hotel"] == "Cascade Runway Suites" and booked.completed


async def test_in_a_comparison_ordinals_are_the_tables_columns() -> None:
    guest = await listed_guest()
    names = offer_names(await guest.state("PresentStep"))
    table = await guest.say("compare 2 and 4 on price")
    assert table.message.startswith(f"| Price | {names[1]} | {names[3]} |")
    first = await guest.say("the first one")
    assert first.message == (
        f"That's 2. {names[1]}. Shall I book {names[1]}? Or name another hotel to compare it with."
    )
    booked = await guest.say("yes")
    assert booked.completed and (await guest.booking())["hotel"] == names[1]


async def test_explore_asks_one_thing_at_a_time_and_a_correction_changes_only_it() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    replies = [
        (await guest.say(text)).message
        for text in ("the 3rd to the 7th of next month", "skip", "a suite", "none", "skip")
    ]
    assert replies[0] == (
        'Got it: Jun 3, 2026 → Jun 7, 2026 (4 nights). What is your budget per night? (or "no '
        'preference")'
    )
    assert replies[1].endswith("Which room type would you like: one bed, two beds or a suite? "
                               '(or "skip")')  # fmt: skip
    assert replies[2].endswith('(or "none")') and "amenities" in replies[2]
    assert replies[3].endswith('in miles? (or "no preference")')
    assert replies[4] == (
        "Here is your search:\nDates: Jun 3, 2026 → Jun 7, 2026 (4 nights)\nBudget: no limit\n"
        "Room type: suite\nAmenities: none required\nDistance: anywhere in the area\n"
        "Anything to change, or shall I search now?"
    )
    corrected = await guest.say("one more night")
    assert "Dates: Jun 3, 2026 → Jun 8, 2026 (5 nights)" in corrected.message
    assert "Room type: suite" in corrected.message
    searched = await guest.say("yes")
    assert searched.step == "PresentStep"
    assert (await guest.criteria())["dates"] == [{"start": "2026-06-03", "end": "2026-06-08"}]
