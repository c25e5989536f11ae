"""Questions, choices and list moves: what a guest's sentence about listed hotels wants.

A question is answered and never acted on; only an explicit choice books. These tests read the
sentence's form (a question mark, a question word, a request to book) — the hotels it names are
``selection``'s business.
"""

from __future__ import annotations

import re

from demo.hotel.offline._criteria import AMENITY_PATTERNS
from demo.hotel.offline._text import negated, normalize

_BOOKING_REQUEST = re.compile(
    r"^(?:ok(?:ay)?,?\s+|so,?\s+|then,?\s+|great,?\s+)?(?:can|could|would|will|may)\s+"
    r"(?:i|you|u|we)\s+(?:please\s+)?(?:book|reserve|get|have|take)\b(?![^?]*\blater\b)"
)
"""A request phrased as a question: "can you book number 3?" is a choice."""

_QUESTION_START = re.compile(
    r"^(?:(?:and|so|ok|okay|hmm|also|but|btw|well|wait|hey|hi|um|oh),?\s+)*(?:what|what's|whats|which|where"
    r"|where's|how|how's|who|why|when|does|do|did|is|isn't|are|aren't|has|have|can|could|would"
    r"|will|should|any|anything|tell me|i wonder|is there|are there|info|details|describe"
    r"|explain|more about|more info)\b"
)
_ABOUT = re.compile(
    r"\b(?:tell me (?:more )?about|more (?:info|details) (?:on|about)|what about)\b"
)
_ADVICE = re.compile(r"\bshould (?:i|we)\b|\bworth (?:it|booking)\b|\bwould you (?:recommend|pick)")

_CHOICE = re.compile(
    r"\b(?:book|reserve|reservation)\b|\bi'?ll take\b|\bi will take\b|\bwe'?ll take\b"
    r"|\b(?:go|going|let'?s go|i'?ll go|we'?ll go) (?:with|for)\b|\blet'?s do\b|\bsign me up\b"
    r"|\bconfirm\b|\bi (?:choose|pick|select)\b|\bi'll have\b"
    r"|\b(?:i want|i'd like|i would like)\b(?!\s+to\s+(?!book|reserve|stay|take|go\b))"
    r"|\bwe (?:choose|pick|want|'d like|would like)\b|\bi'?m going with\b|\bmy (?:choice|pick)\b"
    r"|\bgive me\b|\bput me (?:in|at|down for)\b|\bsecure\b|\block (?:it|in)\b|\bgrab\b"
    r"|\bgo ahead\b(?!\s+and\s+(?:search|look|find|show|compare|sort))|\b(?:let'?s )?do it\b"
)
"""Words that make a pick a choice to book ("I'll take the second one", "book #8")."""

_NOT_NOW = re.compile(
    r"\b(?:don'?t|do not|not|never|no need to|won'?t|hold off|wait before)\b[^,.;]{0,20}"
    r"\b(?:book|reserve|take)\b|\bbefore (?:i|we) book|\bbefore booking\b|\bnot (?:yet|ready)\b"
    r"|\blater\b|\btake (?:some|my|a little|more|a bit of) time\b|\bno way\b|\bif (?:i|we) book"
)

RESUME_BOOKING = re.compile(
    r"\b(?:resume|continue(?: with)?|get back to|carry on with|go on with)\s+(?:the\s+|my\s+)?"
    r"book(?:ing)?\b"
)
"""Back to the list to book: "resume booking" is the tool's name, and guests say it too."""

_PAGES = (
    ("next", re.compile(r"\b(?:more|next|others|other ones|rest|remaining|further|after that)\b"
                        r"|\bkeep going\b|\bcontinue\b(?!\s+(?:with\s+)?(?:the\s+|my\s+)?book)"
                        r"|\bscroll\b")),
    ("previous", re.compile(r"\b(?:previous|prev|earlier|before that|back a page|last page"
                            r"|page back|go back|first page|the start)\b")),
)  # fmt: skip
_PAGE_NUMBER = re.compile(r"\bpage\s+(\d+)\b")
_SORT_WORD = re.compile(
    r"\b(?:sort|order|rank|arrange|list them|show them|sorted|ordered)\b|\bfirst\s*$"
    r"|\b(?:closest|nearest|cheapest)\s+(?:first|ones)\b|\bby (?:price|distance)\b"
)
_SORT_KEYS = (
    ("airport", re.compile(r"\bairport\b|\bpdx\b")),
    ("downtown", re.compile(r"\bdowntown\b|\bcity cent|\bcenter\b|\bdistance\b|\bclose|\bnear")),
    ("price", re.compile(r"\bpric|\bcheap|\bcost|\brate|\btotal|\bexpensive")),
)

