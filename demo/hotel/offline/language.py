"""Offline natural-language understanding for HotelFlow's deterministic demo model.

The demo can run without an LLM: a scripted chat model uses these pure functions to read the
guest's sentence and decide which tool to call with which arguments, so the whole flow (tools,
transitions, state, memory) is exercised exactly as with a real model. Every parser takes the raw
sentence, returns a structured value, and returns None when it did not understand; anything that
depends on the date takes ``today`` explicitly.

The implementation is split by subject; this module is the one place to import from.
"""

from __future__ import annotations

from demo.hotel.offline._criteria import (
    WALKING_MILES,
    Budget,
    DistanceLimits,
    parse_amenities,
    parse_budget,
    parse_distances,
    parse_room_type,
)
from demo.hotel.offline._dates import date_trouble, parse_dates, says_how_long, strip_dates
from demo.hotel.offline._intents import (
    is_affirmative,
    is_negative,
    mentions_portland,
    names_another_place,
    parse_feature,
    parse_selection,
    wants_a_room,
    wants_new_search,
    wants_to_book,
    wants_to_compare,
    wants_to_quit,
    wants_to_see_criteria,
)

__all__ = [
    "WALKING_MILES",
    "Budget",
    "DistanceLimits",
    "date_trouble",
    "is_affirmative",
    "is_negative",
    "mentions_portland",
    "names_another_place",
    "parse_amenities",
    "parse_budget",
    "parse_dates",
    "parse_distances",
    "parse_feature",
    "parse_room_type",
    "parse_selection",
    "says_how_long",
    "strip_dates",
    "wants_a_room",
    "wants_new_search",
    "wants_to_book",
    "wants_to_compare",
    "wants_to_quit",
    "wants_to_see_criteria",
]
