"""The offline model in ExploreStep: confirm the area, gather criteria, search, relay problems.

It asks before it guesses: no dates means a question, not a default; an answer it cannot read
gets a clarifying question that says what it needs.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from datetime import date

from langchain_core.messages import AIMessage

from demo.hotel import catalog
from demo.hotel.offline._text import NUMBER_WORDS, normalize, to_int
from demo.hotel.offline.asking import is_question
from demo.hotel.offline.conversation import Conversation, Event
from demo.hotel.offline.draft import Draft
from demo.hotel.offline.language import (
    date_trouble,
    is_affirmative,
    is_negative,
    mentions_portland,
    names_another_place,
    parse_room_type,
    wants_a_room,
    wants_new_search,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.offline.reply import call, say
from demo.hotel.offline.usual import OFFER_MARK, accepts, declines, offer, usual_of
from demo.hotel.returning import UsualStay
from demo.hotel.types import Amenity

GREETING = "Hello! I'm the HotelFlow assistant: I find and book hotels around Portland."
AREA_QUESTION = "Are you looking for a hotel in the Portland, Oregon area?"
SEARCH_OFFER = "shall I search now?"
RELAX_OFFER = "Shall I go with the first suggestion and search again?"
DATES_QUESTION = "When would you like to check in and check out?"
DATES_EXAMPLE = 'For example "July 1 to July 6" or "next Friday for two nights".'
DECLINE = (
    "I'm sorry, I can only help with hotels in the Portland, Oregon area. If you need one there, "
    "just tell me your dates."
)

_SEARCH = re.compile(
    r"\bsearch\b|\bshow me\b|\bgo ahead\b|\blet'?s see\b|\bwhat do you have\b"
    r"|\bwhat'?s available\b|\blook (?:it|them) up\b|\bfind (?:them|it|hotels|me some hotels)\b"
    r"|\b(?:what are )?(?:my|the|your) options\b|\b(?:see|list|view) (?:the |some |your )?hotels\b"
    r"|\b(?:which|what)(?: one)?(?:'s| is| are)(?: the)? cheapest\b"
    r"|^\W*(?:ok\W+)?(?:go|do it|let'?s go|go for it|run it|shoot|hit it)\W*$"
)
_NOTHING_MORE = re.compile(
    r"\bthat'?s (?:all|it|everything)\b|\bnothing (?:else|more)\b|\bno more\b|\bnone\b"
    r"|\bno(?: other)? preferences?\b|\banything\b|\bwhatever\b|\bdoesn'?t matter\b"
    r"|\bdon'?t (?:care|mind)\b|\bnot really\b"
)
QUESTIONS = (
    ("budget", 'What is your budget per night? (or "no preference")'),
    ("room", 'Which room type would you like: one bed, two beds or a suite? (or "skip")'),
    (
        "amenities",
        'Any amenities you need, such as wifi, parking, a pool, a gym or pets? (or "none")',
    ),
    (
        "distance",
        'Any limit on the distance to the airport or downtown, in miles? (or "no preference")',
    ),
)
"""The optional criteria, asked one at a time in this order."""

_SKIP = re.compile(
    r"\b(?:no preferences?|skip|none|nope|no|nah|n/a|doesn'?t matter|don'?t care|don'?t mind"
    r"|any(?:thing| is fine| will do)?|whatever|whichever|not really|not important|no thanks"
    r"|pass|next|no need|nothing|flexible|either|all good|fine|not sure|no idea|dunno"
    r"|i don'?t know)\b"
)
_SKIP_ALL = re.compile(
    r"\bskip (?:the )?(?:rest|all|everything|the questions)\b|\bstop asking\b"
    r"|\b(?:no|enough) (?:more )?questions\b|\bthat'?s (?:all|everything|it)\b|\bnothing else\b"
)
"""An answer to a criteria question that skips all the remaining ones."""
_GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|hiya|howdy|greetings|yo|good (?:morning|afternoon|evening|day))"
    r"(?:\W+(?:there|all|folks|again|assistant|hotelflow|bot))?\W*$"
)
"""A message that only says hello: it is greeted back, not apologised for."""
_ACK = re.compile(
    r"^\W*(?:ok(?:ay)?|k|thanks?(?: you)?|thx|cool|great|alright|all right|got it|sure|right)"
    r"(?:\W+(?:thanks?(?: you)?|so far|then))?\W*$"
)
"""A bare acknowledgement, which answers nothing but needs no apology."""
_LATER_STAGE = re.compile(
    r"\bcompar\w*|\bside[- ]by[- ]side\b|\bvs\.?(?!\w)"
    r"|\b(?:book|reserve|take|go with)\s+(?:the\s+)?(?:first|second|third|last|cheapest|number"
    r"|#|\d|one\b|it\b|that\b|this\b)"
    r"|\b(?:first|second|third|last|cheapest|top) (?:one|hotel|option)s?\b|\bnumber \d|#\s?\d"
    r"|^\W*(?:the )?(?:first|second|third|last|cheapest)\W*$"
)
"""Booking or comparing, which needs a list of hotels: there is none before a search."""
_BARE_AMOUNT = re.compile(r"^\W*\$?(?P<n>[2-9]\d|\d{3,5})(?:\.\d\d)?\s*(?:dollars|bucks|usd)?\W*$")
_PLACE_ONLY = re.compile(
    r"^\W*(?:(?:from|to|near|of|close to)\s+)?(?:the\s+)?(?P<place>downtown|airport|pdx"
    r"|city cent(?:er|re))(?:\s+(?:please|is fine|then))?\W*$"
)
_MILES_ONLY = re.compile(
    r"^\W*(?:within|under|less than|up to|max(?:imum)?|no more than|at most)?\s*"
    r"(?P<n>\d+(?:\.\d+)?)\s*(?:mi|miles?)(?:\s+(?:max|tops|or less|away))?\W*$"
)
_NO_LIMIT_ONLY = re.compile(r"^\W*(?:no|without|any) limits?(?: at all)?\W*$")
_PRICE_WORDS = re.compile(
    r"\bcheap\w*|\bexpensive\b|\bafford\w*|\bmid[- ]?range\b|\bbudget\b|\bpric\w*"
    r"|\bhundreds?\b|\breasonabl\w*|\bmoderate\b"
)
_WHICH_PLACE = re.compile(r"^Within (?P<n>[\d.]+) miles of the airport or of downtown\?")
_UNSURE = re.compile(r"\bi don'?t know\b|\bnot sure\b|\bno idea\b|\bdunno\b|\bflexible\b")


@dataclass(frozen=True)
class Reading:
    """What the conversation says, as of the guest's newest message."""

    draft: Draft = Draft()
    portland: bool = False
    searched: bool = False
    first_contact: bool = True
    said_before: str = ""  # what the assistant said just before the newest guest message
    heard: bool = False  # the newest guest message changed the criteria
    answered_now: bool = False  # the newest guest message gave or skipped an optional criterion
    text: str = ""  # the newest guest message, normalised
    restated: bool = False  # it named criteria, all already as the draft has them
    answered: frozenset[str] = frozenset()  # optional criteria given or skipped
    replaced: str = ""  # a budget limit the newest message overrode ("above your maximum")
    usual: UsualStay | None = None  # a returning guest's usual stay, from the prompt
    usual_answer: str = ""  # "taken" or "declined" once the guest answered it
    declined_now: bool = False  # the newest guest message declined it


