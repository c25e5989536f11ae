"""TravelFlow's demo data: a few flights, hotels and activities per destination."""

from __future__ import annotations

from typing import Any

FLIGHTS: dict[str, list[dict[str, Any]]] = {
    "Lisbon": [
        {"flight": "TP 1351", "departs": "07:05", "price": 189, "cabin": "economy"},
        {"flight": "BA 500", "departs": "13:40", "price": 245, "cabin": "economy"},
        {"flight": "TP 1357", "departs": "18:20", "price": 610, "cabin": "business"},
    ],
    "Rome": [
        {"flight": "AZ 201", "departs": "09:15", "price": 210, "cabin": "economy"},
        {"flight": "FR 8342", "departs": "06:30", "price": 95, "cabin": "economy"},
    ],
}

HOTELS: dict[str, list[dict[str, Any]]] = {
    "Lisbon": [
        {"hotel": "Alfama Rooms", "per_night": 95, "stars": 3},
        {"hotel": "Tagus Palace", "per_night": 240, "stars": 5},
        {"hotel": "Chiado Loft", "per_night": 150, "stars": 4},
    ],
    "Rome": [
        {"hotel": "Trastevere Inn", "per_night": 120, "stars": 3},
        {"hotel": "Palazzo Navona", "per_night": 310, "stars": 5},
    ],
}

ACTIVITIES: dict[str, list[dict[str, Any]]] = {
    "Lisbon": [
        {"activity": "Tram 28 tour", "price": 25},
        {"activity": "Sintra day trip", "price": 70},
    ],
    "Rome": [
        {"activity": "Colosseum tour", "price": 55},
        {"activity": "Vatican museums", "price": 40},
    ],
}
