"""DecisionHotelFlow's CriteriaHelper and search contract (D5, research §3.1 and §3.2).

The deterministic side of the flow, checked against the doc's exact strings: the snapshot,
every validation message in correction order, the search request, both renderings, and the
``search_hotels`` answer over the HotelFlow port's catalog.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from demo.decision_hotel import criteria
from demo.decision_hotel.criteria import (
    AMENITIES,
    NEXT_STEP_ERROR,
    ROOM_TYPES,
    next_field,
    read_criteria,
    render_criteria_summary,
    render_hotel_results,
    to_search_request,
    usd,
    validate_criteria,
)
from demo.decision_hotel.search import CATALOG_AMENITIES, SearchRequest, hotels_of, search

TODAY = date(2026, 12, 7)
INVALID_DATES = "Checkout must be after a valid check-in date."
BAD_BUDGET = "Budget values must be nonnegative and minimum cannot exceed maximum."


def owners(**states: dict[str, Any]) -> dict[str, Any]:
    """A snapshot read from these owner states (by step name)."""
    return read_criteria(lambda name: states.get(name, {}))


def complete(**changes: dict[str, Any]) -> dict[str, Any]:
    states: dict[str, dict[str, Any]] = {
        "DateRangeStep": {"answered": True, "start": "2026-12-18", "end": "2026-12-21"},
        "BudgetStep": {"answered": True, "min": 100, "max": 200},
        "RoomTypeStep": {"answered": True, "roomType": "one bed"},
        "AmenityStep": {"answered": True, "amenities": ["freeWiFi"]},
        "DistanceStep": {"answered": True, "airport": None, "cityCenter": None},
    }
    for step, update in changes.items():
        states[step] = {**states[step], **update}
    return owners(**states)


def messages(snapshot: dict[str, Any]) -> list[tuple[str, str]]:
    return [(i.field, i.message) for i in validate_criteria(snapshot, TODAY)]


def test_d5_vocabularies_are_picoflows() -> None:
    assert ROOM_TYPES == ("one bed", "two beds", "suite")
    assert len(AMENITIES) == 23 and AMENITIES[0] == "freeWiFi" and AMENITIES[-1] == "newHotel"
    assert set(CATALOG_AMENITIES) == set(AMENITIES)


def test_d5_snapshot_keeps_only_what_is_well_formed() -> None:
    snapshot = owners(
        DateRangeStep={"answered": "yes", "start": 20261218, "end": "2026-12-21"},
        BudgetStep={"answered": True, "min": float("inf"), "max": True},
        RoomTypeStep={"answered": True, "roomType": "penthouse"},
        AmenityStep={"answered": True, "amenities": ["freeWiFi", "spa", "kitchen"]},
    )
    assert snapshot["dates"] == {"answered": False, "start": None, "end": "2026-12-21"}
    assert snapshot["budget"] == {"answered": True, "min": None, "max": None}
    assert snapshot["roomType"] == {"answered": True, "roomType": None}
    assert snapshot["amenities"]["amenities"] == ["freeWiFi", "kitchen"]
    assert snapshot["distance"] == {"answered": False, "airport": None, "cityCenter": None}


def test_d5_nothing_answered_gives_every_issue_in_correction_order() -> None:
    assert messages(owners()) == [
        ("dates", "Stay dates have not been answered."),
        ("budget", "Nightly budget has not been answered."),
        ("room_type", "Room type has not been answered."),
        ("amenities", "Amenity preferences have not been answered."),
        ("distance", "Distance preferences have not been answered."),
    ]
    assert messages(complete()) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"DateRangeStep": {"start": "2026-12-32"}}, INVALID_DATES),
        ({"DateRangeStep": {"start": "2026-12-18 "}}, INVALID_DATES),
        ({"DateRangeStep": {"end": "2026-12-18"}}, INVALID_DATES),
        (
            {"DateRangeStep": {"start": "2026-12-07", "end": "2026-12-09"}},
            "Check-in must be after the current date.",
        ),
        ({"BudgetStep": {"min": -1}}, BAD_BUDGET),
        ({"BudgetStep": {"min": 300}}, BAD_BUDGET),
        ({"RoomTypeStep": {"roomType": "penthouse"}}, "Room type has not been answered."),
        ({"AmenityStep": {"answered": False}}, "Amenity preferences have not been answered."),
        ({"DistanceStep": {"airport": -2}}, "Distance limits must be nonnegative."),
    ],
)  # fmt: skip
def test_d5_each_validation_message(change: dict[str, Any], expected: str) -> None:
    assert [message for _, message in messages(complete(**change))] == [expected]


def test_d5_unsupported_values_of_a_raw_snapshot() -> None:
    snapshot = complete()
    snapshot["roomType"]["roomType"] = "penthouse"
    snapshot["amenities"]["amenities"] = ["spa"]
    assert messages(snapshot) == [
        ("room_type", "Room type is not supported."),
        ("amenities", "An amenity is not supported."),
    ]


def test_d5_next_step_takes_a_field_or_the_first_issue() -> None:
    assert next_field("budget") == "budget"
    assert next_field(validate_criteria(owners(), TODAY)) == "dates"
    for wrong in ([], "pets"):
        with pytest.raises(ValueError) as raised:
            next_field(wrong)
        assert str(raised.value) == NEXT_STEP_ERROR
    assert NEXT_STEP_ERROR == (
        "CriteriaHelper.nextStep() requires a criterion field or a non-empty issue list."
    )
    assert criteria.OWNERS["room_type"] == "RoomTypeStep"


def test_d5_search_request_of_a_valid_snapshot_and_refusal_of_an_invalid_one() -> None:
    assert to_search_request(complete(), TODAY) == {
        "startDate": "2026-12-18",
        "endDate": "2026-12-21",
        "amenities": ["freeWiFi"],
        "roomTypes": ["one bed"],
        "budget": {"min": 100, "max": 200},
        "maxDistanceMiles": {"airport": None, "cityCenter": None},
    }
    with pytest.raises(ValueError) as raised:
        to_search_request(
            complete(BudgetStep={"answered": False}, DistanceStep={"airport": -1}), TODAY
        )
    assert str(raised.value) == (
        "Nightly budget has not been answered. Distance limits must be nonnegative."
    )


def test_d5_criteria_summary_as_picoflow_renders_it() -> None:
    assert render_criteria_summary(owners()) == (
        "Current Portland hotel criteria:\n- Dates: not set\n- Nightly budget: not set\n"
        "- Room type: not set\n- Amenities: not set\n- Distance: not set"
    )
    summary = complete(
        BudgetStep={"min": None, "max": 150.5},
        AmenityStep={"amenities": ["freeWiFi", "indoorPool"]},
        DistanceStep={"airport": 10, "cityCenter": 2.5},
    )
    assert render_criteria_summary(summary).splitlines()[1:] == [
        "- Dates: 2026-12-18 to 2026-12-21",
        "- Nightly budget: no minimum to $150.5",
        "- Room type: one bed",
        "- Amenities: freeWiFi, indoorPool",
        "- Distance: airport within 10 miles; city center within 2.5 miles",
    ]
    nothing = complete(BudgetStep={"min": None, "max": None}, AmenityStep={"amenities": []})
    assert render_criteria_summary(nothing).splitlines()[2:5] == [
        "- Nightly budget: no preference",
        "- Room type: one bed",
        "- Amenities: no preference",
    ]
    low = complete(BudgetStep={"min": 90, "max": None})
    assert "- Nightly budget: $90 to no maximum" in render_criteria_summary(low)
    dates = complete(DateRangeStep={"end": 5})
    assert "- Dates: 2026-12-18 to not set" in render_criteria_summary(dates)


def test_d5_hotel_results_as_picoflow_renders_them() -> None:
    assert render_hotel_results([]) == (
        "No hotels matched the current criteria. Tell me which criterion to revise."
    )
    found = [{"hotelName": "A", "total": 2501.2512}, {"hotelName": "B", "total": 1000}]
    assert render_hotel_results(found) == (
        "Here are the matching Portland hotels:\n1. A — total $2,501.25\n2. B — total $1,000.00"
        "\n\nReply with a hotel name or number to book, or tell me which search criterion to "
        "revise."
    )
    assert usd(0.005) == "$0.01" and usd(1234567.891) == "$1,234,567.89"


def request(**changes: Any) -> SearchRequest:
    base: dict[str, Any] = {
        "startDate": "2026-12-18",
        "endDate": "2026-12-21",
        "amenities": [],
        "roomTypes": ["two beds"],
        "budget": {"min": None, "max": None},
        "maxDistanceMiles": {"airport": None, "cityCenter": None},
    }
    return SearchRequest.model_validate({**base, **changes})


def test_d5_search_prices_each_night_and_filters_like_the_contract() -> None:
    every = search(request())["hotels"]
    assert every and all(len(h["prices"]) == 3 for h in every)  # check-out is not a night
    assert all(round(sum(h["prices"]), 2) == round(h["total"], 2) for h in every)
    cheap = search(request(budget={"min": None, "max": 150}))["hotels"]
    assert {h["hotelName"] for h in cheap} < {h["hotelName"] for h in every}
    assert all(max(h["prices"]) <= 150 for h in cheap)
    near = search(request(maxDistanceMiles={"airport": 3, "cityCenter": None}))["hotels"]
    assert 0 < len(near) < len(every)
    assert search(request(amenities=["tennis"])) == {"hotels": []}  # not in the catalog
    pool = search(request(amenities=["indoorPool"]))
    assert pool == search(request(amenities=["outdoorPool"])) and pool["hotels"]


def test_d5_search_answers_are_checked_before_they_are_trusted() -> None:
    assert hotels_of('{"hotels": [{"hotelName": "A", "prices": [1.5], "total": 1.5}]}') == [
        {"hotelName": "A", "prices": [1.5], "total": 1.5}
    ]
    for wrong in ("not json", '{"hotels": [{"hotelName": 3}]}', '{"rooms": []}'):
        with pytest.raises(ValueError, match="^Hotel pricing MCP error: "):
            hotels_of(wrong)
    with pytest.raises(ValueError, match="Checkout 2026-12-18 must be after check-in 2026-12-18"):
        search(request(endDate="2026-12-18"))
