"""PresentStep's offline model: the results draft, an explicit booking, a revision, an exit.

It reads the hotels from ``HOTEL_FOUND_INFO`` in its prompt, as PicoFlow's model did, and the
guest's newest words. It books only a pick the guest makes plainly — a number, a position or
a name, alone or with "book", "take", "reserve" — or a "yes" to the hotel it just named; a
question about a hotel, two hotels at once, or a pick taken back books nothing. Anything about
the criteria goes back to the router (``revise_search``). Its replies are drafts: the
presentation judge shows them, or the code's own list.
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.decision_hotel.conversation import last_reply, latest_request, tool_feedback
from demo.decision_hotel.criteria import usd
from demo.decision_hotel.reading import read, wants_exit, wants_review, wants_search
from demo.hotel.catalog import hotels as catalog_hotels
from demo.hotel.catalog import mentioned_hotels
from demo.hotel.offline._intents import is_affirmative, parse_selection, wants_new_search
from demo.reading import corrections, corrects_a_number, way_back
from picoflow.testing import tool_call

_FOUND = re.compile(r"HOTEL_FOUND_INFO:\n(\[.*?\n\]|\[\])", re.S)
_BOOK = re.compile(
    r"\b(?:book|reserve|take|go with|choose|pick|select|want|i'?ll have|get me|let'?s do"
    r"|i'?d like|grab|lock in|confirm)\b",
    re.IGNORECASE,
)
_JUST_A_PICK = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|yes|yeah|sure|great|perfect|then|please|pls)\W+)*(?:the\s+)?"
    r"(?:#?\d+|number\s+\w+|no\.?\s*\d+|option\s+\w+|(?:first|second|third|fourth|fifth|sixth"
    r"|seventh|eighth|ninth|tenth|last|cheapest)(?:\s+(?:one|hotel|option))?)"
    r"(?:\s+(?:one|hotel|option))?(?:\W+(?:please|pls|thanks|thank you))*\W*$",
    re.IGNORECASE,
)
_CHEAPEST = re.compile(r"\b(?:cheapest|least expensive|lowest (?:price|total)|best price)\b", re.I)
_DEAREST = re.compile(r"\b(?:most expensive|priciest|highest (?:price|total))\b", re.I)
_SHALL_I = re.compile(r"Shall I book (?P<name>.+?)\?")
PRESENT_OPENER = "Present the current matching hotels."
ABOUT_A_HOTEL = (
    "I can only show each hotel's name and total price here. To require an amenity or change "
    "another criterion, tell me and I'll revise the search."
)
_CHANGE = re.compile(
    r"\b(?:change|make|switch|update|revise|instead|add|need|want|require|only|must|remove)\b",
    re.IGNORECASE,
)


def present(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """PresentStep's reply: a tool call for a booking, a revision or an exit, else a draft."""
    hotels = _found(str(messages[0].content))
    feedback = tool_feedback(messages, tools)
    if feedback is not None:  # chosen_hotel refused the name: say so with the list
        return draft(hotels, feedback)
    text = latest_request(messages)
    if text is None or text == PRESENT_OPENER:
        return draft(hotels)
    if corrections.withdrawn(text):
        return draft(hotels, "No problem, I haven't booked anything.")
    said = read(text, date.today())
    picks = _picks(corrections.settle(text), hotels)
    if len(picks) == 1 and _asks_about(text):  # "does the first one have a gym?": neither
        return draft(hotels, ABOUT_A_HOTEL)
    if said.touches() or wants_search(text) or wants_review(text) or _goes_back(text):
        return tool_call("revise_search")
    if wants_exit(text) and not picks:
        return tool_call("terminate_session")
    return _booking(text, picks, hotels, last_reply(messages))


def _booking(
    text: str, picks: list[int], hotels: list[dict[str, Any]], before: str
) -> AIMessage | str:
    settled = corrections.settle(text)
    named = _SHALL_I.search(before)
    if not picks and named and is_affirmative(settled):
        return tool_call("chosen_hotel", hotelName=named["name"])
    if len(picks) > 1:
        listed = " or ".join(hotels[i - 1]["hotelName"] for i in picks)
        return draft(hotels, f"Which one would you like to book: {listed}?")
    if not picks:
        return draft(hotels, "I can book one of these hotels, or revise the search.")
    name = hotels[picks[0] - 1]["hotelName"]
    question = settled.rstrip().endswith("?") and not re.search(
        r"\b(?:can|could) (?:you|i)\b", settled
    )
    if (
        _BOOK.search(settled) or _JUST_A_PICK.match(settled) or _is_name(settled, name)
    ) and not question:
        return tool_call("chosen_hotel", hotelName=str(picks[0]))
    return draft(hotels, f"Shall I book {name}? Reply with its name or number to book it.")


def _asks_about(text: str) -> bool:
    """A question about a listed hotel that asks for no change."""
    return text.rstrip().endswith("?") and not _CHANGE.search(text)


def _goes_back(text: str) -> bool:
    return way_back(text) or wants_new_search(text) or corrects_a_number(text)


def _found(prompt: str) -> list[dict[str, Any]]:
    found = _FOUND.search(prompt)
    try:
        hotels = json.loads(found.group(1)) if found else []
    except ValueError:
        return []
    return hotels if isinstance(hotels, list) else []


def _picks(text: str, hotels: list[dict[str, Any]]) -> list[int]:
    """The 1-based positions `text` picks, by number, position or name (several: ambiguous)."""
    if hotels and _CHEAPEST.search(text):  # the list keeps catalog order: the lowest total
        totals = [h["total"] for h in hotels]
        return [totals.index(min(totals)) + 1]
    if hotels and _DEAREST.search(text):
        totals = [h["total"] for h in hotels]
        return [totals.index(max(totals)) + 1]
    names = [h["hotelName"] for h in hotels]
    among = [h for h in catalog_hotels() if h.name in names]
    by_name = [names.index(h.name) + 1 for h in mentioned_hotels(text, among)]
    if by_name:
        return list(dict.fromkeys(by_name))
    return parse_selection(text, len(hotels)) or []


def _is_name(text: str, name: str) -> bool:
    """The message is the hotel's name, give or take "ok", "the" and "please"."""
    said = re.sub(r"\W+", " ", text).strip().lower()
    said = re.sub(r"^(?:(?:ok|okay|yes|then|the|please|pls)\s+)+", "", said)
    said = re.sub(r"(?:\s+(?:please|pls|thanks|thank you|then))+$", "", said)
    return said == re.sub(r"\W+", " ", name).strip().lower()


def draft(hotels: list[dict[str, Any]], lead: str = "") -> str:
    """The results as this model writes them; the judge checks them against the trusted list."""
    if not hotels:
        return f"{lead}\n\nNo hotels matched your criteria.".strip()
    count = f"{len(hotels)} Portland hotel{'s' if len(hotels) != 1 else ''}"
    lines = [f"I found {count} that match your criteria:"]
    lines += [f"{i}. {h['hotelName']} — total {usd(h['total'])}" for i, h in enumerate(hotels, 1)]
    lines += [
        "",
        "To book, reply with a hotel's name or number. To revise the dates, budget, room type, "
        "amenities or distance, tell me what to change.",
    ]
    text = "\n".join(lines)
    return f"{lead}\n\n{text}" if lead else text
