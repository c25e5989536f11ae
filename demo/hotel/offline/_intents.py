"""Understanding what the guest wants to do: pick from a list, compare, book, search again, stop.

The intent helpers are deliberately simple keyword tests: the offline demo model asks them in the
order that fits the current step (e.g. quitting before booking), so each only has to recognise its
own intent, not rule out every other one.
"""

from __future__ import annotations

import re

from demo.hotel import catalog
from demo.hotel.offline._criteria import AMENITY_PATTERNS
from demo.hotel.offline._text import NUMBER_WORDS, ORDINAL_WORDS, negated, normalize, to_int

# --- selection ----------------------------------------------------------------------------------

_ITEM = r"(?:\s+(?:one|hotel|option|choice)s?)?"
_ALL = re.compile(r"(?<!that's )(?<!that is )\b(?:all(?: of them)?|every(?: one|thing)?|each)\b")
"""Everything: "all of them", "every one" — but not "that's all"."""

_BOTH = re.compile(r"\bboth\b")

_FIRST_OR_LAST_N = re.compile(
    rf"\b(?P<end>first|top|last|bottom)\s+(?P<n>\d+|{'|'.join(NUMBER_WORDS)})\b(?!\s*nights?)"
)
"""Counted from an end: "the first two", "top 3", "the last two"."""

_LAST = re.compile(rf"\b(?:the\s+)?(?:last|final|most expensive|priciest){_ITEM}\b")
_CHEAPEST = re.compile(rf"\b(?:the\s+)?(?:cheapest|least expensive|lowest price){_ITEM}\b")

_ONE_ITEM = re.compile(
    rf"(?P<ordinal>\b(?:{'|'.join(ORDINAL_WORDS)}|\d+(?:st|nd|rd|th))\b){_ITEM}"
    rf"|#\s*(?P<hash>\d+)"
    rf"|\b(?:number|no\.?|option|hotel|choice)\s+(?P<numbered>\d+|{'|'.join(NUMBER_WORDS)})\b"
    rf"|\b(?P<from>\d+)\s*(?:-|to|through|thru)\s*(?P<to>\d+)\b"
    rf"|(?<![\w$.,/])(?P<bare>\d+)\b(?![.,/]\d|\s*(?:nights?|miles?|mi\b|beds?|dollars|bucks|%))"
    rf"|(?<!the )(?<!this )(?<!that )(?<!which )\b(?P<word>{'|'.join(NUMBER_WORDS)})\b"
)
"""One pick: "the second one", "#3", "number 2", "1-3", a bare "2", "one and three"."""


def _blank(text: str, match: re.Match[str]) -> str:
    """Blank out a match so later patterns do not read it again ("first two" is not "two")."""
    return text[: match.start()] + " " * (match.end() - match.start()) + text[match.end() :]


def _picks_of(match: re.Match[str]) -> list[int]:
    if match.group("ordinal"):
        word = match.group("ordinal")
        return [ORDINAL_WORDS.get(word) or int(re.sub(r"\D", "", word))]
    if match.group("from"):
        return list(range(int(match.group("from")), int(match.group("to")) + 1))
    token = next(g for g in (match.group(n) for n in ("hash", "numbered", "bare", "word")) if g)
    return [to_int(token)]


def _ends(text: str, count: int) -> tuple[str, list[tuple[int, list[int]]]]:
    """Picks counted from either end of the list; returns the text with them blanked."""
    picks = []
    for pattern, pick in ((_FIRST_OR_LAST_N, None), (_LAST, [count]), (_CHEAPEST, [1])):
        for match in pattern.finditer(text):
            if pick is None:
                n = to_int(match.group("n"))
                first = match.group("end") in ("first", "top")
                found = list(range(1, n + 1)) if first else list(range(count - n + 1, count + 1))
            else:
                found = pick
            picks.append((match.start(), found))
            text = _blank(text, match)
    return text, picks