def read(conversation: Conversation) -> Reading:
    """Replay the events: searches reset the draft, guest messages update it."""
    last = conversation.label("Criteria JSON")
    start = Draft.from_args(_json(last)) if last else Draft()
    today = conversation.today()
    reading = Reading(
        draft=start, portland=last is not None, searched=last is not None,
        usual=usual_of(conversation),
    )  # fmt: skip
    said = asked = ""
    for event in conversation.events():
        if event.kind == "said":
            said = event.text
        elif event.kind == "call" and event.tool == "capture_choices":
            reading = replace(reading, draft=Draft.from_args(event.args), searched=True)
        elif event.kind == "result" and event.tool == "capture_choices":
            said = event.text
        elif event.kind == "guest":
            asked = asked if event.later else said  # the parts of a message answer one question
            reading = _heard(reading, event, asked, today)
            said = ""
    return reading


def _heard(reading: Reading, event: Event, said: str, today: date) -> Reading:
    asks_about = about_a_hotel(event.text)
    text = _in_context(event.text, said)
    base, answer = _usual_answer(reading, event.text, said, asks_about is not None)
    draft = reading.draft if asks_about else base.heard(text, today)
    if answer == "" and OFFER_MARK in said and draft != reading.draft:
        answer = "declined"  # other criteria instead of a yes: the usual questions follow
    confirmed = _confirms_area(event.text, said, draft != reading.draft)
    answers = _answers(reading.draft, draft, text, said)
    return replace(
        reading,
        answered=reading.answered | answers,
        answered_now=bool(answers),
        restated=draft == reading.draft
        and not asks_about
        and Draft().heard(text, today) != Draft(),
        text=normalize(event.text),
        draft=draft,
        portland=reading.portland or confirmed or mentions_portland(event.text),
        first_contact=reading.first_contact and not said and not reading.searched,
        said_before=said,
        heard=draft != reading.draft,
        replaced=_replaced_limit(reading.draft, draft),
        usual_answer=answer,
        declined_now=answer == "declined" and reading.usual_answer != "declined",
    )


