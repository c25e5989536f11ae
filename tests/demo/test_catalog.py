"""The HotelFlow catalog: data sanity, search filters, name lookup, relaxation advice."""

from __future__ import annotations

import re
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from pydantic import ValidationError

from demo.hotel import catalog
from demo.hotel.pricing import quote
from demo.hotel.types import Amenity, RoomType, StayCriteria, parse_criteria

TODAY = date(2026, 5, 15)
JULY = [{"start": "2026-07-01", "end": "2026-07-06"}]
AREA = {"Portland", "Beaverton", "Hillsboro", "Tigard", "Lake Oswego", "Vancouver", "Gresham",
        "Happy Valley", "Milwaukie", "Tualatin", "Troutdale"}  # fmt: skip


def stay(**fields: Any) -> StayCriteria:
    return parse_criteria({"dates": JULY, **fields}, TODAY)


# --- data ---------------------------------------------------------------------------------------


def test_catalog_size_and_ids() -> None:
    hotels = catalog.hotels()
    assert 28 <= len(hotels) <= 34
    assert [h.id for h in hotels] == [f"H{i:02d}" for i in range(1, len(hotels) + 1)]
    assert len({h.name for h in hotels}) == len(hotels)


def test_catalog_covers_the_area_and_price_range() -> None:
    hotels = catalog.hotels()
    assert {h.city for h in hotels} == AREA
    assert {h.state for h in hotels if h.city == "Vancouver"} == {"WA"}
    assert min(h.base_rate for h in hotels) == Decimal(89)
    assert max(h.base_rate for h in hotels) == Decimal(420)


def test_catalog_variety() -> None:
    hotels = catalog.hotels()
    assert {room for h in hotels for room in h.room_types} == set(RoomType)
    assert {a for h in hotels for a in h.amenities} == set(Amenity)
    assert any(RoomType.SUITE not in h.room_types for h in hotels)
    assert all(len(set(h.amenities)) == len(h.amenities) >= 4 for h in hotels)


def test_distances_are_plausible_by_city() -> None:
    by_city: dict[str, list[tuple[float, float]]] = {}
    for h in catalog.hotels():
        by_city.setdefault(h.city, []).append((h.miles_to_airport, h.miles_to_downtown))
    assert min(d for _, d in by_city["Portland"]) < 1  # a truly downtown hotel
    assert min(a for a, _ in by_city["Portland"]) < 3  # airport hotels
    assert all(a > 20 and d > 10 for a, d in by_city["Hillsboro"])  # far west suburbs


def test_get_by_id() -> None:
    assert catalog.get("H01") == catalog.hotels()[0]
    assert catalog.get(" h01 ") == catalog.hotels()[0]
    assert catalog.get("H99") is None


# --- search -------------------------------------------------------------------------------------


def test_search_sorts_by_total_then_name() -> None:
    found = catalog.search(stay(), TODAY)
    assert len(found) == len(catalog.hotels())
    keys = [(q.total, q.hotel.name) for q in found]
    assert keys == sorted(keys)


def test_worked_example_search() -> None:
    found = catalog.search(
        stay(room_type="two beds", amenities=["wifi", "free parking"], budget_max=250), TODAY
    )
    assert [q.hotel.name for q in found][:3] == [
        "Columbia Slough Lodge", "Murray Creek Inn", "Mount Hood Gateway Inn",
    ]  # fmt: skip
    assert found[0].total == Decimal("815.68")
    assert all(q.room_type is RoomType.TWO_BEDS and q.average <= 250 for q in found)


def test_all_requested_amenities_are_required() -> None:
    wanted = [Amenity.SPA, Amenity.POOL]
    found = catalog.search(stay(amenities=wanted), TODAY)
    assert found and all(q.hotel.has_all(wanted) for q in found)
    expected = {h.id for h in catalog.hotels() if h.has_all(wanted)}
    assert {q.hotel.id for q in found} == expected


def test_requested_room_type_only() -> None:
    found = catalog.search(stay(room_type="suite"), TODAY)
    assert {q.hotel.id for q in found} == {
        h.id for h in catalog.hotels() if RoomType.SUITE in h.room_types
    }
    assert all(q.room_type is RoomType.SUITE for q in found)


def test_without_room_type_the_cheapest_room_is_quoted() -> None:
    for q in catalog.search(stay(), TODAY):
        cheapest = min(q.hotel.room_types, key=lambda room: quote(q.hotel, room, q.dates).total)
        assert q.room_type is cheapest


def test_minimum_budget_picks_a_room_that_fits() -> None:
    """Cascade Runway Suites' one- and two-bed averages are below $300, its suite's above."""
    found = {q.hotel.id: q for q in catalog.search(stay(budget_min=300), TODAY)}
    assert found["H03"].room_type is RoomType.SUITE
    assert all(q.average >= 300 for q in found.values())


def test_budget_compares_the_average_nightly_price_inclusively() -> None:
    cheapest = catalog.search(stay(), TODAY)[0]
    exact = float(cheapest.average)
    assert cheapest.hotel in [q.hotel for q in catalog.search(stay(budget_max=exact), TODAY)]
    assert cheapest.hotel not in [
        q.hotel for q in catalog.search(stay(budget_max=exact - 0.01), TODAY)
    ]
    assert cheapest.hotel in [q.hotel for q in catalog.search(stay(budget_min=exact), TODAY)]


@pytest.mark.parametrize("field", ["max_miles_to_airport", "max_miles_to_downtown"])
def test_distance_limits_are_inclusive(field: str) -> None:
    attribute = field.removeprefix("max_")
    limit = sorted(getattr(h, attribute) for h in catalog.hotels())[4]
    found = catalog.search(stay(**{field: limit}), TODAY)
    assert {q.hotel.id for q in found} == {
        h.id for h in catalog.hotels() if getattr(h, attribute) <= limit
    }


