"""What a guest reads while an operator decides on a booking (issue 35 item 6).

picoflow's default replies name the tool and its arguments ("chosen_hotel(hotel='...')"), which
is right for a developer and wrong for a guest; HotelFlow's steps override the two hooks
(`Step.on_approval_requested`, `Step.on_message_while_pending`) with these lines, which say
which hotel, how many nights and what total wait, in the guest's words.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from demo.hotel.booking import Offer, pick_offer


def _what(approval: dict[str, Any], offers: Sequence[Offer]) -> str:
    hotel = str((approval.get("args") or {}).get("hotel") or "your hotel")
    offer = pick_offer(offers, hotel)
    if offer is None:
        return f"your booking at {hotel}"
    nights = f"{offer.nights} night{'s' if offer.nights != 1 else ''}"
    return f"your booking at {offer.name} ({nights}, ${offer.total:,.2f} in total)"


def _upper(text: str) -> str:
    return text[:1].upper() + text[1:]


def requested(approval: dict[str, Any], offers: Sequence[Offer], limit: Any) -> str:
    """The reply when a booking waits for an operator."""
    over = f" because its total is over ${float(limit):,.0f}" if limit is not None else ""
    return (
        f"Thank you! {_upper(_what(approval, offers))} needs a quick check by our team"
        f"{over}. Nothing is booked yet: I'll confirm here as soon as it is approved."
    )


def still_waiting(pending: Sequence[dict[str, Any]], offers: Sequence[Offer]) -> str:
    """The reply to a message while the booking waits."""
    what = _what(pending[0], offers) if pending else "your booking"
    return (
        f"{_upper(what)} is still waiting for our team's approval. I'll tell you here as "
        "soon as it is decided; I've noted your message."
    )