def _usual_answer(reading: Reading, said_now: str, said: str, question: bool) -> tuple[Draft, str]:
    """The draft to read the guest's message onto, and their answer to the usual stay.

    Taken ("yes" to the offer, or "same as last time" at any point), the usual room type and
    amenities go into the draft before the message is read, so "yes, but without the pool"
    drops the pool from them. Another room type is no yes.
    """
    usual, answer = reading.usual, reading.usual_answer
    if usual is None or answer or question:
        return reading.draft, answer
    offered = OFFER_MARK in said
    room = parse_room_type(said_now)
    if accepts(said_now, offered) and room in (None, usual.room_type):
        amenities = set(reading.draft.amenities) | set(usual.amenities)
        ordered = tuple(a for a in Amenity if a in amenities)
        return replace(reading.draft, room_type=usual.room_type, amenities=ordered), "taken"
    return reading.draft, "declined" if offered and declines(said_now) else ""


def _replaced_limit(before: Draft, after: Draft) -> str:
    """What a new budget limit overrode: a minimum above the maximum drops the maximum (and a
    maximum below the minimum the minimum), and the guest is told, so nothing changes silently."""
    low, high = before.budget_min, before.budget_max
    if high is not None and after.budget_min is not None and after.budget_min > high:
        return f"that is above your maximum of ${high:,.0f}, so I dropped the maximum"
    if low is not None and after.budget_max is not None and after.budget_max < low:
        return f"that is below your minimum of ${low:,.0f}, so I dropped the minimum"
    return ""


def asked(said: str) -> str | None:
    """The optional criterion the assistant just asked about, if any."""
    if _WHICH_PLACE.match(said):
        return "distance"
    asking = (*QUESTIONS, *_FOLLOW_UPS.items())  # a follow-up asks the same question again
    return next((key for key, question in asking if question in said), None)


def _in_context(text: str, said: str) -> str:
    """A short answer read as an answer to the question just asked.

    Alone, "200" could be a day or a count, "downtown" a remark and "no limit" a budget; as the
    answer to the budget, distance or another question they are a price, a place to be near, or
    a skip.
    """
    plain, question = normalize(text), asked(said)
    if question == "budget" and (amount := _BARE_AMOUNT.match(plain)):
        return f"${amount['n']}"
    if question not in (None, "budget") and _NO_LIMIT_ONLY.match(plain):
        return "no preference"
    place = _PLACE_ONLY.match(plain) if question == "distance" else None
    if place is not None:
        miles = _WHICH_PLACE.match(said)
        where = "the airport" if place["place"] in ("airport", "pdx") else place["place"]
        return f"within {miles['n']} miles of {where}" if miles else f"near {where}"
    return text


def _confirms_area(text: str, said: str, gave_criteria: bool) -> bool:
    """A yes to the area question, or a request for a room that names no other place.

    The assistant only serves Portland, so "I need a room in two weeks" is a yes, and asking
    the area question again would ignore what the guest just said. Criteria given instead of an
    answer ("July 1 to 6, max 200 a night") are a yes as well — the guest is planning a stay in
    the only area served — as they are after a decline, which says "just tell me your dates".
    """
    if AREA_QUESTION in said and is_affirmative(text):
        return True
    if names_another_place(text):
        return False
    return wants_a_room(text, gave_criteria) or (gave_criteria and not is_negative(text))


def about_a_hotel(text: str) -> str | None:
    """The hotel a question names ("does the Riverside Inn have a pool?").

    A question about a hotel is no search criterion, even when it names an amenity.
    """
    named = catalog.mentioned_hotels(text) if is_question(text) else []
    return named[0].name if named else None


