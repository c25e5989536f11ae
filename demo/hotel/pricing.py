"""Nightly pricing: base rate × season × holiday × room type × weekend, rounded to cents.

Rules (all calendar arithmetic uses ``datetime.date`` only, so prices never depend on the
machine's time zone):

* Only nights are charged: a stay from July 1 to July 6 is the five nights of July 1–5.
* A night's multipliers come from the date the guest checks in that evening: a Friday or Saturday
  night is a weekend night, and a night falling on a US federal holiday is a holiday night.
* Holidays are the eleven federal holidays of 5 U.S.C. 6103 computed for the night's own year
  (Juneteenth from 2021, when it became one), plus their *observed* days: a holiday on a Saturday is
  also observed on the Friday before, one on a Sunday on the Monday after, because those long
  weekends fill hotels too. New Year's Day on a Saturday is therefore observed on December 31 of
  the previous year, and that date belongs to the earlier year's list.
* Each night is rounded to cents (half up); a stay's total is the sum of its rounded nights, so the
  breakdown always adds up to the total shown to the guest.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, timedelta
from decimal import ROUND_HALF_UP, Decimal
from functools import lru_cache

from demo.hotel.types import Hotel, NightPrice, Quote, RoomType, nights_of

__all__ = [
    "HOLIDAY_MULTIPLIER",
    "ROOM_MULTIPLIERS",
    "SEASON_MULTIPLIERS",
    "WEEKEND_MULTIPLIER",
    "format_usd",
    "nightly_rate",
    "nights_of",
    "quote",
    "us_holidays",
]

CENT = Decimal("0.01")

SEASON_MULTIPLIERS: dict[int, Decimal] = {
    1: Decimal("0.85"),  # winter: rain and few tourists
    2: Decimal("0.85"),
    3: Decimal("0.95"),
    4: Decimal("1.00"),
    5: Decimal("1.10"),
    6: Decimal("1.25"),  # summer: festivals and dry weather
    7: Decimal("1.30"),
    8: Decimal("1.30"),
    9: Decimal("1.15"),
    10: Decimal("1.00"),
    11: Decimal("0.90"),
    12: Decimal("0.95"),  # holiday travel lifts December a little
}
"""Multiplier by month number (1 = January)."""

HOLIDAY_MULTIPLIER = Decimal("1.25")
WEEKEND_MULTIPLIER = Decimal("1.15")
WEEKEND_NIGHTS = frozenset({4, 5})
"""``date.weekday()`` of Friday and Saturday, the nights leisure travellers stay."""

ROOM_MULTIPLIERS: dict[RoomType, Decimal] = {
    RoomType.ONE_BED: Decimal("1.0"),
    RoomType.TWO_BEDS: Decimal("1.2"),
    RoomType.SUITE: Decimal("1.8"),
}

MONDAY, THURSDAY, FRIDAY, SATURDAY, SUNDAY = 0, 3, 4, 5, 6
JUNETEENTH_FIRST_YEAR = 2021


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The ``n``-th ``weekday`` (0 = Monday) of a month, e.g. Thanksgiving = 4th Thursday."""
    first = date(year, month, 1)
    return first + timedelta(days=(weekday - first.weekday()) % 7 + 7 * (n - 1))


def _last_weekday(year: int, month: int, weekday: int) -> date:
    """The last ``weekday`` of a month, e.g. Memorial Day = last Monday of May."""
    next_month = date(year + month // 12, month % 12 + 1, 1)
    last = next_month - timedelta(days=1)
    return last - timedelta(days=(last.weekday() - weekday) % 7)


def _federal_holidays(year: int) -> dict[date, str]:
    """The holidays themselves, without observed days."""
    holidays = {
        date(year, 1, 1): "New Year's Day",
        _nth_weekday(year, 1, MONDAY, 3): "Martin Luther King Jr. Day",
        _nth_weekday(year, 2, MONDAY, 3): "Presidents' Day",
        _last_weekday(year, 5, MONDAY): "Memorial Day",
        date(year, 7, 4): "Independence Day",
        _nth_weekday(year, 9, MONDAY, 1): "Labor Day",
        _nth_weekday(year, 10, MONDAY, 2): "Columbus Day",
        date(year, 11, 11): "Veterans Day",
        _nth_weekday(year, 11, THURSDAY, 4): "Thanksgiving Day",
        date(year, 12, 25): "Christmas Day",
    }
    if year >= JUNETEENTH_FIRST_YEAR:
        holidays[date(year, 6, 19)] = "Juneteenth"
    return holidays


def _observed(day: date) -> date | None:
    """The weekday a weekend holiday is observed on, or None for a weekday holiday."""
    if day.weekday() == SATURDAY:
        return day - timedelta(days=1)
    if day.weekday() == SUNDAY:
        return day + timedelta(days=1)
    return None


@lru_cache(maxsize=64)
def _holidays_in(year: int) -> tuple[tuple[date, str], ...]:
    """Holidays and observed days dated in ``year``, sorted (cached: pricing asks per night)."""
    found: dict[date, str] = {}
    for source_year in (year, year + 1):  # next New Year's Day may be observed on Dec 31
        for day, name in _federal_holidays(source_year).items():
            observed = _observed(day)
            if day.year == year:
                found[day] = name
            if observed is not None and observed.year == year:
                found.setdefault(observed, f"{name} (observed)")
    return tuple(sorted(found.items()))


def us_holidays(year: int) -> dict[date, str]:
    """US federal holidays and observed days falling in ``year``, by date (a fresh dict)."""
    return dict(_holidays_in(year))


def _money(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def format_usd(amount: Decimal | float) -> str:
    """US currency formatting, e.g. ``$1,234.50``."""
    return f"${Decimal(str(amount)):,.2f}"


def _price_night(hotel: Hotel, room_type: RoomType, night: date) -> NightPrice:
    if room_type not in hotel.room_types:
        offered = ", ".join(hotel.room_types)
        raise ValueError(f"{hotel.name} has no {room_type} rooms (it offers: {offered}).")
    season = SEASON_MULTIPLIERS[night.month]
    holiday = us_holidays(night.year).get(night)
    weekend = night.weekday() in WEEKEND_NIGHTS
    price = hotel.base_rate * season * ROOM_MULTIPLIERS[room_type]
    if holiday is not None:
        price *= HOLIDAY_MULTIPLIER
    if weekend:
        price *= WEEKEND_MULTIPLIER
    return NightPrice(
        night=night, price=_money(price), season=season, holiday=holiday, weekend=weekend
    )


def nightly_rate(hotel: Hotel, room_type: RoomType, night: date) -> Decimal:
    """USD price of the night starting on ``night``; ValueError if the room type is absent."""
    return _price_night(hotel, room_type, night).price


def quote(hotel: Hotel, room_type: RoomType, nights: Iterable[date]) -> Quote:
    """Price a stay of the given nights (duplicates counted once, order irrelevant).

    ``nights`` are the charged nights, not check-out days: use ``nights_of(ranges)`` to get them.
    """
    unique = sorted(set(nights))
    if not unique:
        raise ValueError("A quote needs at least one night.")
    priced = tuple(_price_night(hotel, room_type, night) for night in unique)
    total = sum((n.price for n in priced), Decimal(0))
    average = _money(total / len(priced))
    return Quote(hotel=hotel, room_type=room_type, nights=priced, total=total, average=average)
