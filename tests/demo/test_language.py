"""The offline language understanding used by HotelFlow's deterministic demo model."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from demo.hotel import catalog
from demo.hotel.offline._text import NUMBER_WORDS
from demo.hotel.offline.language import (
    Budget,
    DistanceLimits,
    is_affirmative,
    is_negative,
    mentions_portland,
    parse_amenities,
    parse_budget,
    parse_dates,
    parse_distances,
    parse_feature,
    parse_room_type,
    parse_selection,
    strip_dates,
    wants_new_search,
    wants_to_book,
    wants_to_compare,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.types import Amenity, DateRange, RoomType, parse_criteria

TODAY = date(2026, 5, 15)  # a Friday
A = Amenity


def d(month: int, day: int, year: int = 2026) -> date:
    return date(year, month, day)


def stay(*parts: tuple[date, date]) -> list[DateRange]:
    return [DateRange(start=start, end=end) for start, end in parts]


# --- dates --------------------------------------------------------------------------------------

DATE_CASES = [
    ("7/1 to 7/6", stay((d(7, 1), d(7, 6)))),
    ("July 1st to the 6th", stay((d(7, 1), d(7, 6)))),
    ("July 1 - July 6, 2027", stay((d(7, 1, 2027), d(7, 6, 2027)))),
    ("2026-07-01 for 5 nights", stay((d(7, 1), d(7, 6)))),
    ("next Friday for two nights", stay((d(5, 22), d(5, 24)))),
    ("Dec 30 to Jan 2", stay((d(12, 30), d(1, 2, 2027)))),
    ("June 3, June 5 and June 9 to 11",
     stay((d(6, 3), d(6, 4)), (d(6, 5), d(6, 6)), (d(6, 9), d(6, 11)))),
    ("July 1-6", stay((d(7, 1), d(7, 6)))),
    ("from July 1 until July 6 please", stay((d(7, 1), d(7, 6)))),
    ("between July 1 and July 6", stay((d(7, 1), d(7, 6)))),
    ("arriving July 1 and leaving July 6", stay((d(7, 1), d(7, 6)))),
    ("the 3rd of July to the 5th of July", stay((d(7, 3), d(7, 5)))),
    ("7/1/27 to 7/3/27", stay((d(7, 1, 2027), d(7, 3, 2027)))),
    ("Dec 30 to Jan 2, 2027", stay((d(12, 30), d(1, 2, 2027)))),
    ("June 9 to 11, 2027", stay((d(6, 9, 2027), d(6, 11, 2027)))),
    ("June 3, 5 and 9", stay((d(6, 3), d(6, 4)), (d(6, 5), d(6, 6)), (d(6, 9), d(6, 10)))),
    ("Aug 30 to the 2nd", stay((d(8, 30), d(9, 2)))),
    ("July 1 for a week", stay((d(7, 1), d(7, 8)))),
    ("5 nights starting July 1", stay((d(7, 1), d(7, 6)))),
    ("June 12 for a couple of nights", stay((d(6, 12), d(6, 14)))),
    ("tonight", stay((d(5, 15), d(5, 16)))),
    ("tomorrow until Sunday", stay((d(5, 16), d(5, 17)))),
    ("Friday to Sunday", stay((d(5, 22), d(5, 24)))),
    ("this Friday", stay((d(5, 22), d(5, 23)))),
    ("Sept. 4", stay((d(9, 4), d(9, 5)))),
    ("I need a room on 2026-06-01 with two beds", stay((d(6, 1), d(6, 2)))),
    # a missing year makes a date the next one to come (issue 25): January has passed
    ("Jan 5 to Jan 8", stay((date(2027, 1, 5), date(2027, 1, 8)))),
]  # fmt: skip


@pytest.mark.parametrize(("text", "expected"), DATE_CASES)
def test_parse_dates(text: str, expected: list[DateRange]) -> None:
    assert parse_dates(text, TODAY) == expected


@pytest.mark.parametrize(("word", "number"), list(NUMBER_WORDS.items()))
def test_number_words_for_nights(word: str, number: int) -> None:
    assert parse_dates(f"July 1 for {word} nights", TODAY) == stay(
        (d(7, 1), d(7, 1) + timedelta(days=number))
    )


@pytest.mark.parametrize(
    "text",
    [
        "hello there",
        "I need a 24/7 front desk",
        "within 1/2 mile of downtown",
        "two beds under $300",
        "for 5 nights",  # a duration alone is not a date
        "Feb 30 to March 2",  # impossible date
        "July 6 to July 1",  # reversed range
        "may I book the second one?",
    ],
)
def test_parse_dates_not_understood(text: str) -> None:
    assert parse_dates(text, TODAY) is None


def test_past_date_is_kept_and_validation_says_why() -> None:
    parts = parse_dates("Jan 5, 2026 to Jan 8", TODAY)  # a year written is kept, past or not
    assert parts is not None
    with pytest.raises(ValidationError, match="in the past"):
        parse_criteria({"dates": parts}, TODAY)


def test_strip_dates_keeps_the_rest() -> None:
    assert strip_dates("July 20 to 25 under $300").split() == ["to", "under", "$300"]


@given(
    st.dates(min_value=date(2026, 5, 15), max_value=date(2035, 12, 31)),
    st.integers(min_value=1, max_value=14),
)
def test_written_dates_round_trip(start: date, nights: int) -> None:
    end = start + timedelta(days=nights)
    expected = stay((start, end))
    written = f"{start:%B} {start.day}, {start.year} for {nights} nights"
    iso = f"{start.isoformat()} to {end.isoformat()}"
    numeric = f"{start.month}/{start.day}/{start.year} - {end.month}/{end.day}/{end.year}"
    for text in (written, iso, numeric):
        assert parse_dates(text, TODAY) == expected, text


# --- budget -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("max 700", Budget(None, 700)),
        ("under $300 a night", Budget(None, 300)),
        ("between 150 and 250", Budget(150, 250)),
        ("$150-$250", Budget(150, 250)),
        ("150 to 250 per night", Budget(150, 250)),
        ("at least 100", Budget(100, None)),
        ("at least 100 but under 250", Budget(100, 250)),
        ("no more than $1,200", Budget(None, 1200)),
        ("no less than 90", Budget(90, None)),
        ("my budget is 200", Budget(None, 200)),
        ("raise the budget to 400", Budget(None, 400)),
        ("around $180", Budget(None, 180)),
        ("150 a night", Budget(None, 150)),
        ("7/1 to 7/6, max 700", Budget(None, 700)),
        ("no limit", Budget(None, None)),
        ("any budget", Budget(None, None)),
        ("price doesn't matter", Budget(None, None)),
    ],
)
def test_parse_budget(text: str, expected: Budget) -> None:
    assert parse_budget(text) == expected


@pytest.mark.parametrize(
    "text",
    ["July 20 to 25", "within 5 miles of the airport", "2 beds", "for 5 nights", "hello"],
)
def test_parse_budget_not_mentioned(text: str) -> None:
    assert parse_budget(text) is None


def test_no_limit_is_understood_but_empty() -> None:
    result = parse_budget("no limit")
    assert result is not None and (result.minimum, result.maximum) == (None, None)


# --- room type ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("one bed", RoomType.ONE_BED),
        ("a king", RoomType.ONE_BED),
        ("single", RoomType.ONE_BED),
        ("a queen bed is fine", RoomType.ONE_BED),
        ("two beds", RoomType.TWO_BEDS),
        ("two queens", RoomType.TWO_BEDS),
        ("double", RoomType.TWO_BEDS),
        ("2 queen beds", RoomType.TWO_BEDS),
        ("suite", RoomType.SUITE),
        ("a king suite", RoomType.SUITE),
        ("not a suite, two queens", RoomType.TWO_BEDS),
        ("just a single night", None),
        ("anything works", None),
    ],
)
def test_parse_room_type(text: str, expected: RoomType | None) -> None:
    assert parse_room_type(text) is expected


# --- amenities ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("wifi", [A.WIFI]),
        ("wi-fi", [A.WIFI]),
        ("good internet", [A.WIFI]),
        ("parking", [A.FREE_PARKING]),
        ("pool", [A.POOL]),
        ("somewhere for swimming", [A.POOL]),
        ("gym", [A.FITNESS_CENTER]),
        ("fitness", [A.FITNESS_CENTER]),
        ("I travel with pets", [A.PET_FRIENDLY]),
        ("bringing my dog", [A.PET_FRIENDLY]),
        ("pet friendly", [A.PET_FRIENDLY]),
        ("breakfast", [A.BREAKFAST_INCLUDED]),
        ("shuttle", [A.AIRPORT_SHUTTLE]),
        ("ev charger", [A.EV_CHARGING]),
        ("spa", [A.SPA]),
        ("hot tub", [A.HOT_TUB]),
        ("jacuzzi", [A.HOT_TUB]),
        ("a kitchenette", [A.KITCHENETTE]),
        ("room service", [A.ROOM_SERVICE]),
        ("wheelchair accessible", [A.ACCESSIBLE_ROOMS]),
        ("meeting rooms", [A.MEETING_ROOMS]),
        ("24-hour front desk", [A.FRONT_DESK_24H]),
        ("bike rental", [A.BIKE_RENTAL]),
        ("restaurant and bar", [A.RESTAURANT, A.BAR]),
        ("laundry", [A.LAUNDRY]),
        ("business center", [A.BUSINESS_CENTER]),
        ("pool and wifi and parking", [A.WIFI, A.FREE_PARKING, A.POOL]),
        ("no pool needed", []),
        ("pool not needed, but a gym", [A.FITNESS_CENTER]),
        ("I don't need a spa or a hot tub", []),
        ("wifi, no breakfast", [A.WIFI]),
        ("nothing special", []),
    ],
)
def test_parse_amenities(text: str, expected: list[Amenity]) -> None:
    assert parse_amenities(text) == expected


# --- distances ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("within 5 miles of the airport", DistanceLimits(5, None)),
        ("close to downtown", DistanceLimits(None, 3)),
        ("near PDX", DistanceLimits(5, None)),
        ("under 10 mi from the city center", DistanceLimits(None, 10)),
        ("within two miles of downtown and near the airport", DistanceLimits(5, 2)),
        ("downtown, within 2 miles", DistanceLimits(None, 2)),
        ("walking distance to downtown", DistanceLimits(None, 1)),
        ("a downtown hotel", DistanceLimits(None, 3)),
        ("airport shuttle please", None),
        ("I'll be in town for a conference", None),
    ],
)
def test_parse_distances(text: str, expected: DistanceLimits | None) -> None:
    assert parse_distances(text) == expected


# --- selection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("the second one", [2]),
        ("#3", [3]),
        ("number 2", [2]),
        ("2, 4 and 5", [2, 4, 5]),
        ("1 and 3", [1, 3]),
        ("all of them", [1, 2, 3, 4, 5]),
        ("the last one", [5]),
        ("the first two", [1, 2]),
        ("the last two", [4, 5]),
        ("the cheapest", [1]),
        ("1-3", [1, 2, 3]),
        ("option one and option three", [1, 3]),
        ("compare 3 and 1", [3, 1]),  # the order the guest said
        ("the first", [1]),
        ("the 2nd", [2]),
        ("that one", None),
        ("the one with 2 beds", None),
        ("number 9", None),  # out of range: ask again
        ("both", None),  # ambiguous with five hotels
    ],
)
def test_parse_selection(text: str, expected: list[int] | None) -> None:
    assert parse_selection(text, 5) == expected


def test_both_of_two() -> None:
    assert parse_selection("both", 2) == [1, 2]


# --- comparison feature -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("on price", "price"),
        ("cost", "price"),
        ("which is cheaper?", "price"),
        ("amenities", "amenities"),
        ("features", "amenities"),
        ("which has a pool", "amenities"),
        ("room types", "room_types"),
        ("do they have suites", "room_types"),
        ("room service", "amenities"),
        ("distance", "distance"),
        ("location", "distance"),
        ("how far from the airport", "distance"),
        ("price and then amenities", "price"),  # first mentioned wins
        ("hmm", None),
    ],
)
def test_parse_feature(text: str, expected: str | None) -> None:
    assert parse_feature(text) == expected


# --- intents ------------------------------------------------------------------------------------

INTENT_CASES = [
    (wants_to_quit, ["bye", "quit", "I'm done", "never mind", "that's all", "goodbye!"],
     ["I'm done comparing, let's book", "book it", "all of them"]),
    (wants_to_book, ["book", "reserve it", "I'll take the second", "go with the Riverside",
                     "please book number 2"],
     ["don't book yet", "compare them", "what's the price"]),
    (wants_to_compare, ["compare", "can you compare 1 and 3", "side by side please",
                        "Riverside vs Skyline", "which is better?"],
     ["book it", "the second one"]),
    (wants_new_search, ["search again", "change the dates", "make it a suite",
                        "two beds instead", "start over"],
     ["book it", "compare them"]),
    (wants_to_see_criteria, ["what do you have so far", "show my criteria",
                             "what are my preferences?", "what did I ask for"],
     ["search", "book the first"]),
    (is_affirmative, ["yes", "Yes please", "sure", "ok", "sounds good", "go ahead"],
     ["no", "not sure", "nope"]),
    (is_negative, ["no", "No thanks", "nope", "not now", "I'd rather not"],
     ["yes", "sure"]),
    (mentions_portland, ["Portland", "a hotel in Portland, Oregon", "near PDX", "Beaverton",
                         "Vancouver, WA", "Lake Oswego"],
     ["Portland, Maine", "Vancouver BC", "Seattle", "hello"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("intent", "text", "expected"),
    [(f, text, True) for f, yes, _ in INTENT_CASES for text in yes]
    + [(f, text, False) for f, _, no in INTENT_CASES for text in no],
)
def test_intents(intent: Callable[[str], bool], text: str, expected: bool) -> None:
    assert intent(text) is expected


def test_every_catalog_city_is_in_the_area() -> None:
    assert all(mentions_portland(hotel.city) for hotel in catalog.hotels())
