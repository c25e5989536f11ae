"""Issue 19 (HotelFlow) and issue 25 item 8: one test per class of misreading the issue names.

Each was written before its fix and failed on main then. They drive the real engine on the
offline model from a fixed "today" (2026-05-15, a Friday, unless a test says otherwise), as
``test_understanding.py`` does; the corpus (``test_corpus.py``) holds more phrasings of each.
"""

from __future__ import annotations

from datetime import date

import pytest
from hotel_chat import Guest, offline_engine

from demo.hotel.offline.explore import AREA_QUESTION
from demo.hotel.offline.language import parse_amenities, parse_dates
from demo.hotel.types import DateRange

TODAY = date(2026, 5, 15)
ROOM_Q = 'Which room type would you like: one bed, two beds or a suite? (or "skip")'


async def _listed(*criteria: str) -> Guest:
    """A guest looking at page 1 of the hotels free on July 1-6 (with ``criteria``)."""
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("Hi, I need a hotel in Portland", "July 1 to July 6", *criteria, "search now"):
        result = await guest.say(said)
    assert result.step == "PresentStep", result.message
    return guest


async def _dates_of(guest: Guest) -> tuple[str, str]:
    criteria = await guest.criteria()
    assert criteria is not None
    (stay,) = criteria["dates"]
    return stay["start"], stay["end"]


@pytest.mark.parametrize("said", ["budget 500", "change the maximum to 500"])
async def test_a_new_budget_at_the_list_is_a_new_search_not_a_hotel_number(said: str) -> None:
    guest = await _listed()
    result = await guest.say(said)
    assert "no number 500" not in result.message
    assert result.step == "PresentStep" and "I found" in result.message
    assert (await guest.criteria() or {})["budget_max"] == 500


@pytest.mark.parametrize(
    "said", ["actually we'll get in on the 2nd", "start on the 2nd, same checkout"]
)
async def test_a_new_check_in_day_at_the_list_moves_only_the_check_in(said: str) -> None:
    guest = await _listed()
    result = await guest.say(said)
    assert result.step == "PresentStep", result.message
    assert await _dates_of(guest) == ("2026-07-02", "2026-07-06")


@pytest.mark.parametrize("said", ["remove the budget limit", "get rid of the max price"])
async def test_removing_the_budget_limit_at_the_list_searches_without_one(said: str) -> None:
    guest = await _listed("under $200")
    result = await guest.say(said)
    assert result.step == "PresentStep" and "I found 30 hotels" in result.message, result.message
    assert (await guest.criteria() or {})["budget_max"] is None


async def test_resume_booking_in_the_comparison_goes_back_so_a_number_books() -> None:
    """``resume_booking`` is the tool's name; a guest who says it wants the list back (R4)."""
    guest = await _listed()
    await guest.say("compare 2 and 4")
    back = await guest.say("resume booking")
    assert back.step == "PresentStep", back.message
    booked = await guest.say("3")
    assert booked.step == "EndStep" and (await guest.booking() or {})["hotel"] == "Murray Creek Inn"


@pytest.mark.parametrize("said", ["go ahead", "do it"])
async def test_go_ahead_after_naming_a_hotel_books_it(said: str) -> None:
    guest = await _listed()
    await guest.say("tell me about the riverside inn")
    booked = await guest.say(said)
    assert booked.step == "EndStep", booked.message
    assert (await guest.booking() or {})["hotel"] == "Riverside Inn"


async def test_go_ahead_with_no_hotel_named_asks_which() -> None:
    guest = await _listed()
    result = await guest.say("go ahead")
    assert result.step == "PresentStep" and "Which hotel would you like to book?" in result.message


async def test_which_is_closer_of_two_answers_their_distances_only() -> None:
    guest = await _listed()
    result = await guest.say("which is closer, 3 or 5?")
    assert result.step == "PresentStep", result.message
    assert "Murray Creek Inn (#3)" in result.message
    assert "Mount Hood Gateway Inn (#5)" in result.message
    assert "Mabel" not in result.message and "|" not in result.message


async def test_which_is_closest_answers_the_distance_of_the_closest() -> None:
    guest = await _listed("under $200")
    result = await guest.say("which one is closest to downtown?")
    assert result.message.startswith("Hawthorne Bungalow Inn (#11) is "), result.message
    nearest = await guest.say("which hotel is nearest the airport?")
    assert nearest.message.startswith("Columbia Slough Lodge (#1) is 2.3 miles from PDX")


@pytest.mark.parametrize(
    "said", ["July 1 to 6, max 200 a night", "hi! we need 2 nights from june 12, budget about 150"]
)
async def test_dates_and_a_budget_answer_the_area_question(said: str) -> None:
    guest = Guest(offline_engine())
    await guest.start()
    result = await guest.say(said)
    assert AREA_QUESTION not in result.message
    assert result.message.startswith("Got it: ") and result.message.endswith(ROOM_Q)


