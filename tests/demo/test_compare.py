"""The markdown comparison chart of HotelFlow."""

from __future__ import annotations

from datetime import date

import pytest

from demo.hotel import catalog
from demo.hotel.compare import FEATURES, comparison_table, normalize_feature
from demo.hotel.pricing import quote
from demo.hotel.types import Hotel, RoomType

NIGHTS = [date(2026, 7, 1), date(2026, 7, 2)]


def hotel(hotel_id: str) -> Hotel:
    found = catalog.get(hotel_id)
    assert found is not None
    return found


RIVERSIDE, CASCADE, SKYLINE = hotel("H01"), hotel("H03"), hotel("H05")


def test_amenities_union_in_vocabulary_order_with_marks() -> None:
    assert comparison_table([CASCADE, RIVERSIDE], "amenities").splitlines()[:6] == [
        "| Amenity | Cascade Runway Suites | Riverside Inn |",
        "| --- | --- | --- |",
        "| wifi | ✅ | ✅ |",
        "| free parking | ✅ | ❌ |",
        "| pool | ✅ | ❌ |",
        "| fitness center | ✅ | ✅ |",
    ]
    rows = comparison_table([CASCADE, RIVERSIDE], "amenities").splitlines()[2:]
    assert len(rows) == len(set(CASCADE.amenities) | set(RIVERSIDE.amenities))
    assert "| spa |" not in comparison_table([CASCADE, RIVERSIDE], "amenities")


def test_room_types() -> None:
    assert comparison_table([RIVERSIDE, SKYLINE], "room_types") == "\n".join([
        "| Room type | Riverside Inn | Skyline Tower Hotel |",
        "| --- | --- | --- |",
        "| one bed | ✅ | ✅ |",
        "| two beds | ✅ | ✅ |",
        "| suite | ❌ | ✅ |",
    ])  # fmt: skip


def test_distance() -> None:
    assert comparison_table([SKYLINE, CASCADE], "distance").splitlines()[2:] == [
        "| To PDX airport | 11.2 mi | 1.6 mi |",
        "| To downtown Portland | 0.3 mi | 10.9 mi |",
    ]


def test_price_from_quotes() -> None:
    quotes = [quote(h, RoomType.ONE_BED, NIGHTS) for h in (SKYLINE, RIVERSIDE)]
    assert comparison_table(quotes, "price") == "\n".join([
        "| Price | Skyline Tower Hotel | Riverside Inn |",
        "| --- | --- | --- |",
        "| Room type | one bed | one bed |",
        "| Nights | 2 | 2 |",
        "| Per night (average) | $375.70 | $206.70 |",
        "| Total | $751.40 | $413.40 |",
    ])  # fmt: skip


def test_quotes_work_for_every_feature_and_columns_keep_the_order_given() -> None:
    quotes = [quote(h, RoomType.ONE_BED, NIGHTS) for h in (SKYLINE, CASCADE, RIVERSIDE)]
    for feature in FEATURES:
        header = comparison_table(quotes, feature).splitlines()[0]
        assert header.endswith("| Skyline Tower Hotel | Cascade Runway Suites | Riverside Inn |")


def test_cells_are_not_padded() -> None:
    for feature in ("amenities", "room_types", "distance"):
        for line in comparison_table([RIVERSIDE, SKYLINE], feature).splitlines():
            assert "  " not in line
            assert line.startswith("| ") and line.endswith(" |")


def test_duplicates_are_shown_once() -> None:
    table = comparison_table([RIVERSIDE, SKYLINE, RIVERSIDE], "distance")
    assert table.splitlines()[0] == "| Distance | Riverside Inn | Skyline Tower Hotel |"


def test_pipes_in_names_are_escaped() -> None:
    odd = RIVERSIDE.model_copy(update={"id": "H98", "name": "Inn | Bar"})
    assert "| Inn \\| Bar |" in comparison_table([odd, SKYLINE], "distance")


@pytest.mark.parametrize(
    ("given", "expected"),
    [("price", "price"), ("Room types", "room_types"), ("roomType", "room_types"),
     ("room-type", "room_types"), ("AMENITIES", "amenities"), ("distance", "distance")],
)  # fmt: skip
def test_feature_names_are_normalized(given: str, expected: str) -> None:
    assert normalize_feature(given) == expected


def test_unknown_feature_lists_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="choose one of: price, amenities, room_types, distance"):
        comparison_table([RIVERSIDE, SKYLINE], "stars")


def test_needs_two_different_hotels() -> None:
    with pytest.raises(ValueError, match="at least two different hotels"):
        comparison_table([RIVERSIDE, RIVERSIDE], "amenities")
    with pytest.raises(ValueError, match="at least two"):
        comparison_table([], "amenities")


def test_price_needs_quotes() -> None:
    with pytest.raises(ValueError, match="needs quotes"):
        comparison_table([RIVERSIDE, SKYLINE], "price")
