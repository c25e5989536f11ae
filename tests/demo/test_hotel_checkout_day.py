"""A check-out given as a bare day ("leaving the 15th") or a month said once for both days ("from
the 3rd to the 6th of may"): a stranger's report on the demo. Written before the fix; the held-out
lines of the same family are the last section of ``utterances.txt`` (figures in docs/demo.md).
Today is Friday 2026-05-15 unless a test says otherwise.
"""

from __future__ import annotations

from datetime import date

import pytest
from hotel_chat import Guest, offline_engine

from demo.hotel.offline.language import parse_dates, strip_dates
from demo.hotel.types import DateRange

TODAY = date(2026, 5, 15)


async def test_the_reported_line_is_three_nights_not_one() -> None:
    guest = Guest(offline_engine())
    await guest.start()
    result = await guest.say("arriving the 12th of march, leaving the 15th, max 220 a night")
    assert result.message.startswith(
        "Got it: Mar 12, 2027 → Mar 15, 2027 (3 nights), up to $220 a night."
    ), result.message


# Tuning lines: written with the fix, apart from the held-out ones.
@pytest.mark.parametrize(
    ("said", "start", "end"),
    [
        (
            "checking in the 5th of july, checking out on the 9th",
            date(2026, 7, 5),
            date(2026, 7, 9),
        ),
        ("june 30 and we leave the 2nd", date(2026, 6, 30), date(2026, 7, 2)),
        ("aug 3, out on the 6th", date(2026, 8, 3), date(2026, 8, 6)),
        ("july 7th - departing the 10th", date(2026, 7, 7), date(2026, 7, 10)),
        ("9th-12th of october", date(2026, 10, 9), date(2026, 10, 12)),
        ("from the 28th to the 2nd of august", date(2026, 7, 28), date(2026, 8, 2)),
        ("the 3rd to the 5th of jan 2027", date(2027, 1, 3), date(2027, 1, 5)),
    ],
)
def test_a_checkout_day_without_a_month_takes_the_checkin_month(
    said: str, start: date, end: date
) -> None:
    """The check-out takes the check-in's month, or the next when it is not after the check-in;
    a month said only after the check-out is the check-in's too (the month before, when the
    check-in's day is later than the check-out's)."""
    assert parse_dates(said, TODAY) == [DateRange(start=start, end=end)]


@pytest.mark.parametrize(
    ("said", "days"),
    [("June 3, 5 and 9", [3, 5, 9]), ("june 3, and the 5th", [3, 5])],
)
def test_days_listed_without_a_checkout_word_stay_separate_days(said: str, days: list[int]) -> None:
    assert parse_dates(said, TODAY) == [DateRange.single(date(2026, 6, day)) for day in days]


def test_a_checkout_day_is_no_number_for_the_budget() -> None:
    assert "15" not in strip_dates("arriving the 12th of march, leaving the 15th, max 220")
    assert "3rd" not in strip_dates("from the 3rd to the 6th of may")
