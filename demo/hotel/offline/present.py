"""The offline model in PresentStep: show the list, then book, compare or search again."""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from langchain_core.messages import AIMessage

from demo.hotel import catalog
from demo.hotel.language import (
    parse_amenities,
    parse_budget,
    parse_dates,
    parse_distances,
    parse_room_type,
    parse_selection,
    wants_new_search,
    wants_to_book,
    wants_to_compare,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.offline.conversation import Conversation, Offer
from demo.hotel.offline.reply import call, say

_NUMBER = re.compile(r"(?:#|\bnumber\s*|\bno\.?\s*|^\s*)(\d+)\b")
"""A list number the guest typed: "#7", "number 7", "7"."""

_SEARCH = re.compile(r"\bsearch\b")

LIST_HINT = (
    "Tell me the number or name of the hotel you'd like to book, ask me to compare some of them "
    '(for example "compare 1 and 3 on price"), or tell me what to change in your search.'
)


def decide(conversation: Conversation) -> AIMessage:
    """Act on the guest's message; when there is nothing to act on, show the list."""
    offers = conversation.offers()
    result = conversation.tool_result()
    if result is not None:
        return say(f"{relay(result.text)}\n\n{hotel_list(conversation)}")
    text = conversation.guest_text()
    if wants_to_quit(text):
        return call("end_chat")
    unlisted = not_listed(text, offers)
    if unlisted:
        return say(f"{unlisted} is not in this list. {hotel_list(conversation)}")
    if wants_to_compare(text):
        picks = picked(text, offers) or recent_picks(conversation, offers)
        return call("go_compare", hotels=[offer.name for offer in picks])
    if wants_to_book(text):
        return book(picked(text, offers), conversation)
    if changes_search(text):
        return call("search_again")
    picks = picked(text, offers)
    if len(picks) > 1:
        return say(f"Would you like to compare {_names(picks)}, or book one of them?")
    if picks:
        return book(picks, conversation)
    return say(_unclear(text, conversation) + hotel_list(conversation))


def _unclear(text: str, conversation: Conversation) -> str:
    """Nothing to act on: first presentation, or a message that picks nothing in the list."""
    if not any(event.kind == "said" for event in conversation.events()):
        return ""
    count = len(conversation.offers())
    number = _NUMBER.search(text)
    if number and int(number.group(1)) > count:
        return f"There is no number {number.group(1)}: the list has {count}. "
    return "Sorry, I didn't catch which hotel you mean. "


def book(picks: Sequence[Offer], conversation: Conversation) -> AIMessage:
    """Book the one hotel picked; ask when it is none or several."""
    if len(picks) == 1:
        return call("chosen_hotel", hotel=picks[0].name)
    if picks:
        return say(f"Which one would you like to book: {_names(picks, 'or')}?")
    lines = "\n".join(offer.line() for offer in conversation.offers())
    return say(f"Which hotel would you like to book? Tell me its number or name.\n\n{lines}")


def picked(text: str, offers: Sequence[Offer]) -> list[Offer]:
    """The listed hotels a message picks, by name or by number, in the order said."""
    hotels = [hotel for hotel in map(catalog.get, (o.hotel_id for o in offers)) if hotel]
    named = catalog.mentioned_hotels(text, among=hotels)
    if named:
        by_id = {offer.hotel_id: offer for offer in offers}
        return [by_id[hotel.id] for hotel in named]
    numbers = parse_selection(text, len(offers)) or []
    return [offer for number in numbers for offer in offers if offer.number == number]


def not_listed(text: str, offers: Sequence[Offer]) -> str | None:
    """Hotels the guest names that the search did not find ("the Riverside Inn")."""
    listed = {offer.hotel_id for offer in offers}
    others = [hotel.name for hotel in catalog.mentioned_hotels(text) if hotel.id not in listed]
    return " and ".join(others) or None


def recent_picks(conversation: Conversation, offers: Sequence[Offer]) -> list[Offer]:
    """The hotels the guest picked most recently ("compare them"), if any."""
    for event in reversed(conversation.events()):
        if event.kind == "guest" and (picks := picked(event.text, offers)):
            return picks
    return []


def changes_search(text: str) -> bool:
    """The message changes or reviews the criteria rather than choosing from the list."""
    if wants_new_search(text) or wants_to_see_criteria(text) or _SEARCH.search(text.lower()):
        return True
    mentioned = (parse_dates(text, date.today()), parse_budget(text), parse_room_type(text))
    return any(value is not None for value in mentioned) or bool(
        parse_amenities(text) or parse_distances(text)
    )


def hotel_list(conversation: Conversation) -> str:
    """The numbered list with totals, as the prompt gives it, and what the guest can do."""
    offers = conversation.offers()
    dates, _, found = (conversation.label("Stay") or "").partition(". Hotels found: ")
    matches = int(re.sub(r"\D.*", "", found) or len(offers))
    if matches > len(offers):
        head = f"I found {matches} hotels for {dates}. Here are the {len(offers)} cheapest:"
    else:
        head = f"I found {len(offers)} hotel{'s' if len(offers) != 1 else ''} for {dates}:"
    lines = "\n".join(offer.line() for offer in offers)
    return f"{head}\n{lines}\n\n{LIST_HINT}"


def relay(result: str) -> str:
    """Explain a tool's refusal (a hotel that is not in the list) in the guest's terms."""
    unknown = re.match(r"^(.*?) is not one of the hotels", result)
    if unknown:
        return f"Sorry, I can't find {unknown.group(1)} in the list."
    return f"Sorry, that didn't work: {result.split('. ')[0].rstrip('.')}."


def _names(offers: Sequence[Offer], last: str = "and") -> str:
    names = [f"{offer.number}. {offer.name}" for offer in offers]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + f" {last} " + names[-1]
