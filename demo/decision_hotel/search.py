"""The ``search_hotels`` contract and the pricing behind it (research §3.2, SearchHotelsStep).

PicoFlow's SearchHotelsStep calls an MCP tool ``search_hotels`` with ``toSearchRequest``'s
object and reads ``{hotels: [{hotelName, prices, total}]}``; the server prices with HotelFlow's
engine over its catalog. Here the server (``demo.decision_hotel.pricing_server``, a real stdio
MCP server) prices with picoflow's HotelFlow port: its catalog (``demo.hotel.catalog``) and its
nightly pricing (``demo.hotel.pricing``), so one Portland catalog serves both demos.

What a port has to decide, and what this one does:

* The catalog's amenity vocabulary is the HotelFlow port's; PicoFlow's 23 names map onto it
  (`CATALOG_AMENITIES`). The catalog records "a pool", so ``indoorPool`` and ``outdoorPool``
  both mean it; the nine names it has no counterpart for (``nonSmoking``, ``digitalKey``...)
  match no hotel, so asking for one finds nothing and the guest is told to revise, never shown
  a hotel that may lack it.
* Only nights are charged (check-out excluded), each priced by the HotelFlow port's rules;
  PicoFlow's engine also charged the check-out day.
* A hotel is within the budget when every night is (PicoFlow's rule: the highest night against
  the maximum, the lowest against the minimum); distance limits are inclusive ("within 5
  miles"); the room type is any of ``roomTypes`` and priced as the first. Results keep catalog
  order, as PicoFlow's kept its data order.
"""

from __future__ import annotations

import json
import math
from datetime import date, timedelta
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from demo.hotel.catalog import hotels as catalog_hotels
from demo.hotel.pricing import quote
from demo.hotel.types import Amenity, Hotel, RoomType

TOOL_NAME = "search_hotels"
TOOL_DESCRIPTION = "Search Portland Hilton hotels and price the stay for the given criteria."

CATALOG_AMENITIES: dict[str, Amenity | None] = {
    "freeWiFi": Amenity.WIFI, "nonSmoking": None, "freeBreakfast": Amenity.BREAKFAST_INCLUDED,
    "freeParking": Amenity.FREE_PARKING, "airportShuttle": Amenity.AIRPORT_SHUTTLE,
    "roomService": Amenity.ROOM_SERVICE, "fitnessCenter": Amenity.FITNESS_CENTER,
    "petFriendly": Amenity.PET_FRIENDLY, "digitalKey": None, "boutique": None,
    "onSiteRestaurant": Amenity.RESTAURANT, "indoorPool": Amenity.POOL,
    "businessCenter": Amenity.BUSINESS_CENTER, "meetingRoom": Amenity.MEETING_ROOMS,
    "evCharging": Amenity.EV_CHARGING, "connectingRooms": None, "eveningReception": None,
    "concierge": None, "streaming": None, "kitchen": Amenity.KITCHENETTE, "tennis": None,
    "outdoorPool": Amenity.POOL, "newHotel": None,
}  # fmt: skip
"""PicoFlow's amenity names onto the catalog's; None: the catalog records no such amenity."""

Limit = Annotated[float | None, Field(allow_inf_nan=False)]


class BudgetLimits(BaseModel):
    """Nightly budget in USD; null for no limit."""

    model_config = ConfigDict(extra="forbid")

    min: Limit = None
    max: Limit = None


class DistanceLimits(BaseModel):
    """Most miles from the Portland airport and from the city center; null for no limit."""

    model_config = ConfigDict(extra="forbid")

    airport: Limit = None
    cityCenter: Limit = None


class SearchRequest(BaseModel):
    """The arguments of ``search_hotels`` (``toSearchRequest``'s object)."""

    model_config = ConfigDict(extra="forbid")

    startDate: str = Field(description="Check-in date in YYYY-MM-DD format.")
    endDate: str = Field(description="Checkout date in YYYY-MM-DD format.")
    amenities: list[str] = Field(default_factory=list, description="Every required amenity.")
    roomTypes: list[str] = Field(default_factory=list, description="Acceptable room types.")
    budget: BudgetLimits = Field(default_factory=BudgetLimits)
    maxDistanceMiles: DistanceLimits = Field(default_factory=DistanceLimits)


def search(request: SearchRequest) -> dict[str, Any]:
    """``{"hotels": [{"hotelName", "prices", "total"}]}`` for `request`, in catalog order.

    Raises:
        ValueError: the dates are not a check-in before a checkout.
    """
    nights = _nights(request.startDate, request.endDate)
    rooms = [RoomType(r) for r in request.roomTypes if r in {t.value for t in RoomType}]
    if request.roomTypes and not rooms:
        return {"hotels": []}
    found = []
    for hotel in catalog_hotels():
        room = next((r for r in rooms if r in hotel.room_types), None) if rooms else None
        if (rooms and room is None) or not _fits(hotel, request):
            continue
        priced = quote(hotel, room or hotel.room_types[0], nights)
        prices = [float(night.price) for night in priced.nights]
        if _within_budget(prices, request.budget):
            found.append({"hotelName": hotel.name, "prices": prices, "total": float(priced.total)})
    return {"hotels": found}


def _nights(start: str, end: str) -> list[date]:
    try:
        first, checkout = date.fromisoformat(start), date.fromisoformat(end)
    except ValueError:
        raise ValueError(f"The dates {start!r} to {end!r} are not YYYY-MM-DD dates.") from None
    if checkout <= first:
        raise ValueError(f"Checkout {end} must be after check-in {start}.")
    return [first + timedelta(days=i) for i in range((checkout - first).days)]


def _fits(hotel: Hotel, request: SearchRequest) -> bool:
    wanted = [CATALOG_AMENITIES.get(name) for name in request.amenities]
    if any(amenity is None for amenity in wanted):
        return False  # an amenity the catalog does not record: no hotel is known to have it
    if not hotel.has_all(a for a in wanted if a is not None):
        return False
    limits = request.maxDistanceMiles
    return _within(hotel.miles_to_airport, limits.airport) and _within(
        hotel.miles_to_downtown, limits.cityCenter
    )


def _within(miles: float, limit: float | None) -> bool:
    return limit is None or miles <= limit


def _within_budget(prices: list[float], budget: BudgetLimits) -> bool:
    if budget.max is not None and max(prices) > budget.max:
        return False
    return budget.min is None or min(prices) >= budget.min


def hotels_of(answer: str) -> list[dict[str, Any]]:
    """The hotels of a ``search_hotels`` answer, each checked to have the contract's shape.

    Raises:
        ValueError: the answer is not ``{"hotels": [{hotelName, prices, total}]}``.
    """
    try:
        data = json.loads(answer)
    except ValueError:
        raise ValueError(f"Hotel pricing MCP error: {answer}") from None
    found = data.get("hotels") if isinstance(data, dict) else None
    if not isinstance(found, list) or not all(_is_hotel(h) for h in found):
        raise ValueError(f"Hotel pricing MCP error: unexpected answer {answer[:200]}")
    return [
        {"hotelName": h["hotelName"], "prices": h["prices"], "total": h["total"]} for h in found
    ]


def _is_hotel(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("hotelName"), str):
        return False
    total, prices = value.get("total"), value.get("prices")
    return (
        isinstance(total, (int, float))
        and math.isfinite(total)
        and isinstance(prices, list)
        and all(isinstance(p, (int, float)) for p in prices)
    )