def test_search_refuses_past_dates() -> None:
    old = StayCriteria.model_validate({"dates": [{"start": "2026-01-05", "end": "2026-01-08"}]})
    with pytest.raises(ValidationError, match="in the past"):
        catalog.search(old, TODAY)


def test_separate_nights_are_priced_only_for_those_nights() -> None:
    criteria = parse_criteria(
        {"dates": [{"start": "2026-06-03", "end": "2026-06-04"},
                   {"start": "2026-06-09", "end": "2026-06-11"}]},
        TODAY,
    )  # fmt: skip
    for q in catalog.search(criteria, TODAY):
        assert q.dates == [date(2026, 6, 3), date(2026, 6, 9), date(2026, 6, 10)]


# --- relaxation advice --------------------------------------------------------------------------


def test_advice_raising_the_budget_finds_what_it_says() -> None:
    criteria = stay(budget_max=120, amenities=["spa"])
    assert catalog.search(criteria, TODAY) == []
    advice = catalog.relax_advice(criteria, TODAY)
    match = re.search(r"Raising the budget to \$(\d+) a night would find (\d+) hotels?\.", advice)
    assert match, advice
    raised = criteria.model_copy(update={"budget_max": float(match.group(1))})
    assert len(catalog.search(raised, TODAY)) == int(match.group(2))
    assert int(match.group(1)) % 10 == 0


def test_advice_dropping_an_amenity() -> None:
    criteria = stay(amenities=["spa", "kitchenette"])
    assert catalog.search(criteria, TODAY) == []
    advice = catalog.relax_advice(criteria, TODAY)
    assert advice.startswith("No hotel matches all of your criteria. Dropping the ")
    assert "requirement would find" in advice


def test_advice_widening_a_distance() -> None:
    criteria = stay(max_miles_to_airport=1, amenities=["pool"])
    advice = catalog.relax_advice(criteria, TODAY)
    assert "Allowing up to 2 miles from the airport would find 1 hotel." in advice


def test_advice_any_room_type() -> None:
    criteria = stay(room_type="suite", max_miles_to_airport=3, amenities=["pet friendly"])
    assert catalog.search(criteria, TODAY) == []
    advice = catalog.relax_advice(criteria, TODAY)
    assert "any room type instead of suite would find 1 hotel" in advice


def test_advice_offers_at_most_three_options_best_first() -> None:
    criteria = stay(room_type="suite", max_miles_to_airport=3, amenities=["pet friendly"])
    assert catalog.relax_advice(criteria, TODAY) == (
        "No hotel matches all of your criteria. Allowing up to 11 miles from the airport would "
        "find 2 hotels. Alternatively, any room type instead of suite would find 1 hotel, or "
        "dropping the pet friendly requirement would find 1 hotel."
    )
    many = stay(budget_max=150, max_miles_to_downtown=2, room_type="suite", amenities=["pool"])
    advice = catalog.relax_advice(many, TODAY)
    counts = [int(n) for n in re.findall(r"would find (\d+) hotel", advice)]
    assert 1 <= len(counts) <= 3 and counts == sorted(counts, reverse=True)


def test_advice_lowering_the_minimum() -> None:
    criteria = stay(budget_min=450, amenities=["pool", "pet friendly"])
    assert catalog.search(criteria, TODAY) == []
    advice = catalog.relax_advice(criteria, TODAY)
    match = re.search(
        r"lowering the minimum to \$(\d+) a night would find (\d+) hotel", advice, re.I
    )
    assert match, advice
    lowered = criteria.model_copy(update={"budget_min": float(match.group(1))})
    assert len(catalog.search(lowered, TODAY)) == int(match.group(2))


def test_advice_when_no_single_change_helps() -> None:
    criteria = stay(max_miles_to_airport=0.1, max_miles_to_downtown=0.1)
    assert "changing just one of them is not enough" in catalog.relax_advice(criteria, TODAY)


def test_advice_when_hotels_already_match() -> None:
    advice = catalog.relax_advice(stay(room_type="suite"), TODAY)
    assert advice.endswith("hotels already match these criteria.")


# --- names --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hotel_id"),
    [
        ("the Riverside", "H01"),
        ("RIVERSIDE INN", "H01"),
        ("riversde", "H01"),  # a typo
        ("I'll take the Skyline please", "H05"),
        ("mabels place", "H09"),
        ("Mabel", "H09"),
        ("Tualatin Commons", "H28"),
        ("the lloyd commons hotel", "H07"),
        ("Happy Valley", "H26"),
        ("book H12", "H12"),
        ("Columbia", None),  # two hotels share it
        ("I'm happy with that", None),  # a common word alone names nothing
        ("the Hilton", None),
        ("the Riverside or the Skyline", None),  # two hotels: not a single one
    ],
)
def test_find_by_name(text: str, hotel_id: str | None) -> None:
    found = catalog.find_by_name(text)
    assert (found.id if found else None) == hotel_id


def test_mentioned_hotels_in_order() -> None:
    found = catalog.mentioned_hotels("compare the Skyline, the Riverside and Cascade Runway")
    assert [h.id for h in found] == ["H05", "H01", "H03"]


def test_mentioned_hotels_among_a_subset() -> None:
    presented = [h for h in catalog.hotels() if h.id in ("H04", "H05")]
    assert catalog.find_by_name("Columbia") is None  # ambiguous in the whole catalog...
    assert catalog.find_by_name("the columbia one", presented) == presented[0]  # ...not here
    assert catalog.find_by_name("the Riverside", presented) is None
