"""The offline model in PresentStep: page and sort the list, answer questions, book on a choice.

Only an explicit choice books ("book #8", "I'll take the Riverside", or a bare "3" answering the
list); a question is answered from the catalog and changes nothing; when it is unclear which
hotel the guest means, it asks.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date

from langchain_core.messages import AIMessage

from demo.hotel.formats import PAGE, PAGE_SIZE, SORTED_BY, read_page
from demo.hotel.offline.asking import (
    RESUME_BOOKING,
    is_choice,
    is_question,
    page_move,
    sort_request,
    topic_of,
)
from demo.hotel.offline.conversation import Conversation, Offer
from demo.hotel.offline.language import (
    is_affirmative,
    is_negative,
    parse_amenities,
    parse_budget,
    parse_dates,
    parse_distances,
    parse_room_type,
    wants_new_search,
    wants_to_compare,
    wants_to_quit,
    wants_to_see_criteria,
)
from demo.hotel.offline.reply import call, say
from demo.hotel.offline.selection import Selection, not_listed, select
from demo.reading import corrects_a_number, goes_back, way_back, withdrawn

BOOK_OFFER = "Shall I book {name} ({nights} night{s}, ${total:,.2f} in total)?"
"""The read-back a "yes" books: the hotel, and the nights and total of the stay (issue 35)."""
NOTHING_BOOKED = "No problem: I haven't booked anything. Take your time."
"""The answer to a choice taken back in the same message ("book 4. hmm no, hold on")."""

BOOK_OFFER_READ = re.compile(
    r"Shall I book (?P<name>.+?)(?: \(\d+ nights?, \$[\d,.]+ in total\))?\?"
)
"""Finds the hotel a read-back named (`BOOK_OFFER`)."""
_SHOW_LIST = re.compile(
    r"^(?:(?:please|ok|okay|can you|could you)\s+)*(?:show|see|give|display|repeat|list)\b"
    r"[^,.;]{0,20}\b(?:list|hotels|results|options|them|again)\b[?.! ]*$"
    r"|\b(?:see|show|view|display)\b[^,.;]{0,20}\b(?:the|that|this) (?:list|results)\b"
)
_DONE_COMPARING = re.compile(
    r"\b(?:done|finished|stop|enough|no more)\s+compar"
    r"|\b(?:exit|leave|close|quit)\s+(?:the\s+)?compar"
)
_BACK_TO_LIST = re.compile(
    r"\b(?:back|return|go back|take me back)\b[^,.;]{0,15}\b(?:list|results|hotels|options)\b"
    r"|^\W*(?:ok(?:ay)?\W+)?(?:let'?s )?go back\W*$"
)
_GENERIC_ONLY = re.compile(
    r"(?:\W*\b(?:the|a|an|and|or|&|hotels?|inns?|lodges?|suites?|motels?|guesthouses?)\b)+\W*"
)
"""Only words every hotel name could have: they name no hotel and ask for nothing."""
_SEARCH_VERBS = re.compile(
    r"\b(?:look(?:ing)? for|search(?:ing)? for|find|instead|rather|switch to|change to)\b"
)
_FOLLOW_UP = re.compile(r"\W*(?:and|what about|how about|same for|also)\b", re.IGNORECASE)
_TENTATIVE = re.compile(r"\b(?:maybe|how about|what about|perhaps)\b")
_IT = re.compile(r"\b(?:it|this one|that one)\b")
_SEARCH = re.compile(r"\bsearch\b|\blook again\b|\bstart over\b")
_PRICE_CUE = re.compile(
    r"\$|\bbudget\b|\bmax(?:imum)?\b|\bmin(?:imum)?\b|\bunder\b|\bbelow\b|\bprice\b|\bcap\b"
    r"|\blimit\b|\bnight\b|\bnite\b|\bdollars?\b|\bbucks\b|\bspend\b|\bpay\b|\bat (?:most|least)\b"
    r"|\bless than\b|\bup to\b|\bno more than\b"
)
"""Words that make a number a price ("budget 500"), never a hotel's number."""
_REQUEST = re.compile(
    r"\b(?:change|set|make|raise|lower|increase|reduce|bump|drop|remove|get rid of|forget|lift"
    r"|keep|let'?s say)\b"
)
"""Words that make a question a request ("can you change the max to 450?")."""
_WEIGHED = re.compile(r"\b(?:closer|nearer|cheaper|further|farther|more expensive|pricier)\b")
"""A comparative question between hotels ("which is closer, 3 or 5?") asks about those two."""
_FILLER = re.compile(
    r"\b(?:the|number|no|option|hotel|choice|one|please|pls|ok|okay|yes|yeah|i think|i guess"
    r"|that|it|is|it's|let's|lets|go|with|for|i|i'd|i'll|take|book|reserve|we|would"
    r"|will|me|us|can|could|you|just|then|so|sure|hmm|um|and|a|room|there|at|in|to|do|pick"
    r"|choose|select|that's|mine|thanks|thank)\b|[#.,!?;:'\-()]"
)
"""Words that may surround a bare pick ("number 3 please") without making it something else."""


