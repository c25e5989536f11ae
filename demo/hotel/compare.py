"""Side-by-side markdown comparison of two or more hotels on one feature.

Columns follow the order the caller gives (the order the guest asked for), rows are normalised
before rendering so every column has every row, and cells are not padded: markdown renderers align
columns themselves, and natural widths keep the text short for the model that relays it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from demo.hotel.pricing import format_usd
from demo.hotel.types import Amenity, Hotel, Quote, RoomType

Rows = list[tuple[str, list[str]]]
"""Table body: (row label, one cell per hotel)."""

YES, NO = "✅", "❌"

FEATURES = ("price", "amenities", "room_types", "distance")
"""Features a comparison can be about."""

_ALIASES = {
    "room_type": "room_types",
    "roomtype": "room_types",
    "roomtypes": "room_types",
    "rooms": "room_types",
    "amenity": "amenities",
    "prices": "price",
    "distances": "distance",
}


def normalize_feature(feature: str) -> str:
    """Canonical feature name ("Room types" → "room_types"); ValueError listing valid ones."""
    key = feature.strip().lower().replace(" ", "_").replace("-", "_")
    key = _ALIASES.get(key, key)
    if key not in FEATURES:
        raise ValueError(f"Unknown feature {feature!r}; choose one of: {', '.join(FEATURES)}.")
    return key


def _hotel(item: Quote | Hotel) -> Hotel:
    return item.hotel if isinstance(item, Quote) else item


def _cell(text: str) -> str:
    """Escape what would break a markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ")


def _check_price_inputs(items: Sequence[Quote | Hotel]) -> list[Quote]:
    quotes = [item for item in items if isinstance(item, Quote)]
    if len(quotes) != len(items):
        raise ValueError("A price comparison needs quotes (a priced stay), not bare hotels.")
    return quotes


def _price_rows(items: Sequence[Quote | Hotel]) -> Rows:
    quotes = _check_price_inputs(items)
    return [
        ("Room type", [str(q.room_type) for q in quotes]),
        ("Nights", [str(q.night_count) for q in quotes]),
        ("Per night (average)", [format_usd(q.average) for q in quotes]),
        ("Total", [format_usd(q.total) for q in quotes]),
    ]


def _amenity_rows(items: Sequence[Quote | Hotel]) -> Rows:
    hotels = [_hotel(item) for item in items]
    offered = {amenity for hotel in hotels for amenity in hotel.amenities}
    union = [amenity for amenity in Amenity if amenity in offered]  # vocabulary order: stable
    return [(str(a), [YES if a in h.amenities else NO for h in hotels]) for a in union]


def _room_rows(items: Sequence[Quote | Hotel]) -> Rows:
    hotels = [_hotel(item) for item in items]
    return [(str(room), [YES if room in h.room_types else NO for h in hotels]) for room in RoomType]


def _distance_rows(items: Sequence[Quote | Hotel]) -> Rows:
    hotels = [_hotel(item) for item in items]
    return [
        ("To PDX airport", [f"{h.miles_to_airport:g} mi" for h in hotels]),
        ("To downtown Portland", [f"{h.miles_to_downtown:g} mi" for h in hotels]),
    ]


_BUILDERS: dict[str, tuple[str, Callable[[Sequence[Quote | Hotel]], Rows]]] = {
    "price": ("Price", _price_rows),
    "amenities": ("Amenity", _amenity_rows),
    "room_types": ("Room type", _room_rows),
    "distance": ("Distance", _distance_rows),
}


def comparison_table(items: Sequence[Quote | Hotel], feature: str) -> str:
    """A markdown table comparing the given hotels (or quotes) on ``feature``, columns in order.

    Raises ValueError for an unknown feature (listing the valid ones), for fewer than two
    different hotels, and for a price comparison of hotels without quotes.
    """
    label, build = _BUILDERS[normalize_feature(feature)]
    first_by_id: dict[str, Quote | Hotel] = {}
    for item in items:
        first_by_id.setdefault(_hotel(item).id, item)
    unique = list(first_by_id.values())
    if len(unique) < 2:
        raise ValueError("A comparison needs at least two different hotels.")
    header = [label, *(_hotel(item).name for item in unique)]
    lines = [_row(header), _row(["---"] * len(header))]
    lines.extend(_row([name, *cells]) for name, cells in build(unique))
    return "\n".join(lines)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(_cell(cell) for cell in cells) + " |"