def parse_selection(text: str, count: int) -> list[int] | None:
    """1-based picks from a presented list of ``count`` items, in the order the guest said them.

    None when nothing is picked or a pick is outside 1..count (so the caller can ask again).
    """
    text = normalize(text)
    if _ALL.search(text):
        return list(range(1, count + 1))
    if _BOTH.search(text):
        return [1, 2] if count == 2 else None
    text, picks = _ends(text, count)
    picks.extend((m.start(), _picks_of(m)) for m in _ONE_ITEM.finditer(text))
    chosen = list(dict.fromkeys(i for _, found in sorted(picks) for i in found))
    if not chosen or any(not 1 <= i <= count for i in chosen):
        return None
    return chosen


# --- comparison feature -------------------------------------------------------------------------

_FEATURE_PATTERNS = {
    "price": r"\bpric\w*|\bcost\w*|\bcheap\w*|\bexpensive\b|\brates?\b|\btotal\b|\bhow much\b"
    r"|\bafford\w*|\bmoney\b|\bbudget\b",
    "amenities": r"\bamenit\w*|\bfeatures?\b|\bfacilit\w*|\bperks\b|\bservices\b",
    "room_types": r"\broom ?types?\b|\brooms?\b(?! service)|\bsuites?\b|\bbeds?\b|\bbedrooms?\b",
    "distance": r"\bdistances?\b|\blocat\w*|\bfar\b|\bclose\w*\b|\bnear\w*|\bmiles?\b|\bwhere\b"
    r"|\bairport\b(?! shuttle)|\bdowntown\b|\bproximity\b",
}
"""Guest wording of each comparison feature (amenity names also mean "amenities")."""


def parse_feature(text: str) -> str | None:
    """The feature to compare on — "price", "amenities", "room_types" or "distance" — or None.

    When several are mentioned, the first one wins (the comparison shows one feature at a time).
    """
    text = normalize(text)
    patterns = [(feature, re.compile(p)) for feature, p in _FEATURE_PATTERNS.items()]
    patterns += [("amenities", pattern) for pattern in AMENITY_PATTERNS.values()]
    found = [(m.start(), feature) for feature, p in patterns if (m := p.search(text))]
    return min(found)[1] if found else None


# --- intents ------------------------------------------------------------------------------------

_QUIT = re.compile(
    r"\b(?:bye|goodbye|good bye|bye bye|farewell|see you|see ya)\b"
    r"|\b(?:end|close|stop|quit|exit|leave) (?:the |this )?(?:chat|conversation|session)\b"
    r"|^\W*(?:(?:ok|okay|please|just|then|i want to|i'd like to|let'?s|i|i'll|i will)\W+)*"
    r"(?:quit|exit|stop|leave|end it|forget it|never ?mind|cancel everything|that'?s all"
    r"|i'?m (?:all )?done|we'?re done|no more questions)"
    r"(?:\W+(?:now|please|here|then|thanks|thank you|for now|for today|it|this))*\W*$"
)
"""Leaving: a goodbye anywhere, or a message that is only "quit", "stop", "I'm done"... —
"stop showing me lodges" or "I want to stop at the hotel near the airport" is no goodbye."""
_BOOK = re.compile(
    r"\b(?:book|reserve|reservation)\b|\bi'?ll take\b|\bi will take\b|\bgo(?:ing)? with\b"
    r"|\blet'?s do\b|\bsign me up\b|\bconfirm\b"
)
_COMPARE = re.compile(
    r"\bcompar\w*|\bside[- ]by[- ]side\b|\bvs\.?(?!\w)|\bversus\b|\bdifferences? between\b"
    r"|\bwhich (?:one )?is (?:better|cheaper|closer|nicer)\b|\bhow do they (?:compare|differ)\b"
)
_NEW_SEARCH = re.compile(
    r"\bsearch(?:ing)? again\b|\bre-?search\b|\bnew search\b|\bstart over\b|\bchange\b"
    r"|\bmake it\b|\binstead\b|\bdifferent (?:dates|hotels?|budget|area|room)\b|\btry again\b"
    r"|\bother (?:hotels|options)\b|\bmodify\b|\bupdate\b|\badjust\b|\blook again\b"
)
_SHOW_CRITERIA = re.compile(
    r"\bso far\b|\brecap\b|\bremind me\b|\bsummar(?:y|ize|ise)\b"
    r"|\b(?:show|list|tell|see|view|review|what)\b.{0,25}\b(?:criteria|preferences|choices"
    r"|filters|requirements)\b|\bwhat (?:did|have) i (?:ask|asked|say|said|told|chose|chosen)\b"
)
_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|ya|sure|ok|okay|of course|absolutely|definitely|certainly|correct"
    r"|right|exactly|please|go ahead|sounds good|looks good|perfect|great|fine|alright"
    r"|all right|do it|let'?s do it|let'?s go|that works|why not)\b"
    r"|\b(?:yes|yeah|yep|sounds good|go ahead|that works|let'?s do it)\b"
)
_NO = re.compile(
    r"^(?:no|nope|nah|not really|not now|not yet|negative|don'?t|do not|cancel)\b"
    r"|\b(?:no thanks?|not really|rather not|i don'?t think so)\b"
)
_PORTLAND_AREA = re.compile(
    r"\bportland\b(?!,?\s+(?:maine|me)\b)|\bpdx\b|\boregon\b|\brose city\b|\bbeaverton\b"
    r"|\bhillsboro\b|\btigard\b|\blake oswego\b|\bgresham\b|\bhappy valley\b|\bmilwaukie\b"
    r"|\btualatin\b|\btroutdale\b|\bclackamas\b|\bwilsonville\b|\bsherwood\b|\bwest linn\b"
    r"|\bfairview\b|\bvancouver\b(?!,?\s+(?:bc|b\.c\.|british columbia|canada)\b)"
)
"""Portland, Oregon and its suburbs (not Portland, Maine nor Vancouver, BC)."""