def decide(conversation: Conversation) -> AIMessage:
    """Act on the guest's message; when there is nothing to act on, show the list."""
    result = conversation.tool_result()
    if (declined := _just_declined(conversation)) is not None:
        return say(declined_reply(declined["reason"], conversation.offers()))
    if result is not None:
        return say(f"{relay(result.text)} Which hotel do you mean? Give me its number or name.")
    text = conversation.guest_text()
    page, _ = read_page(conversation.label(PAGE))
    if conversation.opened() or not text.strip():
        return call("show_hotels", page=page)
    if wants_to_quit(text) and not is_question(text):
        return call("end_chat")
    if withdrawn(text):
        return say(f"{NOTHING_BOOKED} {_list_hint(conversation.offers())}")
    return _way_back(text, conversation, page) or _act(text, conversation, page)


def _way_back(text: str, conversation: Conversation, page: int) -> AIMessage | None:
    """Back to the criteria, with what is known kept (issue 35 item 4): "start over", "change
    my dates", a criterion said with a question ("under 200, and whats the cheapest?"), "I said
    250 not 200", a new day ("next friday instead"); "go back" is the page before, the list
    when the comparison handed it over, and the criteria from the first page."""
    if goes_back(text):
        if conversation.forwarded():
            return call("show_hotels", page=page)
        return call("show_hotels", page=page - 1) if page > 1 else call("search_again")
    if is_choice(text) and not way_back(text):
        return None
    if way_back(text) or corrects_a_number(text) or criteria_with_a_question(text, conversation):
        return call("search_again")
    if parse_dates(text, date.today()) is not None and not select_hotels(text, conversation):
        return call("search_again")  # "next friday instead" is a new stay, not the next page
    return None


def select_hotels(text: str, conversation: Conversation) -> bool:
    """Whether `text` names or numbers a hotel of the list."""
    offers = conversation.offers()
    return bool(select(text, offers, offers).hotels)


_CLAUSES = re.compile(
    r"\s+-+\s+|[,;.]\s*(?:and\s+|but\s+|also\s+)?|\s+(?:and|but|also)\s+(?=(?:so\s+)?(?:"
    r"what|whats|what's|which|how|where|is|are|does|do|can|any)\b)",
    re.I,
)


def criteria_with_a_question(text: str, conversation: Conversation) -> bool:
    """A criterion stated beside a question ("under 200 a night, and whats the cheapest?"): the
    criterion is kept (a new search) and the new list answers the question. A clause that picks
    a hotel ("the 3rd one looks good, does it have parking?") states no criterion."""
    clauses = [c for c in _CLAUSES.split(text) if c and c.strip()]
    if len(clauses) < 2 or not any(is_question(c) for c in clauses):
        return False
    stated = [c for c in clauses if not is_question(c) and not select_hotels(c, conversation)]
    return any(new_budget(c) or _states_criteria(c) for c in stated)


def _states_criteria(clause: str) -> bool:
    mentioned = (parse_dates(clause, date.today()), parse_room_type(clause))
    return any(v is not None for v in mentioned) or bool(
        parse_amenities(clause) or parse_distances(clause)
    )