def _answers(before: Draft, after: Draft, text: str, said: str) -> frozenset[str]:
    """The optional criteria this message gives, or skips when it answers their question."""
    given = {
        "budget": (before.budget_min, before.budget_max) != (after.budget_min, after.budget_max),
        "room": before.room_type != after.room_type,
        "amenities": before.amenities != after.amenities,
        "distance": (before.airport, before.downtown) != (after.airport, after.downtown),
    }
    found = {key for key, changed in given.items() if changed}
    question = asked(said)
    if question and not found and _SKIP.search(normalize(text)):
        found.add(question)
    if question and _SKIP_ALL.search(normalize(text)):
        found |= {key for key, _ in QUESTIONS}
    return frozenset(found)


def _json(text: str) -> dict[str, object] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def decide(conversation: Conversation) -> AIMessage:
    """The reply or tool call a careful assistant would make now."""
    result = conversation.tool_result()
    if result is not None:
        return say(relay(result))
    text = conversation.guest_text()
    reading = read(conversation)
    if wants_to_quit(text) and not _has_nothing_more(text, reading):
        return call("end_chat")
    if not reading.portland:
        return say(_area(text, reading))
    if RELAX_OFFER in reading.said_before and is_affirmative(text):
        return search(reading.draft.with_advice(reading.said_before))
    if wants_to_see_criteria(text):
        return say(recap(reading.draft))
    unusable = _needs_a_list(text, reading) or _impossible_dates(text, reading, conversation)
    if unusable is not None:
        return say(unusable)
    if _wants_change(text, reading):
        return say(recap(reading.draft, "What would you like to change?"))
    if not reading.draft.dates:
        return say(_greeted(reading, _ask_dates(text, reading)))
    if _wants_search(text, reading):
        return search(reading.draft)
    trouble = _date_trouble(reading, conversation.today())
    return say(_greeted(reading, trouble or _yes_alone(reading) or _next_question(reading)))


def _impossible_dates(text: str, reading: Reading, conversation: Conversation) -> str | None:
    """A day that does not exist ("Feb 30"), or a weekday that is not the date's: said, and the
    dates asked again, rather than the answer passed over as not understood."""
    impossible = date_trouble(text, conversation.today())
    if impossible is None:
        return None
    follow = "Which dates would you like instead?" if reading.draft.dates else DATES_QUESTION
    return f"{impossible}. {follow}"


def _next_question(reading: Reading, opening: str | None = None) -> str:
    """The next optional criterion not yet given nor skipped; then the summary.

    It opens with what the guest's message did (``opening`` overrides that), so nothing is
    acknowledged as noted that was not understood.
    """
    unclear = opening is None and not (reading.heard or reading.restated or reading.answered_now)
    miles = _MILES_ONLY.match(reading.text) if asked(reading.said_before) == "distance" else None
    if unclear and miles is not None:
        return f"Within {miles['n']} miles of the airport or of downtown?"
    if opening is None:
        declined = reading.declined_now and not reading.heard  # the usual stay: a plain no
        said = "No problem." if declined else _acknowledgement(reading)
        opening = f"{said} " if said else ""
    if not reading.searched:
        for key, question in QUESTIONS:
            if key == "room" and reading.usual is not None and not reading.usual_answer:
                question = offer(reading.usual)  # a returning guest: the usual stay, offered
            if key not in reading.answered:
                hint = f" {SEARCH_HINT}" if unclear and opening.startswith("Sorry") else ""
                return f"{opening}{question}{hint}"
    sorry = opening if unclear and opening.startswith("Sorry") else ""
    return (
        f"{sorry}Here is your search:\n{reading.draft.criteria().summary()}\n"
        f"Anything to change, or {SEARCH_OFFER}"
    )


_AMENITIES = ", ".join(list(Amenity)[:-1]) + f" and {list(Amenity)[-1]}"
_FOLLOW_UPS = {
    "budget": 'I need an amount to filter by price, for example "under $150" (or "no preference").',
    "room": 'Which one would you like: one bed, two beds or a suite? (or "skip")',
    "amenities": f'Which ones? I can look for {_AMENITIES}. (or "none")',
    "distance": 'How many miles, and from the airport or from downtown? For example "within 5 '
    'miles of downtown" (or "no preference").',
}


def _yes_alone(reading: Reading) -> str | None:
    """The follow-up to a bare yes ("sure", "yeah a few") to a criteria question, or None.

    "Any limit on the distance?" answered "sure" says there is one, not which: asking the
    question again word for word would sound as if nothing had been heard.
    """
    question = asked(reading.said_before)
    if question is None or reading.heard or reading.answered_now or reading.restated:
        return None
    if not is_affirmative(reading.text) or (
        _ACK.search(reading.text) and "sure" not in reading.text
    ):
        return None  # "ok", "thanks": an acknowledgement, answered with the question alone
    if miles := _WHICH_PLACE.match(reading.said_before):
        return f"Within {miles['n']} miles of the airport or of downtown? Say which one."
    return _FOLLOW_UPS[question]


