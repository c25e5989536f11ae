"""TravelFlow's mock search results, exactly PicoFlow's tables: the same for every destination.

The flight ids look swapped (a departure search returns R1-R3, a return search D1-D3); they
are kept as in the original.
"""

from __future__ import annotations

from typing import Any

_FLIGHT = ("id", "airline", "price", "departure_time", "arrival_time")
_HOTEL = ("id", "name", "price_per_night", "rating", "location")
_ACTIVITY = ("id", "name", "price", "duration", "description")


def _table(fields: tuple[str, ...], *rows: tuple[Any, ...]) -> list[dict[str, Any]]:
    return [dict(zip(fields, row, strict=True)) for row in rows]


DEPARTURE_FLIGHTS = _table(
    _FLIGHT,
    ("R1", "Air Demo", 550, "11:00", "15:00"),
    ("R2", "Pico Airways", 400, "07:00", "16:00"),
    ("R3", "Luxury Jets", 800, "10:00", "17:00"),
)
RETURN_FLIGHTS = _table(
    _FLIGHT,
    ("D1", "Air Demo", 450, "10:00", "14:00"),
    ("D2", "Pico Airways", 300, "06:00", "11:00"),
    ("D3", "Luxury Jets", 900, "12:00", "16:00"),
)
HOTELS = _table(
    _HOTEL,
    ("H1", "Grand Pico Hotel", 150, 4.5, "City Center"),
    ("H2", "Budget Inn", 80, 3.0, "Suburbs"),
    ("H3", "Luxury Palace", 400, 5.0, "Beachfront"),
)
ACTIVITIES = _table(
    _ACTIVITY,
    ("A1", "City Tour", 50, "4 hours", "Guided tour of the city."),
    ("A2", "Museum Visit", 25, "2 hours", "Visit the national museum."),
    ("A3", "Adventure Park", 100, "Full Day", "Theme park access."),
)