def _act(text: str, conversation: Conversation, page: int) -> AIMessage:
    offers = conversation.offers()
    shown = shown_page(offers, page)
    listing = sort_request(text) or re.search(r"\bpage \d", text.lower())
    if listing and not wants_to_compare(text):
        return _list_move(text, page, len(offers)) or say(_list_hint(offers))
    unpicked = _no_pick(text, offers)
    if unpicked is not None:
        return unpicked
    near = "airport" if conversation.label(SORTED_BY) == "airport" else "downtown"
    picks = select(text, offers, shown, near=near)
    unlisted = not_listed(text, offers)
    if unlisted:
        return say(f"{unlisted} is not in this list. {_list_hint(offers)}")
    if picks.missing:
        return say(out_of_range(picks, offers))
    back = _BACK_TO_LIST.search(text.lower()) or RESUME_BOOKING.search(text.lower())
    if _DONE_COMPARING.search(text.lower()) or back:
        return call("show_hotels", page=page)
    if weighs(text, picks):
        topic = topic_of(without_names(text, list(picks.hotels)))
        return call("answer_question", hotels=[o.name for o in picks.hotels], topic=topic)
    if wants_to_compare(text) and not is_choice(text) and not conversation.forwarded():
        chosen = list(picks.hotels) or recent_picks(conversation, offers)
        if _IT.search(text.lower()):
            chosen = [o for o in focus(conversation, offers) if o not in chosen] + chosen
        return call("go_compare", hotels=[offer.name for offer in chosen])
    if wants_to_see_criteria(text):
        return call("search_again")
    move = _list_move(text, page, len(offers)) if not picks.hotels else None
    return move or _respond(text, conversation, offers, picks)


def _respond(
    text: str, conversation: Conversation, offers: Sequence[Offer], picks: Selection
) -> AIMessage:
    """A question, a choice, a change of search, or a pick to confirm."""
    if _SEARCH_VERBS.search(text.lower()) and not picks.hotels and changes_search(text):
        return call("search_again")
    if is_question(text) and not is_choice(text):
        return ask_about(text, picks, conversation, offers)
    if is_choice(text) and len(picks.hotels) == 1:
        return call("chosen_hotel", hotel=picks.hotels[0].name)
    if changes_search(text):
        return call("search_again")
    confirmed = _confirmed(text, conversation, offers)
    if confirmed is not None:
        return confirmed
    if is_choice(text) or _bare(text, picks):
        return book(list(picks.hotels) or focus(conversation, offers), conversation)
    if len(picks.hotels) == 1:
        return say(f"{book_offer(picks.hotels[0])} Or ask me about it.")
    if picks.hotels:
        return say(f"Would you like to compare {names(picks.hotels)}, or book one of them?")
    return say(f"Sorry, I didn't catch which hotel you mean. {_list_hint(offers)}")


def book_offer(offer: Offer) -> str:
    """The read-back for `offer`: what a "yes" to it books."""
    plural = "s" if offer.nights != 1 else ""
    return BOOK_OFFER.format(name=offer.name, nights=offer.nights, s=plural, total=offer.total)


def _no_pick(text: str, offers: Sequence[Offer]) -> AIMessage | None:
    """Messages whose words or numbers pick no hotel: only generic words ("the inn"), or a new
    budget ("budget 500" is a new search, not hotel number 500)."""
    if _GENERIC_ONLY.fullmatch(text.lower().strip()):
        return say(f"Which one do you mean? {_list_hint(offers)}")
    if new_budget(text):
        return call("search_again")
    return None


def new_budget(text: str) -> bool:
    """A new nightly budget, or none ("budget 500", "remove the budget limit"), said as a wish.

    A question about prices ("is number 4 under 200?") is answered instead.
    """
    said = text.lower()
    if parse_budget(text) is None or not _PRICE_CUE.search(said):
        return False
    return not is_question(text) or bool(_REQUEST.search(said))


def weighs(text: str, picks: Selection) -> bool:
    """A question that weighs two or more named hotels on one thing ("which is cheaper, 2 or
    4?"): answered about those hotels, not drawn as a table of the whole page."""
    said = text.lower()
    return (
        is_question(text)
        and len(picks.hotels) > 1
        and bool(_WEIGHED.search(said))
        and "compar" not in said
    )


def shown_page(offers: Sequence[Offer], page: int) -> list[Offer]:
    """The hotels of the page the guest sees (the prompt lists them in the order shown)."""
    return list(offers[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]) or list(offers[:PAGE_SIZE])


