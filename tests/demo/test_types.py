"""Validation of the HotelFlow criteria model: the messages an LLM gets back when it errs."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from demo.hotel.types import (
    MAX_NIGHTS,
    Amenity,
    DateRange,
    RoomType,
    StayCriteria,
    describe_budget,
    describe_errors,
    parse_criteria,
)

TODAY = date(2026, 5, 15)
JULY = [{"start": "2026-07-01", "end": "2026-07-06"}]


def criteria(**fields: Any) -> dict[str, Any]:
    return {"dates": JULY, **fields}


def error_text(data: dict[str, Any] | str, today: date = TODAY) -> str:
    with pytest.raises(ValidationError) as caught:
        parse_criteria(data, today)
    return describe_errors(caught.value)


def test_full_criteria_validate() -> None:
    parsed = parse_criteria(
        criteria(
            budget_min=100, budget_max=300, room_type="two beds",
            amenities=["wifi", "free parking"], max_miles_to_airport=5, max_miles_to_downtown=12,
        ),
        TODAY,
    )  # fmt: skip
    assert parsed.room_type is RoomType.TWO_BEDS
    assert parsed.amenities == [Amenity.WIFI, Amenity.FREE_PARKING]
    assert parsed.nights() == [date(2026, 7, d) for d in range(1, 6)]


def test_only_dates_are_required() -> None:
    parsed = parse_criteria({"dates": JULY}, TODAY)
    assert (parsed.budget_max, parsed.room_type, parsed.amenities) == (None, None, [])


def test_json_string_input() -> None:
    assert parse_criteria(json.dumps(criteria(budget_max=700)), TODAY).budget_max == 700


def test_invalid_json_is_a_validation_error_not_a_crash() -> None:
    assert "Invalid JSON" in error_text('{"dates": [')


def test_every_field_is_described_for_the_llm() -> None:
    schema = StayCriteria.model_json_schema()
    assert all(spec.get("description") for spec in schema["properties"].values())
    assert schema["required"] == ["dates"]
    assert schema["additionalProperties"] is False
    date_range = schema["$defs"]["DateRange"]["properties"]
    assert "exclusive" not in date_range["start"]["description"]
    assert "not included" in date_range["end"]["description"]


def test_checkout_must_follow_checkin() -> None:
    text = error_text({"dates": [{"start": "2026-07-06", "end": "2026-07-01"}]})
    assert "dates.0" in text
    assert "check-out date 2026-07-01 must be after the check-in date 2026-07-06" in text


def test_same_day_checkout_suggests_the_next_day() -> None:
    text = error_text({"dates": [{"start": "2026-07-06", "end": "2026-07-06"}]})
    assert "use check-out 2026-07-07" in text


def test_start_in_the_past_is_reported_with_today() -> None:
    text = error_text({"dates": [{"start": "2026-01-05", "end": "2026-01-08"}]})
    assert "2026-01-05 is in the past (today is 2026-05-15)" in text
    assert "A date without a year is the next one to come." in text


def test_check_in_today_is_allowed() -> None:
    parse_criteria({"dates": [{"start": "2026-05-15", "end": "2026-05-16"}]}, TODAY)


def test_without_today_the_past_check_is_skipped() -> None:
    """Criteria saved in a session reload after their dates have passed."""
    StayCriteria.model_validate({"dates": [{"start": "2020-01-05", "end": "2020-01-08"}]})


def test_today_in_context_must_be_a_date() -> None:
    with pytest.raises(TypeError, match="datetime.date"):
        StayCriteria.model_validate({"dates": JULY}, context={"today": "2026-05-15"})


def test_at_least_one_date_range() -> None:
    assert "ask the guest when they check in" in error_text({"dates": []})
    assert "dates: Field required" in error_text({})


@pytest.mark.parametrize(
    ("field", "label"),
    [
        ("budget_min", "minimum budget"),
        ("budget_max", "maximum budget"),
        ("max_miles_to_airport", "distance to the airport"),
        ("max_miles_to_downtown", "distance to downtown"),
    ],
)
@pytest.mark.parametrize("value", [0, -5])
def test_numbers_must_be_positive(field: str, label: str, value: int) -> None:
    text = error_text(criteria(**{field: value}))
    assert f"{field}: The {label} must be a positive number or null, not {value}." in text


def test_budget_min_not_above_max() -> None:
    text = error_text(criteria(budget_min=300, budget_max=200))
    assert "minimum budget ($300) is above the maximum ($200)" in text


def test_equal_min_and_max_budget_is_fine() -> None:
    parse_criteria(criteria(budget_min=200, budget_max=200), TODAY)


def test_at_most_sixty_nights() -> None:
    start = date(2026, 6, 1)
    ok = {"dates": [{"start": start, "end": start + timedelta(days=MAX_NIGHTS)}]}
    assert len(parse_criteria(ok, TODAY).nights()) == MAX_NIGHTS
    too_long = {"dates": [{"start": start, "end": start + timedelta(days=MAX_NIGHTS + 1)}]}
    assert "The stay has 61 nights; we book at most 60" in error_text(too_long)


def test_several_problems_are_reported_together() -> None:
    text = error_text(
        {"dates": [{"start": "2026-01-01", "end": "2026-04-01"}], "budget_min": 9, "budget_max": 1}
    )
    assert "in the past" in text and "at most 60" in text and "minimum budget" in text


def test_unknown_amenity_lists_the_vocabulary() -> None:
    text = error_text(criteria(amenities=["helipad"]))
    assert "amenities.0" in text and "'wifi'" in text and "'bike rental'" in text


def test_unknown_field_is_rejected() -> None:
    assert "Extra inputs are not permitted" in error_text(criteria(stars=5))


def test_amenities_are_deduplicated_in_order() -> None:
    parsed = parse_criteria(criteria(amenities=["pool", "wifi", "pool"]), TODAY)
    assert parsed.amenities == [Amenity.POOL, Amenity.WIFI]


def test_date_range_single_night() -> None:
    night = DateRange.single(date(2026, 6, 3))
    assert night.end == date(2026, 6, 4)
    assert night.nights() == [date(2026, 6, 3)]


def test_summary_for_the_guest() -> None:
    parsed = parse_criteria(
        {
            "dates": [*JULY, {"start": "2026-07-10", "end": "2026-07-11"}],
            "budget_max": 250, "room_type": "suite", "amenities": ["pool"],
            "max_miles_to_airport": 5,
        },
        TODAY,
    )  # fmt: skip
    assert parsed.summary().splitlines() == [
        "Dates: Jul 1, 2026 → Jul 6, 2026; Jul 10, 2026 → Jul 11, 2026 (6 nights)",
        "Budget: up to $250 a night",
        "Room type: suite",
        "Amenities: pool",
        "Distance: within 5 mi of PDX airport",
    ]


@pytest.mark.parametrize(
    ("low", "high", "text"),
    [
        (None, None, "no limit"),
        (100, None, "at least $100 a night"),
        (None, 1200, "up to $1,200 a night"),
        (150, 250, "$150 to $250 a night"),
    ],
)
def test_describe_budget(low: float | None, high: float | None, text: str) -> None:
    assert describe_budget(low, high) == text