_STAY = re.compile(
    r"\b(?:rooms?|hotels?|motels?|suites?|inns?|lodging|accommodations?|a bed|a stay|to stay"
    r"|reservations?|a booking"
    r"|(?:a |some)(?:place|where) to (?:stay|sleep|crash))\b"
)
"""What the assistant sells: a room, a hotel, a place to stay."""
_WISH = re.compile(
    r"\b(?:need|needs|want|wanna|looking|look for|like|book|booking|reserve|find|get|after"
    r"|searching|search for|require|help me|can you|could you|is there|are there|any|please"
    r"|available|availability|do you have)\b"
)
"""Words that make a mention of a room a request for one ("I need", "looking for")."""
_ELSEWHERE = re.compile(
    r"\b(?:in|visiting|(?:going|coming|travell?ing|flying|driving|trip|heading) to)\s+"
    r"(?:downtown\s+)?"
    r"(?P<place>[A-Z][A-Za-z]+(?:\s+[A-Z][a-z]+)?)"
)
"""A capitalised place the guest stays in or goes to ("in Seattle", "flying to Boise"), checked
against the area's names; not after "near" or "at", where a landmark or employer is likely
("near Intel", "at OHSU")."""
_NOT_PLACES = re.compile(
    r"^(?:i|the|a|an|my|our|june|july|august|september|october|november|december|january"
    r"|february|march|april|may|monday|tuesday|wednesday|thursday|friday|saturday|sunday|next"
    r"|this|downtown|town|two|three|four|five|one|please|pdx|christmas|easter|thanksgiving"
    # Portland's own parts, which are no other city
    r"|pearl|hawthorne|alberta|goose hollow|lloyd|sellwood|st\.? johns|kenton|nob hill|old town"
    r"|chinatown|mississippi|division|belmont|irvington|buckman|laurelhurst|multnomah|orenco"
    r"|north|south|east|west|northwest|southwest|northeast|southeast|nw|ne|sw|se|n|washington"
    r"|columbia|willamette|cascade|silicon forest|gorge|mount hood|mt\.? hood|convention center"
    r"|moda center|providence park|airport)\b",
    re.IGNORECASE,
)
"""Capitalised words after "in"/"near" that are dates, Portland's neighbourhoods or landmarks."""
_OTHER_CITIES = re.compile(
    r"\b(?:seattle|san francisco|los angeles|new york|nyc|chicago|boston|las vegas|tacoma"
    r"|spokane|boise|sacramento|san diego|vancouver,? (?:bc|b\.c\.|british columbia|canada)"
    r"|portland,? maine|denver|miami|atlanta|dallas|houston|phoenix|orlando|honolulu"
    r"|salt lake city|minneapolis|detroit|philadelphia|new orleans|nashville|toronto|montreal"
    r"|mexico city|london|paris|lisbon|madrid|barcelona|rome|berlin|amsterdam|dublin|tokyo"
    r"|[a-z]+,? (?:texas|california|florida|colorado|arizona|nevada))\b"
)
"""Cities outside the area that guests name often, caught in lower case too (not names of
people such as Austin or Eugene: those only count after "in", capitalised)."""
_PORTLAND_MAINE = re.compile(r"\b(?i:portland),?\s+ME\b")
"""Maine's code only in capitals: "portland, me + my wife" is the guest, not the state."""
_COMING_FROM = re.compile(r"\b(?:from|leaving|out of)\s+$")
"""A place the guest comes from is no place they want a room in ("flying in from Seattle")."""


