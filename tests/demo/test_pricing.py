"""Pricing rules of the HotelFlow demo: multipliers, holidays, nights, rounding, time zones."""

from __future__ import annotations

import time
from datetime import date, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from demo.hotel import catalog
from demo.hotel.pricing import (
    HOLIDAY_MULTIPLIER,
    ROOM_MULTIPLIERS,
    SEASON_MULTIPLIERS,
    WEEKEND_MULTIPLIER,
    format_usd,
    nightly_rate,
    nights_of,
    quote,
    us_holidays,
)
from demo.hotel.types import Amenity, DateRange, Hotel, RoomType

ALL_ROOMS = (RoomType.ONE_BED, RoomType.TWO_BEDS, RoomType.SUITE)


def make_hotel(base_rate: str = "100", rooms: tuple[RoomType, ...] = ALL_ROOMS) -> Hotel:
    return Hotel(
        id="H99",
        name="Test Hotel",
        city="Portland",
        state="OR",
        description="A hotel that exists only in tests.",
        base_rate=Decimal(base_rate),
        room_types=rooms,
        amenities=(Amenity.WIFI,),
        miles_to_airport=5.0,
        miles_to_downtown=5.0,
    )


HOTEL = make_hotel()
PLAIN_NIGHT = date(2026, 4, 14)  # a Tuesday in April: season 1.00, no holiday, no weekend


# --- holidays -----------------------------------------------------------------------------------

HOLIDAYS_2026 = {
    date(2026, 1, 1): "New Year's Day",
    date(2026, 1, 19): "Martin Luther King Jr. Day",
    date(2026, 2, 16): "Presidents' Day",
    date(2026, 5, 25): "Memorial Day",
    date(2026, 6, 19): "Juneteenth",
    date(2026, 7, 3): "Independence Day (observed)",
    date(2026, 7, 4): "Independence Day",
    date(2026, 9, 7): "Labor Day",
    date(2026, 10, 12): "Columbus Day",
    date(2026, 11, 11): "Veterans Day",
    date(2026, 11, 26): "Thanksgiving Day",
    date(2026, 12, 25): "Christmas Day",
}


def test_holidays_2026_exactly() -> None:
    assert us_holidays(2026) == HOLIDAYS_2026
    assert list(us_holidays(2026)) == sorted(HOLIDAYS_2026)


def test_holidays_2024_leap_year() -> None:
    expected = [
        date(2024, 1, 1), date(2024, 1, 15), date(2024, 2, 19), date(2024, 5, 27),
        date(2024, 6, 19), date(2024, 7, 4), date(2024, 9, 2), date(2024, 10, 14),
        date(2024, 11, 11), date(2024, 11, 28), date(2024, 12, 25),
    ]  # fmt: skip
    assert list(us_holidays(2024)) == expected


def test_holidays_2021_observed_days_and_next_new_year() -> None:
    holidays = us_holidays(2021)
    assert holidays[date(2021, 6, 18)] == "Juneteenth (observed)"  # June 19 was a Saturday
    assert holidays[date(2021, 7, 5)] == "Independence Day (observed)"  # July 4 was a Sunday
    assert holidays[date(2021, 12, 24)] == "Christmas Day (observed)"
    assert holidays[date(2021, 12, 31)] == "New Year's Day (observed)"  # Jan 1, 2022: Saturday
    assert date(2021, 12, 31) not in us_holidays(2022)  # it belongs to the year it falls in
    assert date(2022, 1, 1) in us_holidays(2022)


def test_holidays_2023_sunday_new_year_observed_monday() -> None:
    holidays = us_holidays(2023)
    assert holidays[date(2023, 1, 2)] == "New Year's Day (observed)"
    assert holidays[date(2023, 11, 10)] == "Veterans Day (observed)"


def test_juneteenth_only_from_2021() -> None:
    assert "Juneteenth" not in us_holidays(2020).values()
    assert us_holidays(2021)[date(2021, 6, 19)] == "Juneteenth"


def test_us_holidays_returns_a_fresh_dict() -> None:
    us_holidays(2026).clear()
    assert us_holidays(2026) == HOLIDAYS_2026


NTH_WEEKDAY_RULES = [
    ("Martin Luther King Jr. Day", 1, 0, range(15, 22)),
    ("Presidents' Day", 2, 0, range(15, 22)),
    ("Memorial Day", 5, 0, range(25, 32)),
    ("Labor Day", 9, 0, range(1, 8)),
    ("Columbus Day", 10, 0, range(8, 15)),
    ("Thanksgiving Day", 11, 3, range(22, 29)),
]


@given(st.integers(min_value=1990, max_value=2200))
def test_weekday_holidays_follow_their_rule_every_year(year: int) -> None:
    by_name = {name: day for day, name in us_holidays(year).items()}
    for name, month, weekday, days in NTH_WEEKDAY_RULES:
        day = by_name[name]
        assert (day.month, day.weekday()) == (month, weekday) and day.day in days, name