async def test_february_30_is_named_as_a_day_that_does_not_exist() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("Hi, I need a hotel in Portland")
    result = await guest.say("feb 30 to march 2")
    assert result.message.startswith("There is no February 30"), result.message
    assert await guest.criteria() is None


async def test_a_minimum_above_the_maximum_is_said_not_stored_silently() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("Hi, I need a hotel in Portland", "July 1 to July 6", "under $300"):
        await guest.say(said)
    result = await guest.say("at least 400 a night")
    assert "above your maximum of $300" in result.message, result.message
    assert "at least $400 a night" in result.message


def test_a_weekday_written_with_its_date_is_that_one_day() -> None:
    """Feb 19, 2027 is a Friday: "friday the 19th" is one day, not a Friday and a 19th."""
    december = date(2026, 12, 2)
    stay = [DateRange(start=date(2027, 2, 19), end=date(2027, 2, 22))]
    assert parse_dates("friday the 19th of february for 3 nights", december) == stay
    assert parse_dates("friday the 19th of february for 3 nights", TODAY) == stay
    assert parse_dates("saturday june 20th, 2 nights", TODAY) == [
        DateRange(start=date(2026, 6, 20), end=date(2026, 6, 22))
    ]


async def test_a_weekday_that_does_not_match_its_date_gets_a_question() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("Hi, I need a hotel in Portland")
    result = await guest.say("monday the 19th of february for 3 nights")
    assert "Feb 19, 2027 is a Friday" in result.message, result.message
    assert await guest.criteria() is None


@pytest.mark.parametrize(
    ("said", "wanted"),
    [
        ("parkng and wifi", {"free parking", "wifi"}),
        ("a pool and free parkin", {"pool", "free parking"}),
        ("gym n breakfest", {"fitness center", "breakfast included"}),
    ],
)
def test_a_misspelt_amenity_is_read(said: str, wanted: set[str]) -> None:
    assert set(parse_amenities(said)) == wanted


@pytest.mark.parametrize("said", ["my wife and I", "we are parting ways", "changing the dates"])
def test_a_word_one_letter_from_an_amenity_is_no_amenity(said: str) -> None:
    assert parse_amenities(said) == []


async def test_a_misspelt_amenity_at_the_question_is_kept() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("Hi, I need a hotel in Portland", "July 1 to July 6", "under $300", "two beds"):
        await guest.say(said)
    result = await guest.say("parkng")
    assert result.message.startswith("Got it: ") and "free parking" in result.message


async def test_two_guests_booking_the_same_room_on_the_same_day_get_different_numbers() -> None:
    engine = offline_engine()
    numbers = []
    for _ in range(2):
        guest = Guest(engine)
        await guest.start()
        for said in ("Hi, I need a hotel in Portland", "July 1 to July 6", "search now", "book 2"):
            await guest.say(said)
        numbers.append((await guest.booking() or {})["confirmation"])
    assert numbers[0] != numbers[1]


@pytest.mark.parametrize(
    ("said", "start", "end"),
    [
        ("march 14 for 2 nights", date(2027, 3, 14), date(2027, 3, 16)),
        ("jan 5 to jan 8", date(2027, 1, 5), date(2027, 1, 8)),
        ("May 14 to May 16", date(2027, 5, 14), date(2027, 5, 16)),
        ("May 15 to May 16", date(2026, 5, 15), date(2026, 5, 16)),
        ("Dec 30 to Jan 2", date(2026, 12, 30), date(2027, 1, 2)),
    ],
)
def test_a_date_without_a_year_is_the_next_one_to_come(said: str, start: date, end: date) -> None:
    """Issue 25 item 8: "march 14" said after March 14 is next year's, never the one gone."""
    assert parse_dates(said, TODAY) == [DateRange(start=start, end=end)]


async def test_a_date_without_a_year_said_in_december_is_not_refused_as_past() -> None:
    engine = offline_engine()
    first = await engine.run("HotelFlow", "", None, {"today": "2026-12-02"})
    await engine.run("HotelFlow", "Hi, I need a hotel in Portland", first.session_id)
    result = await engine.run("HotelFlow", "march 14 for 2 nights", first.session_id)
    assert result.message.startswith("Got it: Mar 14, 2027 → Mar 16, 2027 (2 nights)."), (
        result.message
    )


async def test_a_new_budget_in_the_comparison_is_a_new_search_too() -> None:
    guest = await _listed()
    await guest.say("compare 2 and 4")
    result = await guest.say("budget 500")
    assert result.step == "PresentStep" and "I found 29 hotels" in result.message, result.message