def wants_a_room(text: str, with_criteria: bool = False) -> bool:
    """A request for a room, hotel or stay: "I need a room next week", "looking for a hotel".

    It answers "are you looking for a hotel in the Portland area?" with yes when it names no
    other place (see ``names_another_place``): the assistant only serves Portland. A message
    that also gives criteria (``with_criteria``) needs no wish word: "a hotel for next weekend".
    """
    said = normalize(text)
    stay = _STAY.search(said)
    if stay is None or negated(said, stay.start(), stay.end()) or _NO.match(said):
        return False
    return with_criteria or bool(_WISH.search(said))


def names_another_place(text: str) -> bool:
    """Whether the guest names a place outside the area ("in Seattle", "Portland, Maine")."""
    said = normalize(text)
    if any(not _COMING_FROM.search(said[: m.start()]) for m in _OTHER_CITIES.finditer(said)):
        return True
    maine = _PORTLAND_MAINE.finditer(text)
    if any(not _COMING_FROM.search(text[: m.start()].lower()) for m in maine):
        return True
    for found in _ELSEWHERE.finditer(text):
        place = found["place"]
        if _NOT_PLACES.match(place) or mentions_portland(place):
            continue
        if not catalog.mentioned_hotels(place):  # "at Riverside Inn" is one of ours
            return True
    return False


def wants_to_quit(text: str) -> bool:
    """The guest wants to stop: "bye", "quit", "I'm done", "never mind", "that's all"."""
    return bool(_QUIT.search(normalize(text)))


def wants_to_book(text: str) -> bool:
    """Booking: "book it", "reserve", "I'll take", "go with" — not "don't book yet"."""
    text = normalize(text)
    return any(not negated(text, m.start(), m.end()) for m in _BOOK.finditer(text))


def wants_to_compare(text: str) -> bool:
    """Comparing: "compare", "side by side", "X vs Y", "which is better"."""
    return bool(_COMPARE.search(normalize(text)))


def wants_new_search(text: str) -> bool:
    """Re-searching: "search again", "change the dates", "make it a suite", "... instead"."""
    return bool(_NEW_SEARCH.search(normalize(text)))


def wants_to_see_criteria(text: str) -> bool:
    """Recap request: "what do you have so far", "show my criteria", "what did I ask for"."""
    return bool(_SHOW_CRITERIA.search(normalize(text)))


def is_affirmative(text: str) -> bool:
    """A yes: "yes", "sure", "sounds good" (but not "not sure", "no")."""
    text = normalize(text)
    return bool(_YES.search(text)) and not _NO.search(text)


def is_negative(text: str) -> bool:
    """A no: "no", "nope", "not now", "no thanks"."""
    return bool(_NO.search(normalize(text)))


def mentions_portland(text: str) -> bool:
    """Whether the guest names Portland, Oregon or a place around it."""
    return bool(_PORTLAND_AREA.search(normalize(text)))