@given(st.integers(min_value=1990, max_value=2200))
def test_observed_days_are_weekdays_next_to_their_holiday(year: int) -> None:
    holidays = us_holidays(year)
    for day, name in holidays.items():
        assert day.year == year
        if name.endswith("(observed)"):
            assert day.weekday() in (0, 4)
            actual = day + timedelta(days=1 if day.weekday() == 4 else -1)
            assert us_holidays(actual.year)[actual] == name.removesuffix(" (observed)")


# --- nightly rate -------------------------------------------------------------------------------


def test_plain_night_costs_the_base_rate() -> None:
    assert nightly_rate(HOTEL, RoomType.ONE_BED, PLAIN_NIGHT) == Decimal("100.00")


@pytest.mark.parametrize("month", range(1, 13))
def test_season_multiplier_by_month(month: int) -> None:
    tuesday = next(d for d in (date(2026, month, n) for n in range(8, 15)) if d.weekday() == 1)
    assert tuesday not in us_holidays(2026)
    assert nightly_rate(HOTEL, RoomType.ONE_BED, tuesday) == 100 * SEASON_MULTIPLIERS[month]


def test_summer_is_high_and_winter_low() -> None:
    assert SEASON_MULTIPLIERS[7] > SEASON_MULTIPLIERS[4] > SEASON_MULTIPLIERS[1]


@pytest.mark.parametrize(
    ("room", "expected"),
    [(RoomType.ONE_BED, "100.00"), (RoomType.TWO_BEDS, "120.00"), (RoomType.SUITE, "180.00")],
)
def test_room_type_multiplier(room: RoomType, expected: str) -> None:
    assert ROOM_MULTIPLIERS[room] * 100 == Decimal(expected)
    assert nightly_rate(HOTEL, room, PLAIN_NIGHT) == Decimal(expected)


@pytest.mark.parametrize(
    ("night", "weekend"),
    [
        (date(2026, 4, 16), False),  # Thursday
        (date(2026, 4, 17), True),  # Friday night
        (date(2026, 4, 18), True),  # Saturday night
        (date(2026, 4, 19), False),  # Sunday night: back to work on Monday
    ],
)
def test_weekend_multiplier_on_friday_and_saturday_nights(night: date, weekend: bool) -> None:
    expected = Decimal("115.00") if weekend else Decimal("100.00")
    assert WEEKEND_MULTIPLIER == Decimal("1.15")
    assert nightly_rate(HOTEL, RoomType.ONE_BED, night) == expected


def test_holiday_multiplier() -> None:
    thanksgiving, week_before = date(2026, 11, 26), date(2026, 11, 19)
    ratio = nightly_rate(HOTEL, RoomType.ONE_BED, thanksgiving) / nightly_rate(
        HOTEL, RoomType.ONE_BED, week_before
    )
    assert ratio == HOLIDAY_MULTIPLIER == Decimal("1.25")


def test_all_multipliers_compose() -> None:
    # Saturday July 4, 2026, a suite: 100 x 1.30 (July) x 1.8 x 1.25 (holiday) x 1.15 (weekend)
    assert nightly_rate(HOTEL, RoomType.SUITE, date(2026, 7, 4)) == Decimal("336.38")


def test_prices_are_rounded_half_up_to_cents() -> None:
    hotel = make_hotel("99.99")
    # 99.99 x 1.2 x 1.15 = 137.9862 -> 137.99 (Friday in April, two beds)
    assert nightly_rate(hotel, RoomType.TWO_BEDS, date(2026, 4, 17)) == Decimal("137.99")


def test_room_type_not_offered_is_refused() -> None:
    hotel = make_hotel(rooms=(RoomType.ONE_BED,))
    with pytest.raises(ValueError, match="no suite rooms"):
        nightly_rate(hotel, RoomType.SUITE, PLAIN_NIGHT)


def test_prices_do_not_depend_on_the_machine_time_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(time, "tzset"):
        pytest.skip("time.tzset is POSIX only")
    nights = nights_of([DateRange(start=date(2026, 12, 30), end=date(2027, 1, 3))])
    prices = []
    for zone in ("UTC", "America/Los_Angeles", "Pacific/Kiritimati", "Pacific/Pago_Pago"):
        monkeypatch.setenv("TZ", zone)
        time.tzset()
        prices.append(quote(HOTEL, RoomType.TWO_BEDS, nights))
    monkeypatch.undo()
    time.tzset()
    assert all(p == prices[0] for p in prices)


# --- nights and quotes --------------------------------------------------------------------------


def test_checkout_day_is_not_charged() -> None:
    nights = nights_of([DateRange(start=date(2026, 7, 1), end=date(2026, 7, 6))])
    assert nights == [date(2026, 7, d) for d in range(1, 6)]
    assert quote(HOTEL, RoomType.ONE_BED, nights).night_count == 5


