"""Issue 14: the offline model answers questions, acts only on a choice, reads every selection.

The corpus (``test_corpus.py``) measures breadth; these tests pin the exact replies of the
behaviours the issue names, through the real engine from a fixed "today" (2026-05-15).
"""

from __future__ import annotations

from datetime import date

import pytest
from hotel_chat import Guest, offer_names, offline_engine
from langchain_core.messages import HumanMessage, SystemMessage

from demo.hotel import catalog
from demo.hotel.booking import numbered
from demo.hotel.formats import LIST_OPENER
from demo.hotel.offline.explore import AREA_QUESTION, DECLINE
from demo.hotel.offline.language import (
    names_another_place,
    parse_budget,
    parse_dates,
    says_how_long,
    wants_a_room,
)
from demo.hotel.offline.model import OfflineHotelModel
from demo.hotel.prompting import present_prompt
from demo.hotel.types import DateRange, StayCriteria

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
    offer = next(o for o in (await guest.state("PresentStep"))["offers"] if o["name"] == names[1])
    read_back = f"Shall I book {names[1]} (5 nights, ${float(offer['total']):,.2f} in total)?"
    assert first.message == (  # the read-back names what a yes books (issue 35)
        f"That's 2. {names[1]}. {read_back} Or name another hotel to compare it with."
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


# --- Relative dates and the opening (a guest's report; that day was Tuesday 2026-12-01) --------

DEC_1 = date(2026, 12, 1)


@pytest.mark.parametrize(
    ("said", "start", "end"),
    [
        ("in two weeks for three nights", "2026-12-15", "2026-12-18"),
        ("in 3 days for two nights", "2026-12-04", "2026-12-06"),
        ("next week, 4 nights", "2026-12-07", "2026-12-11"),  # Monday of next week
        ("next week", "2026-12-07", "2026-12-08"),
        ("the week after next, 3 nights", "2026-12-14", "2026-12-17"),
        ("wednesday next week for 2 nights", "2026-12-09", "2026-12-11"),
        ("next week on wednesday for 2 nights", "2026-12-09", "2026-12-11"),
        ("next week tuesday to thursday", "2026-12-08", "2026-12-10"),
        ("friday of the week after next", "2026-12-18", "2026-12-19"),
        ("this time next week", "2026-12-08", "2026-12-09"),
        ("next week from tuesday to thursday", "2026-12-08", "2026-12-10"),
        ("in about two weeks for 3 nights", "2026-12-15", "2026-12-18"),
        ("tomorrow and the day after", "2026-12-02", "2026-12-04"),
        ("fri-sun next week", "2026-12-11", "2026-12-13"),  # was Dec 4 to Dec 13
        ("monday to wednesday of the week after next", "2026-12-14", "2026-12-16"),
        ("the weekend after next", "2026-12-11", "2026-12-13"),  # "next weekend" is Dec 4-6
        ("in 2 wks for 3 nights", "2026-12-15", "2026-12-18"),
        # "for two weeks from Thursday" is a two-week stay unless the nights come after it
        ("for two weeks from thursday", "2026-12-03", "2026-12-17"),
        ("any rooms for two weeks from thursday for 4 nights?", "2026-12-17", "2026-12-21"),
        # "a week" is when the stay starts, not how long it is (was Dec 1 to Dec 8)
        ("a week from today for 2 nights", "2026-12-08", "2026-12-10"),
        ("a week from tomorrow", "2026-12-09", "2026-12-10"),
        ("two weeks from now", "2026-12-15", "2026-12-16"),
        ("in a fortnight", "2026-12-15", "2026-12-16"),
        ("in a couple of weeks", "2026-12-15", "2026-12-16"),
        ("in a week's time for 2 nights", "2026-12-08", "2026-12-10"),
        ("in 10 days' time", "2026-12-11", "2026-12-12"),
        ("the day after tomorrow", "2026-12-03", "2026-12-04"),
        ("day after tomorrow until tuesday", "2026-12-03", "2026-12-08"),
        ("3 weeks from friday", "2026-12-25", "2026-12-26"),  # Friday is Dec 4
        ("in 2 weeks from friday", "2026-12-18", "2026-12-19"),
        ("a week from next friday", "2026-12-11", "2026-12-12"),
        ("checking in in 3 days for 2 nights", "2026-12-04", "2026-12-06"),
        # a duration that comes first is still the length: seven nights from tomorrow
        ("for a week from tomorrow", "2026-12-02", "2026-12-09"),
        ("tomorrow for a week", "2026-12-02", "2026-12-09"),
        # a month is the same day next month, across the year
        ("a month from now for 3 nights", "2027-01-01", "2027-01-04"),
        ("in two months", "2027-02-01", "2027-02-02"),
        ("for a week in a month", "2027-01-01", "2027-01-08"),
    ],
)
def test_days_counted_from_today_are_the_check_in(said: str, start: str, end: str) -> None:
    assert parse_dates(said, DEC_1) == [
        DateRange(start=date.fromisoformat(start), end=date.fromisoformat(end))
    ]


def test_a_month_from_the_31st_is_the_last_day_of_the_next_month() -> None:
    assert parse_dates("in a month", date(2027, 1, 31)) == [
        DateRange(start=date(2027, 2, 28), end=date(2027, 3, 1))
    ]


@pytest.mark.parametrize("said", ["check in one day earlier", "check in two days later"])
def test_a_shift_of_the_check_in_is_no_date_counted_from_today(said: str) -> None:
    assert parse_dates(said, DEC_1) is None  # the draft's correction rules move the stay


@pytest.mark.parametrize(
    ("said", "expected"),
    [
        ("fri-sun", [("2026-12-04", "2026-12-06")]),
        ("next fri to sun", [("2026-12-04", "2026-12-06")]),
        ("Thurs. to Sat.", [("2026-12-03", "2026-12-05")]),
        ("mon-wed next week", [("2026-12-07", "2026-12-09")]),
        ("on sat for 2 nights", [("2026-12-05", "2026-12-07")]),
        ("just sat night", [("2026-12-05", "2026-12-06")]),
        ("this sat and sun", [("2026-12-05", "2026-12-06"), ("2026-12-06", "2026-12-07")]),
        ("we sat down and looked at a sun deck", None),  # words, not days
    ],
)
def test_short_weekdays_where_they_can_only_be_days(
    said: str, expected: list[tuple[str, str]] | None
) -> None:
    pairs = expected or []
    stay = [DateRange(start=date.fromisoformat(a), end=date.fromisoformat(b)) for a, b in pairs]
    assert parse_dates(said, DEC_1) == (stay or None)


@pytest.mark.parametrize("said", ["in a week or two", "in 3 days or 4", "in a few weeks"])
def test_a_vague_count_gets_a_question_not_a_guess(said: str) -> None:
    assert parse_dates(said, DEC_1) is None


async def _opening(*said: str) -> list[str]:
    """The assistant's replies to ``said`` in a new session opened on 2026-12-01."""
    engine = offline_engine()
    first = await engine.run("HotelFlow", "", None, {"today": "2026-12-01"})
    replies = []
    for text in said:
        result = await engine.run("HotelFlow", text, first.session_id)
        assert result.success, result.message
        replies.append(result.message)
    return replies


async def test_asking_for_a_room_answers_the_area_question_and_keeps_the_criteria() -> None:
    replies = await _opening(
        "hey there", "I need a room in two weeks for three nights, under 250 a night"
    )
    assert replies[0].endswith(AREA_QUESTION)
    assert replies[1] == (
        "Got it: Dec 15, 2026 → Dec 18, 2026 (3 nights), up to $250 a night. Which room type "
        'would you like: one bed, two beds or a suite? (or "skip")'
    )


async def test_a_room_with_no_dates_moves_on_to_the_dates() -> None:
    assert await _opening("we want to book a room") == [
        "Great! When would you like to check in and check out?"
    ]
    assert await _opening("a hotel for next weekend") == [
        'Got it: Dec 4, 2026 → Dec 6, 2026 (2 nights). What is your budget per night? (or "no '
        'preference")'
    ]


@pytest.mark.parametrize(
    "said",
    ["I need a room in Seattle", "a hotel in Portland, Maine please", "need a hotel in boston"],
)
async def test_a_room_in_another_city_is_still_declined(said: str) -> None:
    assert await _opening(said) == [DECLINE]


@pytest.mark.parametrize("said", ["I don't need a hotel", "hey there", "what's the weather?"])
async def test_no_request_for_a_room_asks_the_area_again(said: str) -> None:
    (reply,) = await _opening(said)
    assert reply.endswith(AREA_QUESTION) and reply != DECLINE


@pytest.mark.parametrize(
    ("text", "room", "elsewhere"),
    [
        ("I need a room next week", True, False),
        ("looking for a place to stay", True, False),
        ("can you find me a hotel near PDX", True, False),
        ("a room in Beaverton please", True, False),
        ("a room in Beaverton", False, False),  # no wish word (Beaverton alone says yes)
        ("I don't need a hotel", False, False),
        ("no hotel for me", False, False),
        ("I need a room in Seattle", True, True),
        ("a hotel in Portland, Maine", False, True),
        ("a room in Vancouver", False, False),  # Vancouver, WA is in the area
        ("a room in Vancouver BC", False, True),
        ("I want a room in June", True, False),
        ("I need a room in Downtown", True, False),
        ("I need a hotel in Pearl District", True, False),
        ("a room at Riverside Inn please", True, False),
        ("need a room near Mt Hood", True, False),
        ("Book me a hotel in NYC", True, True),
        ("a room in Omaha please", True, True),
        ("need a place to crash near the airport", True, False),
        ("I'd like to make a reservation for next Friday", True, False),
        ("flying in from Seattle, need a hotel", True, False),
        ("Hi, I'm Austin and I need a room", True, False),
        ("I need a room in Eugene", True, True),
        ("I need a hotel near Intel", True, False),
        ("need a room close to OHSU", True, False),
        ("we're flying to Omaha and need a hotel", True, True),
    ],
)
def test_wants_a_room_and_names_another_place(text: str, room: bool, elsewhere: bool) -> None:
    assert (wants_a_room(text), names_another_place(text)) == (room, elsewhere)


def test_naming_a_room_with_criteria_is_a_request_for_one() -> None:
    assert wants_a_room("a hotel for next weekend", with_criteria=True)
    assert not wants_a_room("a hotel for next weekend")
    assert not wants_a_room("no hotel, just the dates", with_criteria=True)


async def test_a_new_day_for_a_planned_stay_keeps_its_length_unless_one_is_given() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    await guest.say("July 1 to July 6")
    moved = await guest.say("can we do a week from tomorrow instead?")
    assert moved.message.startswith("Got it: May 23, 2026 → May 28, 2026 (5 nights).")
    one = await guest.say("actually just tomorrow night")
    assert one.message.startswith("Got it: May 16, 2026 → May 17, 2026 (1 night).")
    assert says_how_long("for two nights") and not says_how_long("in two weeks")


async def test_after_a_decline_dates_are_a_yes_as_the_decline_promises() -> None:
    replies = await _opening("I need a room in Seattle", "ok, in two weeks for 2 nights then")
    assert replies == [
        DECLINE,
        'Got it: Dec 15, 2026 → Dec 17, 2026 (2 nights). What is your budget per night? (or "no '
        'preference")',
    ]


# --- A guest's report (2026-12-01): nothing is "noted" that was not understood, a list's request
# before any search, loose budgets, a hello at the area question.

BUDGET_Q = 'What is your budget per night? (or "no preference")'
ROOM_Q = 'Which room type would you like: one bed, two beds or a suite? (or "skip")'
NO_LIST = "I haven't searched yet, so there is no list of hotels to choose from."


@pytest.mark.parametrize("said", ["hi!", "hello", "good morning", "Hey there"])
async def test_a_hello_at_the_area_question_is_greeted_back(said: str) -> None:
    assert await _opening(said) == [f"Hello! {AREA_QUESTION}"]


async def test_the_reported_session_notes_only_what_it_understood() -> None:
    replies = await _opening(
        "we need a hotel room a week from friday for 2 nights, budget around 200",
        "what is closest to the airport",
        "compare 1 and 2",
        "book the first one",
        "asdf",
        "no preference",
    )
    stay = "Dec 11, 2026 → Dec 13, 2026 (2 nights), up to $200 a night"
    near = f"{stay}, within 5 mi of PDX airport"
    no_list = (
        f'{NO_LIST} Say "search now" to see hotels for {near}, or answer my question '
        f"first: {ROOM_Q}"
    )
    assert replies == [
        f"Got it: {stay}. {ROOM_Q}",
        f"Got it: {near}. {ROOM_Q}",  # before a list, "closest to" is a wish to stay near
        no_list,
        no_list,
        f'Sorry, I didn\'t catch that. {ROOM_Q} Or say "search now" to see hotels with what I '
        "have so far.",
        'Noted. Any amenities you need, such as wifi, parking, a pool, a gym or pets? (or "none")',
    ]


async def test_a_hello_or_a_choice_before_any_dates() -> None:
    replies = await _opening("a hotel in Portland please", "hi", "book the cheapest one")
    assert replies == [
        "Great! When would you like to check in and check out?",
        "Hello! When would you like to check in and check out?",
        f"{NO_LIST} First I need your dates: When would you like to check in and check out?",
    ]


async def test_after_the_summary_a_choice_offers_the_search() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("a hotel in Portland please", "July 1 to 6", "skip", "two beds", "none"):
        await guest.say(said)
    await guest.say("skip")
    reply = await guest.say("I'll take the first one")
    assert reply.message == (
        f'{NO_LIST} Say "search now" to see hotels for Jul 1, 2026 → Jul 6, 2026 (5 nights), '
        "two beds."
    )
    listed = await guest.say("show me the options")
    assert listed.step == "PresentStep"


@pytest.mark.parametrize(
    ("said", "low", "high"),
    [
        ("budget around 200", None, 200),  # "around" is the most the guest aims to pay
        ("about $200 a night", None, 200),
        ("roughly 150", None, 150),
        ("200ish", None, 200),
        ("$200-ish", None, 200),
        ("150 or so", None, 150),
        ("~180", None, 180),
        ("no more than 180", None, 180),
        ("somewhere between 100 and 150", 100, 150),
        ("between about 100 and about 150", 100, 150),
        ("under two hundred", None, 200),
        ("max a hundred and fifty", None, 150),
        ("in the region of 250", None, 250),
    ],
)
def test_loose_budgets_are_read(said: str, low: float | None, high: float | None) -> None:
    assert parse_budget(said) == (low, high)


@pytest.mark.parametrize(
    "said", ["in about 10 days", "about 5 miles from downtown", "for 10 days or so", "like 2 beds"]
)
def test_loose_numbers_that_are_no_price(said: str) -> None:
    assert parse_budget(said) is None


async def _at_the_distance_question(*said: str) -> list[str]:
    guest = Guest(offline_engine())
    await guest.start()
    for text in ("a hotel in Portland please", "July 1 to 6", "under 300", "two beds", "wifi"):
        await guest.say(text)
    return [(await guest.say(text)).message for text in said]


async def test_miles_without_a_place_get_a_question_and_the_place_answer_uses_them() -> None:
    replies = await _at_the_distance_question("within 2 miles", "downtown")
    assert replies[0] == "Within 2 miles of the airport or of downtown?"
    assert "Distance: within 2 mi of downtown Portland" in replies[1]


async def test_no_limit_at_the_distance_question_keeps_the_budget() -> None:
    (reply,) = await _at_the_distance_question("no limit")
    assert "Budget: up to $300 a night" in reply and "Distance: anywhere in the area" in reply


async def test_a_budget_without_an_amount_asks_for_one() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    await guest.say("July 1 to 6")
    cheap = await guest.say("something cheap")
    assert cheap.message == (
        f'I need an amount to filter by price, for example "under $150". {BUDGET_Q}'
    )
    bare = await guest.say("180")
    assert (
        bare.message
        == f"Got it: Jul 1, 2026 → Jul 6, 2026 (5 nights), up to $180 a night. {ROOM_Q}"
    )


@pytest.mark.parametrize(
    ("said", "high"),
    [("I'd rather not spend more than 200", 200), ("we won't pay over 150", 150)],
)
def test_a_ceiling_said_with_a_negation_is_no_minimum(said: str, high: float) -> None:
    assert parse_budget(said) == (None, high)


async def test_a_number_off_a_list_of_one_hotel_is_said_in_the_singular() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    await guest.say("July 1 to 6, under $150, free parking and pets, near the airport")
    listed = await guest.say("search now")
    assert listed.message.startswith("I found 1 hotel"), listed.message
    reply = await guest.say("compare 1 and 2")
    assert reply.message.startswith("There is no number 2: the list has only 1 hotel. Shall I book")


@pytest.mark.parametrize(("said", "opening"), [("thanks", ""), ("ok", ""), ("hi", "Hello! ")])
async def test_an_acknowledgement_or_hello_at_a_question_only_repeats_it(
    said: str, opening: str
) -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    await guest.say("July 1 to 6")
    assert (await guest.say(said)).message == f"{opening}{BUDGET_Q}"


async def test_a_budget_for_the_whole_stay_is_shared_over_the_nights() -> None:
    replies = await _opening("a hotel for 3 nights from tomorrow", "$450 for the whole stay")
    assert (
        replies[1] == f"Got it: Dec 2, 2026 → Dec 5, 2026 (3 nights), up to $150 a night. {ROOM_Q}"
    )
    (early,) = await _opening("a hotel please, 500 total")
    assert "$500" not in early  # no nights yet to share it over: no nightly budget of $500


async def test_skips_survive_compaction_and_an_unclear_reply_to_the_summary_says_so() -> None:
    """The summariser kept each distinct line once, so the 2nd to 4th "skip" were forgotten and
    a budget given at the summary asked the room type again."""
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("a hotel in Portland please", "July 1 to 6", "skip", "skip", "skip", "skip"):
        await guest.say(said)
    unclear = await guest.say("hmm")
    assert unclear.message.startswith("Sorry, I didn't quite catch that. Here is your search:\n")
    changed = await guest.say("budget around 180")
    assert changed.message.startswith("Here is your search:\n")
    assert "Budget: up to $180 a night\nRoom type: any" in changed.message


async def test_an_unknown_amenity_gets_the_list_of_those_there_are() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    for said in ("a hotel in Portland please", "July 1 to 6", "skip", "skip"):
        await guest.say(said)
    reply = await guest.say("a balcony")
    assert reply.message.startswith(
        "Sorry, I didn't catch that. The amenities I can look for are wifi, free parking, pool, "
    )
    assert "24-hour front desk and bike rental. Any amenities you need" in reply.message
    assert reply.message.endswith('Or say "search now" to see hotels with what I have so far.')


@pytest.mark.parametrize(
    ("said", "suggestion"),
    [
        ("just me", "One bed should do for one or two people."),
        ("my wife and I", "One bed should do for one or two people."),
        ("family of four", "For more than two, two beds or a suite would fit."),
        ("2 adults and 2 kids", "For more than two, two beds or a suite would fit."),
    ],
)
async def test_who_is_coming_gets_a_suggestion_and_the_room_question(
    said: str, suggestion: str
) -> None:
    guest = Guest(offline_engine())
    await guest.start()
    for text in ("a hotel in Portland please", "July 1 to 6", "skip"):
        await guest.say(text)
    assert (await guest.say(said)).message == f"{suggestion} {ROOM_Q}"


async def test_criteria_said_again_are_acknowledged_not_apologised_for() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    await guest.say("a hotel in Portland please")
    await guest.say("July 1 to 6")
    first = await guest.say("near the airport")
    again = await guest.say("close to the airport please")
    assert (
        again.message
        == first.message
        == (f"Got it: Jul 1, 2026 → Jul 6, 2026 (5 nights), within 5 mi of PDX airport. {BUDGET_Q}")
    )