def out_of_range(picks: Selection, offers: Sequence[Offer]) -> str:
    """Say which numbers are not on the list, with its size, and offer the rest."""
    wrong = " or ".join(str(number) for number in picks.missing)
    size = f"{len(offers)} hotels (1 to {len(offers)})" if len(offers) > 1 else "only 1 hotel"
    head = f"There is no number {wrong}: the list has {size}."
    if len(picks.hotels) == 1:
        return f"{head} {book_offer(picks.hotels[0])}"
    if picks.hotels:
        return f"{head} Shall I go on with {names(picks.hotels)}?"
    return f"{head} Which one do you mean?"


def _list_move(text: str, page: int, count: int) -> AIMessage | None:
    order = sort_request(text)
    if order is not None:
        return call("show_hotels", page=1, sort_by=order)
    move = page_move(text)
    if move is None:
        return call("show_hotels", page=page) if _SHOW_LIST.search(text.lower()) else None
    pages = max(1, -(-count // PAGE_SIZE))
    if move == "next":
        if page >= pages:
            return say(f"That's all of them: the list has {count} hotels, all shown.")
        return call("show_hotels", page=page + 1)
    if move == "previous":
        return call("show_hotels", page=max(1, page - 1))
    return call("show_hotels", page=min(max(1, int(move)), pages))


def ask_about(
    text: str, picks: Selection, conversation: Conversation, offers: Sequence[Offer]
) -> AIMessage:
    """Answer from the catalog about the hotels asked about: named, "it", or the whole list."""
    hotels = list(picks.hotels)
    topic = topic_of(without_names(text, hotels))
    if not hotels and re.search(r"\b(?:it|its|it's|this one|that one|there)\b", text.lower()):
        hotels = focus(conversation, offers)
        if not hotels:
            return say("Which hotel do you mean? Give me its number or name.")
    if topic == "overview" and len(text.split()) <= 4 and (hotels or _FOLLOW_UP.match(text)):
        topic = _last_topic(conversation) or topic  # "and number 5?" asks the same again
        if topic == "overview" and len(hotels) == 1 and _TENTATIVE.search(text.lower()):
            return say(f"{book_offer(hotels[0])} Or ask me about it.")
    if not hotels and topic == "overview":
        return say(
            "I can tell you about any hotel of the list — its amenities, price, room types, "
            "distances or surroundings. Which one, and what would you like to know? "
            + _list_hint(offers)
        )
    return call("answer_question", hotels=[o.name for o in hotels], topic=topic)


def without_names(text: str, offers: Sequence[Offer]) -> str:
    """Hotel names hide topic words ("Tualatin Valley Conference Hotel" is no meeting room)."""
    for offer in offers:
        for word in offer.name.split():
            text = re.sub(rf"\b{re.escape(word)}\b", " ", text, flags=re.IGNORECASE)
    return text


def _last_topic(conversation: Conversation) -> str | None:
    for event in reversed(conversation.events()):
        if event.kind == "call" and event.tool == "answer_question":
            return str((event.args or {}).get("topic") or "") or None
    return None


def _confirmed(text: str, conversation: Conversation, offers: Sequence[Offer]) -> AIMessage | None:
    """A yes (or no) to "Shall I book X?"."""
    offer = BOOK_OFFER_READ.search(_said_before(conversation))
    if offer is None:
        return None
    if is_negative(text):
        return say(f"No problem. {_list_hint(offers)}")
    if is_affirmative(text) and not select(text, offers, offers).hotels:
        return call("chosen_hotel", hotel=offer["name"])
    return None


def _said_before(conversation: Conversation) -> str:
    events = conversation.events()
    for event in reversed(events[:-1]):
        if event.kind == "said":
            return event.text
        if event.kind in ("guest", "call"):
            return ""
    return ""


def _bare(text: str, picks: Selection) -> bool:
    """A pick with nothing else around it ("3", "number 3 please", "the Riverside Inn")."""
    if len(picks.hotels) != 1:
        return False
    rest = text.lower()
    hotel = picks.hotels[0]
    for word in re.findall(r"[a-z0-9']+", hotel.name.lower()):
        rest = re.sub(rf"\b{re.escape(word)}\w*", " ", rest)
    rest = re.sub(
        r"\d+|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last"
        r"|cheapest|closest|nearest|two|three|four|five|six|seven|eight|nine)\b",
        " ",
        rest,
    )
    return not _FILLER.sub(" ", rest).split()


def book(picks: Sequence[Offer], conversation: Conversation) -> AIMessage:
    """Book the one hotel picked; ask when it is none or several."""
    if len(picks) == 1:
        return call("chosen_hotel", hotel=picks[0].name)
    if picks:
        return say(f"Which one would you like to book: {names(picks, 'or')}?")
    return say(f"Which hotel would you like to book? {_list_hint(conversation.offers())}")


def focus(conversation: Conversation, offers: Sequence[Offer]) -> list[Offer]:
    """The one hotel the conversation is about: asked about or picked last ("book it")."""
    by_name = {offer.name: offer for offer in offers}
    for event in reversed(conversation.events()[:-1]):  # before the newest message
        if event.kind == "call" and event.tool in ("answer_question", "chosen_hotel"):
            hotels = (event.args or {}).get("hotels") or [(event.args or {}).get("hotel")]
            found = [by_name[name] for name in hotels if name in by_name]
            return found if len(found) == 1 else []
        if event.kind == "guest":
            picks = select(event.text, offers, offers).hotels
            if picks:
                return list(picks) if len(picks) == 1 else []
    return []


def recent_picks(conversation: Conversation, offers: Sequence[Offer]) -> list[Offer]:
    """The hotels the guest picked most recently ("compare them"), if any."""
    for event in reversed(conversation.events()):
        if event.kind == "guest" and (picks := select(event.text, offers, offers).hotels):
            return list(picks)
    return []


def changes_search(text: str) -> bool:
    """The message changes or reviews the criteria rather than choosing from the list."""
    if wants_new_search(text) or wants_to_see_criteria(text) or _SEARCH.search(text.lower()):
        return True
    mentioned = (parse_dates(text, date.today()), parse_budget(text), parse_room_type(text))
    return any(value is not None for value in mentioned) or bool(
        parse_amenities(text) or parse_distances(text)
    )


def _list_hint(offers: Sequence[Offer]) -> str:
    return (
        f"The list has {len(offers)} hotels, numbered 1 to {len(offers)}: tell me a number or a "
        'name, or say "show the list".'
    )


_DECLINED = re.compile(
    r"Declined(?: by [^:]+)?: a person did not approve this call of \w+, and it was not run\."
    r"(?: Reason: (?P<reason>.*?))?\s*Tell the user",
    re.DOTALL,
)
"""picoflow's result of a call an operator rejected, with the operator's note (K1)."""


def _just_declined(conversation: Conversation) -> re.Match[str] | None:
    """An operator's rejection not yet told, past what the guest wrote while it waited."""
    for message in reversed(conversation.messages):
        if message.type == "human":
            continue
        return _DECLINED.match(str(message.text)) if message.type == "tool" else None
    return None


def declined_reply(reason: str | None, offers: Sequence[Offer]) -> str:
    """A rejected booking in the guest's words, with the operator's note (issue 35 item 6)."""
    why = f": {reason.strip().rstrip('.')}" if reason and reason.strip() else ""
    return (
        f"I'm sorry, our team could not approve that booking{why}. Nothing was booked. "
        f"Would you like another hotel? {_list_hint(offers)}"
    )


def relay(result: str) -> str:
    """Explain a tool's refusal (a hotel that is not in the list) in the guest's terms."""
    unknown = re.match(r"^(.*?) is not one of the hotels", result)
    if unknown:
        return f"Sorry, I can't find {unknown.group(1)} in the list."
    return f"Sorry, that didn't work: {result.split('. ')[0].rstrip('.')}."


def names(offers: Sequence[Offer], last: str = "and") -> str:
    """Hotels with their numbers, as "2. Riverside Inn and 4. Columbia Slough Lodge"."""
    listed = [f"{offer.number}. {offer.name}" for offer in offers]
    return listed[0] if len(listed) == 1 else ", ".join(listed[:-1]) + f" {last} " + listed[-1]