_TOPICS = (
    ("price", re.compile(r"\bhow much\b|\bpric\w*|\bcost\w*|\brates?\b|\bper night\b|\btotal\b"
                         r"|\bexpensive\b|\bcheap\w*|\bafford\w*|\bnightly\b"
                         r"|\b(?:under|below|over|above)\s+\$?\d|\$\s?\d")),
    ("distance", re.compile(r"\bhow far\b|\bdistance\b|\bmiles?\b|\bclose\b|\bnear (?:the )?"
                            r"(?:airport|downtown|pdx|city)|\b(?:clos|near|farth|furth)(?:er|est)\b"
                            r"|\bfrom (?:the )?(?:airport|downtown"
                            r"|pdx)|\bto (?:the )?(?:airport|downtown|pdx)\b|\bwhere is\b"
                            r"|\bwhere's\b|\blocated\b|\blocation\b|\bdrive\b|\bcommute\b")),
    ("room_types", re.compile(r"\broom ?types?\b|\bkinds? of rooms?\b|\bsuites?\b|\bbeds?\b"
                              r"|\brooms? (?:do|does|are)\b|\bwhat rooms\b|\bking\b|\bqueens?\b")),
    ("amenities", re.compile(r"\bamenit\w*|\bfacilit\w*|\bfeatures\b|\bperks\b|\boffers?\b"
                             r"|\bwhat (?:does|do) (?:it|they) have\b|\bincluded\b")),
    ("overview", re.compile(r"\bnear(?:by)?\b|\baround\b|\barea\b|\bneighbou?rhood\b"
                            r"|\bwhat'?s it like\b|\bdescribe\b|\babout\b|\bwalk\w*")),
)  # fmt: skip


_DO_IT = re.compile(
    r"(?:(?:ok(?:ay)?|yes|yeah|sure|just|please|then)\W+)*do it\W*(?:please|then)?\W*"
)
""""Do it" starts like a question ("do they have a pool?") but says go ahead."""


def is_question(text: str) -> bool:
    """A question (not a booking request phrased as one, like "can you book #3?")."""
    said = normalize(text)
    if not said or _BOOKING_REQUEST.search(said) or _DO_IT.fullmatch(said):
        return False
    return said.endswith("?") or bool(
        _QUESTION_START.search(said) or _ABOUT.search(said) or _ADVICE.search(said)
    )


def wants_advice(text: str) -> bool:
    """Advice asked for ("should I book it?", "is it worth it?"): a question, never a choice."""
    return bool(_ADVICE.search(normalize(text)))


def is_choice(text: str) -> bool:
    """The guest explicitly chooses to book ("book #8", "I'll take it"), not "don't book yet"."""
    said = normalize(text)
    if _NOT_NOW.search(said) or wants_advice(said) or is_question(said):
        return False
    return any(not negated(said, m.start(), m.end()) for m in _CHOICE.finditer(said))


def topic_of(text: str) -> str:
    """What a question asks about: one amenity, a feature, or "overview"."""
    said = normalize(text)
    amenities = [str(a) for a, pattern in AMENITY_PATTERNS.items() if pattern.search(said)]
    found = [(m.start(), topic) for topic, pattern in _TOPICS if (m := pattern.search(said))]
    if len(amenities) == 1:
        return amenities[0]
    if amenities:
        return "amenities"
    return min(found)[1] if found else "overview"


def page_move(text: str) -> str | None:
    """The guest's move in the list: "next", "previous", or a page number ("page 2")."""
    said = normalize(text)
    number = _PAGE_NUMBER.search(said)
    if number:
        return number.group(1)
    if len(said.split()) > 8:
        return None
    for move, pattern in _PAGES:
        if pattern.search(said):
            return move
    return None


def sort_request(text: str) -> str | None:
    """The order asked for ("price", "airport" or "downtown"), if the guest asks for one."""
    said = normalize(text)
    if not _SORT_WORD.search(said):
        return None
    return next((key for key, pattern in _SORT_KEYS if pattern.search(said)), None)
