"""The hotel list as the guest reads it: one page of the numbered matches, in the chosen order."""

from __future__ import annotations

from collections.abc import Sequence

from demo.hotel.booking import Offer, page_of, sort_offers
from demo.hotel.formats import page_count

ORDER_WORDS = {
    "price": "cheapest first",
    "airport": "closest to PDX airport first",
    "downtown": "closest to downtown first",
}

LIST_HINT = (
    "Tell me the number or name of the hotel you'd like to book, ask me about one, ask me to "
    'compare some of them (for example "compare 1 and 3 on price"), or tell me what to change '
    "in your search."
)


def render_page(offers: Sequence[Offer], sort: str, page: int, dates: str) -> str:
    """One page of the list, with what the guest can do next (other pages, other orders)."""
    pages = page_count(len(offers))
    page = min(max(page, 1), pages)
    shown = page_of(sort_offers(offers, sort), page)
    count = len(offers)
    head = f"I found {count} hotel{'s' if count != 1 else ''} for {dates}"
    if pages > 1:
        head += f" ({ORDER_WORDS[sort]}; page {page} of {pages})"
    elif sort != "price":
        head += f" ({ORDER_WORDS[sort]})"
    lines = "\n".join(offer.formatted().guest_line() for offer in shown)
    return f"{head}:\n{lines}\n\n{_paging_hint(page, pages)}{LIST_HINT}"


def _paging_hint(page: int, pages: int) -> str:
    if pages == 1:
        return ""
    moves = []
    if page < pages:
        moves.append('"more" for the next page')
    if page > 1:
        moves.append('"previous" for the one before')
    return f"Say {' or '.join(moves)}; I can also sort by distance to the airport or downtown. "
