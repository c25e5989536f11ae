"""Answers to a guest's questions about listed hotels, straight from the catalog.

A question is never a choice: answering changes nothing (no booking, no new search, no new
numbering). Topics are the comparison features, one amenity of the vocabulary, or "overview".
"""

from __future__ import annotations

from collections.abc import Sequence

from demo.hotel import catalog
from demo.hotel.booking import Offer
from demo.hotel.compare import FEATURES, normalize_feature
from demo.hotel.pricing import format_usd
from demo.hotel.types import Amenity, Hotel

TOPICS = (*FEATURES, "overview")
"""What a question can be about, besides one amenity ("pool", "free parking", ...)."""


def normalize_topic(topic: str) -> str:
    """A canonical topic: a feature, "overview", or an amenity's name; ValueError otherwise."""
    key = topic.strip().lower()
    if key in ("overview", "nearby", "description", "area", "general"):
        return "overview"
    amenity = next((a for a in Amenity if key == str(a).lower()), None)
    if amenity is not None:
        return str(amenity)
    try:
        return normalize_feature(key)
    except ValueError:
        names = ", ".join([*TOPICS, "or an amenity such as pool"])
        raise ValueError(f"Unknown topic {topic!r}; ask about one of: {names}.") from None


def answer(offers: Sequence[Offer], topic: str) -> str:
    """The catalog's answer about ``offers`` on ``topic``, one sentence per hotel."""
    key = normalize_topic(topic)
    lines = []
    for offer in offers:
        hotel = catalog.get(offer.hotel_id)
        if hotel is not None:
            lines.append(_about(offer, hotel, key))
    return "\n".join(lines)


def _about(offer: Offer, hotel: Hotel, key: str) -> str:
    name = f"{offer.name} (#{offer.number})"
    if key == "price":
        return (
            f"{name}: {offer.room_type}, {offer.nights} night{'s' if offer.nights != 1 else ''}, "
            f"{format_usd(offer.total)} in total, {format_usd(offer.average)} a night on average."
        )
    if key == "distance":
        return (
            f"{name} is {hotel.miles_to_airport:g} miles from PDX airport and "
            f"{hotel.miles_to_downtown:g} miles from downtown Portland."
        )
    if key == "amenities":
        return f"{name} offers {', '.join(str(a) for a in hotel.amenities)}."
    if key == "room_types":
        return f"{name} has these room types: {', '.join(str(r) for r in hotel.room_types)}."
    if key == "overview":
        return (
            f"{name}, {hotel.city}, {hotel.state}: {hotel.description} "
            f"({hotel.miles_to_downtown:g} mi to downtown, {hotel.miles_to_airport:g} mi to PDX.)"
        )
    has = any(str(a) == key for a in hotel.amenities)
    return f"Yes, {name} has {key}." if has else f"No, {name} does not have {key}."