_PARTY = re.compile(
    rf"\b(?P<n>\d|{'|'.join(NUMBER_WORDS)}) (?:of us|people|persons|adults|guests|kids|children)\b"
    rf"|\bfamily of (?P<f>\d|{'|'.join(NUMBER_WORDS)})\b|\b(?P<kids>kids|children|a baby)\b"
    r"|\b(?P<one>just me|only me|myself|solo|alone)\b|\b(?P<two>(?:my )?(?:wife|husband|partner"
    r"|girlfriend|boyfriend) and (?:i|me)|me and my (?:wife|husband|partner|girlfriend|boyfriend)"
    r"|a couple|the two of us|two of us)\b"
)
"""Who is coming, said instead of a room type: the assistant suggests one, but asks."""


def _party(text: str) -> str | None:
    """A suggestion for the party the guest describes ("a family of four"), or None."""
    found = list(_PARTY.finditer(text))
    if not found:
        return None
    counted = [to_int(m["n"] or m["f"]) for m in found if m["n"] or m["f"]]
    kids = any(m["kids"] for m in found)
    small = any(m["one"] or m["two"] for m in found) and not kids
    if small or (counted and sum(counted) <= 2 and not kids):
        return "One bed should do for one or two people."
    return "For more than two, two beds or a suite would fit."


SEARCH_HINT = 'Or say "search now" to see hotels with what I have so far.'


def _acknowledgement(reading: Reading) -> str:
    """What the newest message did: criteria heard, a question skipped, a hello, or nothing."""
    if reading.heard and reading.replaced:
        return f"Got it: {reading.draft.brief()} — {reading.replaced}."
    if reading.heard or reading.restated:
        return f"Got it: {reading.draft.brief()}."
    if SEARCH_OFFER in reading.said_before:
        return "Sorry, I didn't quite catch that."
    if reading.answered_now:
        return "Noted."
    if asked(reading.said_before) == "budget" and _PRICE_WORDS.search(reading.text):
        return 'I need an amount to filter by price, for example "under $150".'
    if _GREETING.search(reading.text):
        return "Hello!"
    if _ACK.search(reading.text):
        return ""  # "ok", "thanks": nothing to apologise for, the question stands
    if asked(reading.said_before) == "room" and (party := _party(reading.text)):
        return party
    if asked(reading.said_before) == "amenities":
        return f"Sorry, I didn't catch that. The amenities I can look for are {_AMENITIES}."
    return "Sorry, I didn't catch that."


def _needs_a_list(text: str, reading: Reading) -> str | None:
    """The reply to what only a list of hotels can answer: a question about a hotel, or a choice.

    Before any search there is no list, so the guest hears that and what comes next, instead of
    the next question as if the message had been understood.
    """
    hotel = about_a_hotel(text)
    if hotel is not None:
        follow = _next_question(reading, "") if reading.draft.dates else DATES_QUESTION
        return (
            f"I can tell you all about {hotel} once it is in your list of hotels — I search "
            f"with your dates and criteria first. {follow}"
        )
    later = _LATER_STAGE.search(normalize(text)) and not _SEARCH.search(normalize(text))
    if later and not reading.heard and not reading.searched:
        return _no_list_yet(reading)
    return None


def _no_list_yet(reading: Reading) -> str:
    """Booking or comparing before any search: there is no list yet, so say so and offer one."""
    opening = "I haven't searched yet, so there is no list of hotels to choose from."
    if not reading.draft.dates:
        return f"{opening} First I need your dates: {DATES_QUESTION}"
    offer = f'Say "search now" to see hotels for {reading.draft.brief()}'
    pending = _next_question(reading, "")
    if pending.startswith("Here is your search"):
        return f"{opening} {offer}."
    return f"{opening} {offer}, or answer my question first: {pending}"


def _date_trouble(reading: Reading, today: date) -> str | None:
    """Dates that no search would accept (in the past, too long).

    They are said at once, and again until they change, never answered with an offer to search.
    """
    problems = reading.draft.criteria().date_problems(today)
    if not problems:
        return None
    problem = _lower_first(problems[0].split("; ask")[0].split(". Check")[0])
    if reading.heard:
        return (
            f"Got it: {reading.draft.brief()}. But {problem}. Which dates would you like instead?"
        )
    return f"Those dates still don't work: {problem}. Which dates would you like instead?"


