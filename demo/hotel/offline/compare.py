"""The offline model in CompareStep: tables on request, answers to questions, book on a choice.

Hotels come from the guest's newest pick, else the last table ("the same ones", "those", or
nothing said), else the selection made on entry. Ordinals ("the first one") count the last
table's columns, and the reply names the hotel; numbers are the list's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import AIMessage

from demo.hotel.formats import LAST_COMPARISON, SELECTED
from demo.hotel.offline.asking import RESUME_BOOKING, is_choice, is_question, topic_of
from demo.hotel.offline.conversation import Conversation, Event, Offer
from demo.hotel.offline.language import (
    is_affirmative,
    parse_feature,
    wants_new_search,
    wants_to_compare,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.offline.present import (
    BOOK_OFFER_READ,
    NOTHING_BOOKED,
    book_offer,
    names,
    new_budget,
    out_of_range,
    weighs,
    without_names,
)
from demo.hotel.offline.reply import call, say
from demo.hotel.offline.selection import Selection, select
from demo.reading import way_back, withdrawn

FEATURE_QUESTION = "price, amenities, room types or distance?"

_BACK = re.compile(
    r"\bback\b|\bthe (?:full |whole |hotel )?list\b|\b(?:done|finished|enough|stop) comparing\b"
    r"|\ball (?:the )?(?:hotels|results|options)\b|\bother hotels\b|\breturn\b|\bresults\b"
    r"|\bsee (?:the )?(?:hotels|options)\b|\bready to (?:book|choose|pick)\b|\bon to booking\b"
    r"|\bproceed to book|\bgo to booking\b|\bbooking (?:page|step)\b|\blet'?s book\b\W*$"
    r"|\b(?:exit|leave|close|quit) (?:the |this )?(?:comparison|table)\b"
)
_WITHOUT = re.compile(
    r"\b(?:drop|remove|without|except|leave out|take out|minus|get rid of|skip|not)\b"
    r"(?![^,.;]*\b(?:book|reserve)\b)"
)
_ADD = re.compile(r"\b(?:add|plus|include|also|throw in|put in)\b")
_LISTED = re.compile(r"(\d+)\. ")


def decide(conversation: Conversation) -> AIMessage:
    """Compare as soon as hotels and feature are known; book on a choice; else ask."""
    offers = conversation.offers()
    result = conversation.tool_result()
    if result is not None:
        return say(f"Sorry, I couldn't do that: {result.text.split('. ')[0].rstrip('.')}.")
    text = conversation.guest_text()
    if wants_to_quit(text) and not is_question(text):
        return call("end_chat")
    if withdrawn(text):
        return say(f"{NOTHING_BOOKED} Tell me which hotel you would like when you are ready.")
    if conversation.forwarded():  # handed over by the list: never hand it straight back
        return _act(text, conversation, offers)
    back = _BACK.search(text.lower()) or RESUME_BOOKING.search(text.lower())
    if back and not re.search(r"\d|compar", text.lower()):
        return call("resume_booking")
    return _act(text, conversation, offers)


def _act(text: str, conversation: Conversation, offers: Sequence[Offer]) -> AIMessage:
    table = table_hotels(conversation, offers)
    picks = select(text, offers, table or offers, table or offers)
    if new_budget(text):  # "budget 500": a new search, not hotel number 500
        return call("search_again")
    if picks.missing:
        return say(out_of_range(picks, offers))
    weighed = picks if len(picks.hotels) > 1 else Selection(hotels=tuple(table))
    if weighs(text, weighed):  # "which of the two is closer to the airport?"
        topic = topic_of(without_names(text, list(weighed.hotels)))
        return call("answer_question", hotels=[o.name for o in weighed.hotels], topic=topic)
    if is_choice(text) and len(picks.hotels) == 1:
        return call("chosen_hotel", hotel=picks.hotels[0].name)
    if _BACK.search(text.lower()) and not picks.hotels and not conversation.forwarded():
        return call("resume_booking")
    if _back_to_criteria(text, picks, offers):
        return call("search_again")
    comparing = wants_to_compare(text) or len(picks.hotels) > 1
    if (
        is_question(text)
        and not comparing
        and (parse_feature(_without_names(text, offers)) is None or len(picks.hotels) == 1)
    ):
        return call("answer_question", hotels=[o.name for o in picks.hotels], topic=topic_of(text))
    confirmed = BOOK_OFFER_READ.search(_said_before(conversation))
    if confirmed and is_affirmative(text) and not picks.hotels:
        return call("chosen_hotel", hotel=confirmed["name"])
    if is_choice(text):
        return _which(picks, table or offers)
    return _compare(text, conversation, offers, picks)


def _back_to_criteria(text: str, picks: Selection, offers: Sequence[Offer]) -> bool:
    """ "Start over", "change my dates", a review of the criteria; not "... instead" of a table."""
    changes = wants_new_search(text) and not _compares_instead(text, picks, offers)
    return way_back(text) or changes or wants_to_see_criteria(text)


def _compares_instead(text: str, picks: Selection, offers: Sequence[Offer]) -> bool:
    """ "Compare 1 and 3 instead", "on amenities instead": another table, not a new search."""
    if not re.search(r"\binstead\b", text.lower()) or re.search(r"\bchange\b", text.lower()):
        return False
    return bool(picks.hotels) or parse_feature(_without_names(text, offers)) is not None


def _edited(text: str, hotels: list[Offer], offers: Sequence[Offer]) -> list[Offer]:
    """The compared hotels after "drop the first one and add number 6" (ordinals: the table)."""
    table = list(hotels)
    for clause in re.split(r"[,;]|\band\b|\bbut\b|\bthen\b", text.lower()):
        named = select(clause, offers, table, table).hotels
        if _WITHOUT.search(clause):
            hotels = [offer for offer in hotels if offer not in named]
        elif _ADD.search(clause):
            hotels += [offer for offer in named if offer not in hotels]
    return hotels


def _which(picks: Selection, candidates: Sequence[Offer]) -> AIMessage:
    if len(picks.hotels) > 1:
        return say(f"Which one would you like to book: {names(picks.hotels, 'or')}?")
    return say(
        f'Which one would you like to book: {names(candidates[:4], "or")}? Or say "back to the '
        'list" to see them all.'
    )


def _compare(
    text: str, conversation: Conversation, offers: Sequence[Offer], picks: Selection
) -> AIMessage:
    hotels = list(picks.hotels) if len(picks.hotels) > 1 else chosen_hotels(conversation, offers)
    if picks.hotels and (_WITHOUT.search(text.lower()) or _ADD.search(text.lower())):
        hotels = _edited(text, chosen_hotels(conversation, offers, newest=False), offers)
        picks = Selection(hotels=tuple(hotels)) if len(hotels) > 1 else Selection()
    if len(picks.hotels) == 1:
        ordinal = picks.hotels[0]
        return say(
            f"That's {ordinal.number}. {ordinal.name}. {book_offer(ordinal)} "
            "Or name another hotel to compare it with."
        )
    feature = parse_feature(_without_names(text, offers)) or (
        _last_feature(conversation) if len(picks.hotels) > 1 else None
    )
    feature = feature or chosen_feature(conversation, offers)
    if len(hotels) < 2:
        lines = "\n".join(offer.guest_line() for offer in offers[:10])
        return say(
            "Which hotels would you like to compare? Give me two or more numbers or names.\n\n"
            f"{lines}"
        )
    if feature is None:
        return say(f"Compare {names(hotels)} on what: {FEATURE_QUESTION}")
    return call("generate_comparison", hotels=[offer.name for offer in hotels], feature=feature)


def _said_before(conversation: Conversation) -> str:
    for event in reversed(conversation.events()[:-1]):
        if event.kind == "said":
            return event.text
        if event.kind in ("guest", "call"):
            return ""
    return ""


def _tables(conversation: Conversation) -> list[int]:
    events = conversation.events()
    return [i for i, e in enumerate(events) if e.kind == "call" and e.tool == "generate_comparison"]


def _since_last_table(conversation: Conversation) -> tuple[Event | None, list[Event]]:
    """The last ``generate_comparison`` call of this visit and the events after it."""
    events = conversation.events()
    calls = _tables(conversation)
    if not calls:
        return None, events
    return events[calls[-1]], events[calls[-1] + 1 :]


def _last_feature(conversation: Conversation) -> str | None:
    table, _ = _since_last_table(conversation)
    if table is not None:
        return str((table.args or {}).get("feature") or "") or None
    last = conversation.label(LAST_COMPARISON) or ""
    found = re.search(r" on (\w+)$", last)
    return found.group(1) if found else None


def table_hotels(conversation: Conversation, offers: Sequence[Offer]) -> list[Offer]:
    """The hotels of the last table (its column order), else those selected on entry."""
    table, _ = _since_last_table(conversation)
    if table is not None:
        wanted = list((table.args or {}).get("hotels", []))
        return [offer for name in wanted for offer in offers if offer.name == name]
    return _listed(conversation.label(SELECTED), offers) or _listed(
        conversation.label(LAST_COMPARISON), offers
    )


def chosen_hotels(
    conversation: Conversation, offers: Sequence[Offer], newest: bool = True
) -> list[Offer]:
    """The guest's latest pick of two or more; else the last table's or the selected hotels.

    With ``newest=False`` the guest's newest message is left out (it is being read now).
    """
    hotels = table_hotels(conversation, offers)
    events = _since_last_table(conversation)[1]
    for event in events if newest else events[:-1]:
        picks = select(event.text, offers, hotels or offers) if event.kind == "guest" else None
        if picks is not None and len(picks.hotels) > 1:
            hotels = list(picks.hotels)
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