def test_worked_example_july_fourth_week() -> None:
    """Columbia Slough Lodge ($89), two beds, July 1-6, 2026: Friday 3 is Independence Day
    observed and Saturday 4 the day itself, both also weekend nights."""
    hotel = catalog.get("H04")
    assert hotel is not None
    stay = quote(
        hotel,
        RoomType.TWO_BEDS,
        nights_of([DateRange(start=date(2026, 7, 1), end=date(2026, 7, 6))]),
    )
    assert [str(n.price) for n in stay.nights] == ["138.84", "138.84", "199.58", "199.58", "138.84"]
    assert [n.holiday for n in stay.nights][2:4] == ["Independence Day (observed)",
                                                     "Independence Day"]  # fmt: skip
    assert stay.total == Decimal("815.68")
    assert stay.average == Decimal("163.14")


def test_stay_across_a_year_boundary() -> None:
    nights = nights_of([DateRange(start=date(2026, 12, 30), end=date(2027, 1, 2))])
    stay = quote(HOTEL, RoomType.ONE_BED, nights)
    assert stay.dates == [date(2026, 12, 30), date(2026, 12, 31), date(2027, 1, 1)]
    assert [n.holiday for n in stay.nights] == [None, None, "New Year's Day"]
    # Dec 30 Wed 95.00, Dec 31 Thu 95.00, Jan 1 Fri 100 x 0.85 x 1.25 x 1.15 = 122.19
    assert stay.total == Decimal("95.00") + Decimal("95.00") + Decimal("122.19")


def test_stay_of_separate_nights() -> None:
    parts = [
        DateRange.single(date(2026, 6, 3)),
        DateRange.single(date(2026, 6, 5)),
        DateRange(start=date(2026, 6, 9), end=date(2026, 6, 11)),
    ]
    nights = nights_of(parts)
    assert nights == [date(2026, 6, 3), date(2026, 6, 5), date(2026, 6, 9), date(2026, 6, 10)]
    stay = quote(HOTEL, RoomType.ONE_BED, nights)
    assert stay.total == sum(nightly_rate(HOTEL, RoomType.ONE_BED, n) for n in nights)
    # Fri June 5 is a weekend night, Fri June 19 would be a holiday: not part of this stay
    assert [n.weekend for n in stay.nights] == [False, True, False, False]


def test_overlapping_parts_count_each_night_once() -> None:
    parts = [
        DateRange(start=date(2026, 6, 1), end=date(2026, 6, 4)),
        DateRange(start=date(2026, 6, 3), end=date(2026, 6, 5)),
    ]
    assert nights_of(parts) == [date(2026, 6, d) for d in range(1, 5)]


def test_quote_ignores_duplicates_and_order() -> None:
    nights = [date(2026, 6, 2), date(2026, 6, 1), date(2026, 6, 2)]
    assert quote(HOTEL, RoomType.ONE_BED, nights).dates == [date(2026, 6, 1), date(2026, 6, 2)]


def test_quote_needs_a_night() -> None:
    with pytest.raises(ValueError, match="at least one night"):
        quote(HOTEL, RoomType.ONE_BED, [])


def test_format_usd() -> None:
    assert format_usd(Decimal("1234.5")) == "$1,234.50"
    assert format_usd(89) == "$89.00"


# --- properties ---------------------------------------------------------------------------------

future_days = st.dates(min_value=date(2026, 1, 1), max_value=date(2030, 12, 31))
ranges = st.builds(
    lambda start, length: DateRange(start=start, end=start + timedelta(days=length)),
    future_days,
    st.integers(min_value=1, max_value=20),
)


@given(st.lists(ranges, min_size=1, max_size=4))
def test_nights_of_excludes_checkout_days_not_covered_by_another_part(
    parts: list[DateRange],
) -> None:
    nights = nights_of(parts)
    assert nights == sorted(set(nights))
    for night in nights:
        assert any(p.start <= night < p.end for p in parts)
    for part in parts:
        covered_elsewhere = any(p.start <= part.end < p.end for p in parts)
        assert (part.end in nights) == covered_elsewhere


@given(
    st.lists(future_days, min_size=1, max_size=15),
    st.sampled_from(ALL_ROOMS),
    st.decimals(min_value=50, max_value=500, places=2),
)
def test_stay_price_is_the_sum_of_its_nights(
    nights: list[date], room: RoomType, base: Decimal
) -> None:
    hotel = make_hotel(str(base))
    stay = quote(hotel, room, nights)
    assert stay.total == sum(nightly_rate(hotel, room, n) for n in set(nights))
    assert stay.total == sum(n.price for n in stay.nights)
    assert abs(stay.average * stay.night_count - stay.total) <= Decimal("0.005") * stay.night_count
    assert all(n.price == n.price.quantize(Decimal("0.01")) for n in stay.nights)