def search(draft: Draft) -> AIMessage:
    """Search with the whole draft, not only the latest change."""
    return call("capture_choices", **draft.args())


def _has_nothing_more(text: str, reading: Reading) -> bool:
    """Whether "that's all" answers a question of ours: it skips the rest, or means "search".

    It is no goodbye then.
    """
    said = normalize(text)
    if any(question in reading.said_before for _, question in QUESTIONS):
        return bool(_SKIP_ALL.search(said))
    return SEARCH_OFFER in reading.said_before and bool(_NOTHING_MORE.search(said))


def _greeted(reading: Reading, text: str) -> str:
    if not reading.first_contact:
        return text
    return f"{GREETING} Welcome back! {text}" if reading.usual else f"{GREETING} {text}"


def _noted(reading: Reading) -> str:
    return f"Noted: {reading.draft.brief()}. " if reading.heard else ""


def _area(text: str, reading: Reading) -> str:
    asked = AREA_QUESTION in reading.said_before
    if (asked and is_negative(text)) or names_another_place(text):
        return DECLINE
    if asked and not reading.heard and _GREETING.search(normalize(text)):
        return f"Hello! {AREA_QUESTION}"
    if asked and not reading.heard:
        return f"Sorry, I didn't catch that. I only book hotels around Portland. {AREA_QUESTION}"
    return _greeted(reading, f"{_noted(reading)}{AREA_QUESTION}")


def _ask_dates(text: str, reading: Reading) -> str:
    if reading.heard:
        return f"{_noted(reading)}{DATES_QUESTION}"
    if _GREETING.search(normalize(text)):
        return f"Hello! {DATES_QUESTION}"
    if _UNSURE.search(normalize(text)):
        return (
            "No problem. I need at least rough dates to check prices: when would you like to "
            f"arrive, and for how many nights? {DATES_EXAMPLE}"
        )
    if _SEARCH.search(normalize(text)):
        return f"I need your dates before I can search. {DATES_QUESTION} {DATES_EXAMPLE}"
    answered_area = AREA_QUESTION in reading.said_before and wants_a_room(text)
    if reading.first_contact or is_affirmative(text) or mentions_portland(text) or answered_area:
        return f"Great! {DATES_QUESTION}"
    return f"Sorry, I didn't catch any dates. {DATES_QUESTION} {DATES_EXAMPLE}"


def _wants_search(text: str, reading: Reading) -> bool:
    said = normalize(text)
    if _SEARCH.search(said):
        return True
    if reading.searched and reading.heard:
        return True
    if SEARCH_OFFER not in reading.said_before or reading.heard:
        return False
    answered = is_affirmative(text) or _NOTHING_MORE.search(said) or is_negative(text)
    return bool(answered or _UNSURE.search(said))


def _wants_change(text: str, reading: Reading) -> bool:
    """A wish to change ("change the dates", or "no" to a suggestion) that names no new value."""
    if reading.heard or _SEARCH.search(normalize(text)):
        return False
    declined = RELAX_OFFER in reading.said_before and is_negative(text)
    return declined or (reading.searched and wants_new_search(text))


def recap(draft: Draft, question: str | None = None) -> str:
    """The criteria so far, one per line, and the next question."""
    follow = f"Anything to change, or {SEARCH_OFFER}" if draft.dates else DATES_QUESTION
    return f"Here is what I have so far:\n{draft.criteria().summary()}\n{question or follow}"


def relay(result: Event) -> str:
    """Explain a tool's answer to the guest (the flow only stays here when there is a problem)."""
    text = result.text
    if text.startswith("No hotel matches"):
        if "changing just one" in text:
            return f"Sorry, {_lower_first(text)} Which criterion would you like to change?"
        return f"Sorry, {_lower_first(text)} {RELAX_OFFER}"
    if text == "ok":
        return f"Done. Anything else, or {SEARCH_OFFER}"
    problem = re.split(r";|\. ", text.lstrip("- ").removeprefix("Error: "), maxsplit=1)[0]
    if re.search(r"date|stay|night", problem):
        asks = "Which dates would you like instead?"
    else:
        asks = "What would you like to change?"
    return f"I can't search with that yet: {_lower_first(problem.rstrip('.'))}. {asks}"


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:]
