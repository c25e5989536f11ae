"""The offline model in CompareStep: find the hotels and the feature, then ask for the table."""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage

from demo.hotel.language import (
    parse_feature,
    wants_new_search,
    wants_to_book,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.language_text import normalize
from demo.hotel.offline.conversation import Conversation, Event, Offer
from demo.hotel.offline.present import picked
from demo.hotel.offline.reply import call, say

FEATURE_QUESTION = "price, amenities, room types or distance?"

_BACK = re.compile(r"\bback\b|\bthe list\b|\bdone comparing\b|\bstop comparing\b")
_LISTED = re.compile(r"(\d+)\. ")


def decide(conversation: Conversation) -> AIMessage:
    """Compare as soon as hotels and feature are known; hand booking back to the list."""
    offers = conversation.offers()
    result = conversation.tool_result()
    if result is not None:
        return say(f"Sorry, I couldn't compare those: {result.text.split('. ')[0].rstrip('.')}.")
    text = conversation.guest_text()
    if wants_to_quit(text):
        return call("end_chat")
    if _leaves(text):
        return call("resume_booking")
    hotels = chosen_hotels(conversation, offers)
    feature = chosen_feature(conversation, offers)
    if len(hotels) < 2:
        lines = "\n".join(offer.line() for offer in offers)
        return say(
            "Which hotels would you like to compare? Give me two or more numbers or names, or "
            f'say "all of them".\n\n{lines}'
        )
    if feature is None:
        return say(f"Compare {_names(hotels)} on what: {FEATURE_QUESTION}")
    return call("generate_comparison", hotels=[offer.name for offer in hotels], feature=feature)


def _leaves(text: str) -> bool:
    return (
        wants_to_book(text)
        or wants_new_search(text)
        or wants_to_see_criteria(text)
        or bool(_BACK.search(normalize(text)))
    )


def _since_last_table(conversation: Conversation) -> tuple[Event | None, list[Event]]:
    """The last ``generate_comparison`` call of this visit and the events after it."""
    events = conversation.events()
    calls = [
        i for i, e in enumerate(events) if e.kind == "call" and e.tool == "generate_comparison"
    ]
    if not calls:
        return None, events
    return events[calls[-1]], events[calls[-1] + 1 :]


def chosen_hotels(conversation: Conversation, offers: Sequence[Offer]) -> list[Offer]:
    """The guest's latest pick; else the last table's hotels; else the hotels selected on entry."""
    table, after = _since_last_table(conversation)
    if table is not None:
        names = list((table.args or {}).get("hotels", []))
        hotels = [offer for name in names for offer in offers if offer.name == name]
    else:
        hotels = _listed(conversation.label("Selected for comparison"), offers)
        hotels = hotels or _listed(conversation.label("Last comparison"), offers)
    for event in after:
        picks = picked(event.text, offers) if event.kind == "guest" else []
        if len(picks) > 1:  # one hotel is no comparison: "the cheapest?" asks about price
            hotels = picks
    return hotels


def chosen_feature(conversation: Conversation, offers: Sequence[Offer]) -> str | None:
    """The feature the guest asked for since the last table, if any."""
    feature = None
    for event in _since_last_table(conversation)[1]:
        if event.kind == "guest":
            feature = parse_feature(_without_names(event.text, offers)) or feature
    return feature


def _without_names(text: str, offers: Sequence[Offer]) -> str:
    """Hotel names hide feature words ("Cascade Runway Suites" is no room-type request)."""
    for offer in offers:
        text = re.sub(re.escape(offer.name), " ", text, flags=re.IGNORECASE)
    return text


def _listed(line: str | None, offers: Sequence[Offer]) -> list[Offer]:
    """Offers named in a prompt line such as "1. Riverside Inn; 3. Murray Creek Inn on price"."""
    numbers = [int(n) for n in _LISTED.findall(line or "")]
    return [offer for number in numbers for offer in offers if offer.number == number]


def _names(offers: Sequence[Offer]) -> str:
    names = [offer.name for offer in offers]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
