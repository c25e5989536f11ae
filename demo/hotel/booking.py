"""What a search shows and what a booking records: the presented offers and the confirmed stay.

An ``Offer`` is one numbered line of the list the guest sees (a quote reduced to what the
conversation needs); a ``Booking`` is the confirmed stay. Both are plain JSON once dumped, so
the flow keeps them in step state, and both are re-validated when read back.

The demo has no reservation system, so ``confirmation_number`` derives the number from the
booking's reference — the session's id and how many bookings that session made before — and
the booking itself (hotel, room, nights and the day it was made). Two guests booking the same
room on the same day get different numbers (issue 19), and a session resumed or replayed keeps
its own. A real app would take the number from its booking API instead.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal

from pydantic import BaseModel, ConfigDict, Field

from demo.hotel import catalog
from demo.hotel.formats import PAGE_SIZE, SORT_KEYS, OfferLine
from demo.hotel.pricing import quote
from demo.hotel.types import Quote, RoomType, StayCriteria, describe_dates

_NUMBERED = re.compile(r"^(?:#|no\.?|number|option|hotel)?\s*(\d+)$", re.IGNORECASE)
"""A list reference by number: "3", "#3", "number 3"."""


class Offer(BaseModel):
    """One hotel of the presented list, with the price of the whole stay."""

    model_config = ConfigDict(frozen=True)

    number: int = Field(ge=1, description="Position in the list the guest saw, from 1.")
    hotel_id: str
    name: str
    city: str
    room_type: RoomType
    nights: int = Field(ge=1)
    total: Decimal
    average: Decimal
    miles_to_airport: float
    miles_to_downtown: float

    @classmethod
    def from_quote(cls, number: int, stay: Quote) -> Offer:
        """The list entry for a quote."""
        hotel = stay.hotel
        return cls(
            number=number,
            hotel_id=hotel.id,
            name=hotel.name,
            city=f"{hotel.city}, {hotel.state}",
            room_type=stay.room_type,
            nights=stay.night_count,
            total=stay.total,
            average=stay.average,
            miles_to_airport=hotel.miles_to_airport,
            miles_to_downtown=hotel.miles_to_downtown,
        )

    def formatted(self) -> OfferLine:
        """The offer in the shared line format (``demo.hotel.formats``)."""
        return OfferLine(
            number=self.number,
            name=self.name,
            hotel_id=self.hotel_id,
            city=self.city,
            room_type=str(self.room_type),
            nights=self.nights,
            total=float(self.total),
            airport=self.miles_to_airport,
            downtown=self.miles_to_downtown,
        )

    def line(self) -> str:
        """The offer as one line of a prompt: number, name, catalog id, room, nights, total."""
        return self.formatted().prompt_line()

    def quote(self, criteria: StayCriteria) -> Quote:
        """The full quote again (nightly prices), for a price comparison."""
        hotel = catalog.get(self.hotel_id)
        if hotel is None:
            raise ValueError(f"Hotel {self.hotel_id} is no longer in the catalog.")
        return quote(hotel, self.room_type, criteria.nights())


def numbered(quotes: Sequence[Quote]) -> list[Offer]:
    """Every quote (the search sorts them cheapest first), numbered from 1.

    The numbers stay with the hotels until the next search: sorting the list differently shows
    the same numbers in another order, so "number 8" always means the same hotel.
    """
    return [Offer.from_quote(number, stay) for number, stay in enumerate(quotes, 1)]


def sort_offers(offers: Sequence[Offer], key: str) -> list[Offer]:
    """The offers in the order asked for; distances sort closest first.

    ``key`` is "price", "airport" or "downtown"; the numbers stay as they are.
    """
    if key not in SORT_KEYS:
        raise ValueError(f"Unknown order {key!r}; choose one of: {', '.join(SORT_KEYS)}.")
    if key == "airport":
        return sorted(offers, key=lambda offer: (offer.miles_to_airport, offer.number))
    if key == "downtown":
        return sorted(offers, key=lambda offer: (offer.miles_to_downtown, offer.number))
    return sorted(offers, key=lambda offer: offer.number)


def page_of(offers: Sequence[Offer], page: int) -> list[Offer]:
    """The offers of one page (from 1) of an already sorted list."""
    return list(offers[(page - 1) * PAGE_SIZE : page * PAGE_SIZE])


def pick_offer(offers: Sequence[Offer], reference: str) -> Offer | None:
    """The offer a reference names: a list number ("3", "#3"), a catalog id or a hotel name.

    Returns None when the reference names no offer of the list, or several.
    """
    text = reference.strip()
    numbered = _NUMBERED.match(text)
    if numbered:
        wanted = int(numbered.group(1))
        return next((offer for offer in offers if offer.number == wanted), None)
    for offer in offers:
        if text.casefold() in (offer.name.casefold(), offer.hotel_id.casefold()):
            return offer
    hotels = [hotel for hotel in (catalog.get(o.hotel_id) for o in offers) if hotel is not None]
    found = catalog.find_by_name(text, among=hotels)
    return next((offer for offer in offers if found and offer.hotel_id == found.id), None)


def pick_offers(
    offers: Sequence[Offer], references: Iterable[str]
) -> tuple[list[Offer], list[str]]:
    """The offers the references name (in order, without repeats), and the unknown references."""
    picked: dict[str, Offer] = {}
    unknown = []
    for reference in references:
        offer = pick_offer(offers, reference)
        if offer is None:
            unknown.append(reference)
        else:
            picked.setdefault(offer.hotel_id, offer)
    return list(picked.values()), unknown


def not_in_list(references: Sequence[str], offers: Sequence[Offer]) -> str:
    """Tool feedback for references that name no presented hotel."""
    names = ", ".join(repr(reference) for reference in references)
    listed = "; ".join(f"{offer.number}. {offer.name}" for offer in offers)
    return (
        f"{names} is not one of the hotels shown to the guest. The list is: {listed}. "
        "Ask the guest which of these they mean."
    )


class Booking(BaseModel):
    """A confirmed stay."""

    model_config = ConfigDict(frozen=True)

    confirmation: str = Field(pattern=r"^HF-\d{6}$")
    hotel_id: str
    hotel: str
    city: str
    room_type: RoomType
    dates: str = Field(
        description="The stay in words, e.g. 'Jul 1, 2026 → Jul 6, 2026 (5 nights)'."
    )
    check_in: date
    total: Decimal
    booked_on: date

    @classmethod
    def confirm(cls, offer: Offer, criteria: StayCriteria, today: date, reference: str) -> Booking:
        """Book ``offer`` for the stay in ``criteria``, as of ``today``.

        ``reference`` is unique to this booking (``booking_reference``); the number derives
        from it.
        """
        nights = criteria.nights()
        return cls(
            confirmation=confirmation_number(offer, nights, today, reference),
            hotel_id=offer.hotel_id,
            hotel=offer.name,
            city=offer.city,
            room_type=offer.room_type,
            dates=describe_dates(criteria.dates),
            check_in=nights[0],
            total=offer.total,
            booked_on=today,
        )


def booking_reference(session_id: str | None, earlier_bookings: int) -> str:
    """What makes a booking unique: its session and its place among the session's bookings.

    Without a session (a step run on its own) the reference is random, so still unique.
    """
    return f"{session_id or secrets.token_hex(12)}#{earlier_bookings + 1}"


def confirmation_number(offer: Offer, nights: Sequence[date], today: date, reference: str) -> str:
    """The booking's number, "HF-" and six digits (see the module docstring)."""
    parts = [reference, offer.hotel_id, offer.room_type, today.isoformat(), *map(str, nights)]
    key = "|".join(parts)
    digest = int(hashlib.sha256(key.encode()).hexdigest(), 16)
    return f"HF-{digest % 900_000 + 100_000}"
