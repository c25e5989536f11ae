"""How DecisionHotelFlow's offline models read a guest: the five criteria and the intents.

`read(text, today)` says what one message says about each criterion, and only what it says:
``None`` for a criterion it does not mention, so the router can tell a new value from no value,
and a collector never fills in what the guest did not say. Corrections are the reading kit's
(`demo.reading`): the message is read part by part in the order said and a later part wins
("under 200, no wait, 250" is 250); a message that ends by taking its choice back ("one bed...
hmm, hold on") is `withdrawn`, and no model commits anything on it.

The readers of dates, budgets and room types are HotelFlow's offline ones (``demo.hotel``'s);
amenities are read onto PicoFlow's 23 names here, and distances need a number of miles: "near
the airport" is `vague`, and a collector asks how far rather than guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from rapidfuzz.distance import OSA

from demo.decision_hotel.amenities import AmenitySaid, read_amenities
from demo.hotel.offline._criteria import parse_budget, parse_room_type
from demo.hotel.offline._dates import date_trouble, parse_dates, says_how_long, strip_dates
from demo.hotel.offline._intents import wants_to_quit, wants_to_see_criteria
from demo.hotel.offline._text import NUMBER_WORDS, normalize
from demo.hotel.types import DateRange
from demo.reading import corrections

_RANGE_WORD = re.compile(
    r"\bto\b|\d\s*-\s*\d|\bthrough\b|\bthru\b|\buntil\b|\btill?\b|\bbetween\b|\bcheck(?:ing)?"
    r"[ -]?out\b|\bleav\w*|\bdepart\w*|\bback\b|\bweekend\b"
)
_CHECKOUT = re.compile(
    r"\bcheck(?:ing)?[ -]?out\b|\bleav(?:e|ing)\b|\bdepart(?:ing)?\b|\buntil\b|\btill?\b"
)
_YEAR = re.compile(r"\b(?:19|20)\d{2}\b")
RECENT_DAYS = 60
MAX_ROLLED_NIGHTS = 14
_CHECKIN = re.compile(r"\bcheck(?:ing)?[ -]?in\b|\barriv\w*")
_DOUBLE = re.compile(r"\bdouble\b(?![ -]check)")
_TWO = re.compile(r"\b(?:two|2)\b")
_OTHER_ROOM = re.compile(
    r"\b(?:studio|penthouse|bunk\w*|loft|cabin|dorm|(?:three|four|3|4)\s+(?:beds?|bedrooms?)"
    r"|family room|apartment)\b"
)
_BUDGET_NONE = re.compile(
    r"\b(?:no|any|without a)\s+(?:budget|price|limit|max(?:imum)?|min(?:imum)?|cap|preference)\b"
    r"|\b(?:budget|price|cost|money)\b.*\b(?:doesn'?t|does not|don'?t) matter\b"
    r"|\bdon'?t (?:care|mind)\b|\bdoesn'?t matter\b|\bwhatever (?:works|goes|is fine)\b"
    r"|^\W*(?:none|nope|no)\W*$"
)
"""An explicit no budget; "no idea", "not sure" or "whatever's reasonable" are no such thing
(they are unclear, and asked about: a guess would search without a limit nobody gave)."""
_MILES = r"(?P<n>-?\s?\d+(?:\.\d+)?|" + "|".join(NUMBER_WORDS) + r"|half a|a)"
_AIRPORT = re.compile(r"\bairport\b(?!\s+shuttle)|\bpdx\b")
_CITY = re.compile(
    r"\bcity\s*cent(?:er|re)\b|\bdowntown\b|\bcent(?:er|re) of (?:town|the city|portland)\b"
    r"|\bthe city\b|\bcity\b"
)
_NUMBER_MILES = re.compile(rf"{_MILES}\s*(?:mi\b|miles?|mile\b)")
_BARE_NUMBER = re.compile(r"(?<![\w.$])(?P<n>-?\d+(?:\.\d+)?)(?![\w.])")
_NEAR = re.compile(r"\b(?:near|close|walking distance|walkable|nearby|next to|by the)\b")
_DISTANCE_NONE = re.compile(
    r"\b(?:doesn'?t|does not|don'?t) matter\b|\bno (?:preference|limit|limits)\b|\bdon'?t care\b"
    r"|\banywhere\b|\bany distance\b|\bnot important\b|\bwhatever (?:works|goes|is fine)\b"
    r"|^\W*(?:none|no|nope)\W*$|\bno (?:distance|location) (?:preference|limit)s?\b"
)
_DISTANCE_WORD = re.compile(r"\b(?:distance|location|how far|miles)\b")
_BOTH = re.compile(r"\bboth\b|\beach\b|\beither\b")
_SEARCH = re.compile(r"^\W*search\W*$", re.IGNORECASE)
"""The literal request "search": PicoFlow's only way to search (any case, any punctuation)."""
_REVIEW = re.compile(
    r"^\W*review\b|\b(?:show|see|list|read|recap|summar\w+)\b.*\b(?:criteria|preferences|"
    r"choices|selections|details|so far)\b|\bwhat\s+(?:have|did)\s+(?:i|we)\b|\bso far\b"
    r"|\bsummary\b",
    re.IGNORECASE,
)
_EXIT = re.compile(
    r"\b(?:cancel|quit|exit|goodbye|bye|end (?:the|this) (?:chat|conversation)|i'?m done"
    r"|forget it|no thanks|not interested|stop)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"^\W*(?:hi|hello|hey|good (?:morning|afternoon|evening)|ok(?:ay)?|sure|yes|yeah|yep|thanks?"
    r"|thank you|continue|go on|next|great|cool|alright|fine)\W*(?:there|again)?\W*$",
    re.IGNORECASE,
)
_HOTEL_WORDS = re.compile(
    r"\b(?:hotels?|rooms?|stay|book\w*|portland|hilton|night|nights|criteria|trip|reserv\w*)\b",
    re.IGNORECASE,
)
_OFF_TOPIC = re.compile(
    r"\b(?:weather|joke|flights?|car rental|rent a car|restaurant recommendations?|sports|news"
    r"|stock|recipe|movie|poem)\b",
    re.IGNORECASE,
)
_OTHER_CITY = re.compile(
    r"\b(?:seattle|new york|nyc|san francisco|los angeles|chicago|boston|denver|london|paris"
    r"|vancouver bc|las vegas|miami|eugene|bend|salem|spokane|tacoma)\b",
    re.IGNORECASE,
)
"""Other cities: this flow searches Portland only."""
_MONTHS = (
    "january", "february", "march", "april", "june", "july", "august", "september", "october",
    "november", "december",
)  # fmt: skip
_LONG_WORD = re.compile(r"[a-z]{5,}", re.IGNORECASE)
_BUDGET_CUE = re.compile(
    r"\$|\b(?:budget|price|night|nightly|dollars?|bucks|usd|spend|pay|rate|cost|cheap\w*"
    r"|max(?:imum)?|min(?:imum)?|under|below|over|above|at least|at most|up to|no more than"
    r"|less than|more than|limit|tops|around|about|between)\b",
    re.IGNORECASE,
)
"""Words that make numbers a price: "20 to 23" alone is days, not a $20-$23 budget."""


@dataclass
class Said:
    """What one message says about the criteria; None for a criterion it does not mention."""

    text: str = ""
    start: date | None = None
    end: date | None = None
    dates_named: bool = False  # a day was named (even if only one end, or an impossible one)
    date_trouble: str | None = None
    several_ranges: bool = False
    budget: dict[str, float | None] | None = None  # the ends it names ({} never)
    room_type: str | None = None
    room_unclear: bool = False  # "a double", "a studio": asked, never guessed
    amenities: AmenitySaid | None = None  # None: it says nothing about amenities
    distance: dict[str, float | None] | None = None  # the places it names
    distance_vague: bool = False  # "near the airport": no number of miles
    withdrawn: bool = False
    amenity_words: list[str] = field(default_factory=list)  # asked for, not in the vocabulary

    def mentions(self) -> list[str]:
        """The criterion fields this message gives a value for, in collection order."""
        found = []
        if self.start is not None and self.end is not None:
            found.append("dates")
        checks = (
            ("budget", self.budget is not None),
            ("room_type", self.room_type is not None),
            ("amenities", self.amenities is not None),
            ("distance", self.distance is not None),
        )
        return found + [name for name, given in checks if given]

    def touches(self) -> list[str]:
        """The fields it is about at all, with or without a usable value."""
        touched = set(self.mentions())
        if self.dates_named or self.date_trouble:
            touched.add("dates")
        if self.room_unclear:
            touched.add("room_type")
        if self.amenity_words:
            touched.add("amenities")
        if self.distance_vague:
            touched.add("distance")
        order = ("dates", "budget", "room_type", "amenities", "distance")
        return [name for name in order if name in touched]

    def budget_after(self, before: dict[str, Any] | None) -> dict[str, Any]:
        """The budget once this message applies: an end it does not name is kept."""
        kept = {"min": None, "max": None, **(before or {})}
        return {"min": kept["min"], "max": kept["max"], **(self.budget or {})}

    def distance_after(self, before: dict[str, Any] | None) -> dict[str, Any]:
        """The distance limits once this message applies: a place it does not name is kept."""
        kept = {"airport": None, "cityCenter": None, **(before or {})}
        return {
            "airport": kept["airport"],
            "cityCenter": kept["cityCenter"],
            **(self.distance or {}),
        }


def read(text: str, today: date) -> Said:
    """What `text` says about the criteria, corrections applied, as of `today`."""
    text = spelled_months(text)
    said = Said(text=text)
    pieces = corrections.expand([text])
    if corrections.withdrawn(text):
        said.withdrawn = True
        return said
    for piece in pieces:
        _read_piece(said, piece, today)
    return said


def _read_piece(said: Said, piece: str, today: date) -> None:
    part = read_one(piece, today)
    for name in ("budget", "distance", "room_type"):
        if getattr(part, name) is not None:
            setattr(said, name, getattr(part, name))
    if part.amenities is not None:
        earlier = said.amenities.applied_to(None) if said.amenities else None
        said.amenities = _amenities_over(part.amenities, earlier)
    if part.dates_named or part.date_trouble:
        said.start, said.end, said.dates_named = part.start, part.end, True
        said.date_trouble, said.several_ranges = part.date_trouble, part.several_ranges
    if part.room_type is not None or part.room_unclear:
        said.room_unclear = part.room_unclear
    said.amenity_words += part.amenity_words
    if part.distance is not None or part.distance_vague:
        said.distance_vague = part.distance_vague


def read_one(text: str, today: date) -> Said:
    """One part of a message, no correction inside it."""
    said = Said(text=text)
    _read_dates(said, text, today)
    budget = parse_budget(text) if _BUDGET_CUE.search(strip_dates(text)) else None
    if budget is not None:
        ends = _ends(budget.minimum, budget.maximum, text)
        said.budget = {k: _signed(v, text) for k, v in ends.items()}
    asked = without_inquiries(text)  # "do they have parking?" asks; it requires nothing
    _read_room(said, asked)
    amenities = read_amenities(asked)
    said.amenities = amenities if amenities.says_something() else None
    said.amenity_words = amenities.unknown
    _read_distance(said, text)
    return said


_INQUIRY = re.compile(
    r"(?:^|(?<=[.!?,;\-–—]))\s*(?:(?:and|but|also|oh|so)\s+)?"
    r"(?:do|does|did|is|are|was|were|will|would|have|has|any)\b[^.!?]*\?",
    re.IGNORECASE,
)


def without_inquiries(text: str) -> str:
    """`text` without its questions about what a hotel has ("is breakfast included?"), which
    name an amenity or a room without asking for it; "can I get a suite?" is a request, kept."""
    return _INQUIRY.sub(" ", text)


def _amenities_over(later: AmenitySaid, earlier: list[str] | None) -> AmenitySaid:
    """A corrected part over the part before it: "wifi, no wait, parking" is parking."""
    if earlier is None or not (later.adds or later.wanted is None):
        return later
    return AmenitySaid(wanted=later.applied_to(earlier), unknown=later.unknown)


def _read_dates(said: Said, text: str, today: date) -> None:
    yesterday = (today - timedelta(days=1)).isoformat()
    text = re.sub(r"\byesterday\b", yesterday, text, flags=re.IGNORECASE)  # named, to be refused
    trouble = date_trouble(text, today)
    if trouble:
        said.date_trouble, said.dates_named = trouble, True
        return
    ranges = parse_dates(text, today)
    if not ranges:
        return
    said.dates_named = True
    if len(ranges) > 1:
        said.several_ranges = True
        return
    stay = _unrolled(_this_year_if_just_passed(ranges[0], text, today), text)
    lone = (stay.end - stay.start).days == 1 and not says_how_long(text)
    lowered = normalize(text)
    if lone and _CHECKOUT.search(lowered) and not _CHECKIN.search(lowered):
        said.end = stay.start  # "leaving on the 14th": the checkout only
    elif lone and not _RANGE_WORD.search(lowered):
        said.start = stay.start  # one day named: the check-in, the checkout still to ask
    else:
        said.start, said.end = stay.start, stay.end


def _this_year_if_just_passed(stay: DateRange, text: str, today: date) -> DateRange:
    """Days without a year that passed weeks ago are this year's, not next year's.

    "Dec 1 to dec 4" said on December 7 most likely means the days just gone (a mistake the
    check-in rule then names), not a stay a year away; a guess either way would commit a stay
    nobody asked for. Days further back ("jan 5" in December) are next year's, as HotelFlow's
    reader has them.
    """
    if _YEAR.search(text) or stay.start.year <= today.year:
        return stay
    try:
        start, end = (day.replace(year=day.year - 1) for day in (stay.start, stay.end))
    except ValueError:  # February 29
        return stay
    if not timedelta(0) <= today - start <= timedelta(days=RECENT_DAYS):
        return stay
    return DateRange.model_construct(start=start, end=end)


def _unrolled(stay: DateRange, text: str) -> DateRange:
    """A checkout day before the check-in's, said without a month, kept in that month.

    HotelFlow's reader moves it to the next month ("the 28th to the 3rd"); that is the reading
    only for a short stay. "In on the 22nd, out the 19th" is a slip, not a four-week stay: it
    is kept as said, and the capture tool's check names it.
    """
    if stay.end.month == stay.start.month or (stay.end - stay.start).days <= MAX_ROLLED_NIGHTS:
        return stay
    months = re.findall(rf"\b(?:{'|'.join(m[:3] for m in _MONTHS)}|may)[a-z]*\b", normalize(text))
    if len(months) >= 2 or stay.end.day >= stay.start.day:
        return stay  # the checkout's own month was said, or it is later in its month anyway
    try:
        end = stay.end.replace(year=stay.start.year, month=stay.start.month)
    except ValueError:
        return stay
    return DateRange.model_construct(start=stay.start, end=end)


def _ends(low: float | None, high: float | None, text: str) -> dict[str, float | None]:
    """The ends of a budget a message names: both for a range or "no budget"."""
    if low is None and high is None:
        return {"min": None, "max": None}
    lowered = normalize(text)
    ends: dict[str, float | None] = {}
    if low is not None or re.search(r"\bno min(?:imum)?\b", lowered):
        ends["min"] = low
    if high is not None or re.search(r"\bno max(?:imum)?\b|\bno (?:upper )?limit\b", lowered):
        ends["max"] = high
    return ends


def _signed(value: float | None, text: str) -> float | None:
    """`value` negative when the guest wrote it so ("-50", "minus 50"): a reader that drops the
    sign would save a budget nobody gave; the capture tool refuses a negative one."""
    if value is None:
        return None
    number = re.escape(f"{value:g}")
    for found in re.finditer(rf"(?:-|\bminus)\s*\$?\s*{number}(?![\d.])", normalize(text)):
        before = found.string[: found.start()].rstrip().rstrip("$").rstrip()
        if not before or not before[-1].isdigit():
            return -value
    return value


def _read_room(said: Said, text: str) -> None:
    lowered = normalize(text)
    if _DOUBLE.search(lowered) and not _TWO.search(lowered):
        said.room_unclear = True  # "a double": one double bed, or two? asked
        return
    said.room_type = parse_room_type(text)
    if said.room_type is None and _OTHER_ROOM.search(lowered):
        said.room_unclear = True


def _miles(token: str) -> float:
    if token in ("a", "half a"):
        return 1.0 if token == "a" else 0.5
    if token in NUMBER_WORDS:
        return float(NUMBER_WORDS[token])
    return float(token.replace(" ", ""))


def _read_distance(said: Said, text: str) -> None:
    lowered = normalize(text)
    if not (_AIRPORT.search(lowered) or _CITY.search(lowered)):
        if _DISTANCE_WORD.search(lowered) and _DISTANCE_NONE.search(lowered):
            said.distance = {"airport": None, "cityCenter": None}  # "distance doesn't matter"
        return
    limits: dict[str, float | None] = {}
    for clause in re.split(r"[,;]|\band\b|\bbut\b|\bplus\b", lowered):
        places = [p for p, pattern in (("airport", _AIRPORT), ("cityCenter", _CITY))
                  if pattern.search(clause)]  # fmt: skip
        if not places:
            continue
        number = _NUMBER_MILES.search(clause) or _bare_miles(clause, lowered)
        if number is not None:
            limits.update({place: _miles(number["n"]) for place in places})
        elif _DISTANCE_NONE.search(clause) or re.search(r"\bno limit\b|\bany\b", clause):
            limits.update({place: None for place in places})
        elif _NEAR.search(clause):
            said.distance_vague = True
    if limits:
        said.distance = limits


def _bare_miles(clause: str, whole: str) -> re.Match[str] | None:
    """A number without "miles" in a clause that names a place, when the message says miles."""
    if not re.search(r"\bmi\b|\bmiles?\b", whole):
        return None
    return _BARE_NUMBER.search(clause)


def bare_budget(text: str) -> dict[str, float | None] | None:
    """A lone amount or range answering "what is your budget?" ("200", "100-200"): a lone
    amount is the most the guest will pay."""
    said = normalize(text)
    span = re.fullmatch(r"\W*(?P<low>\d+(?:\.\d+)?)\s*(?:-|to)\s*(?P<high>\d+(?:\.\d+)?)\W*", said)
    if span is not None:
        low, high = float(span["low"]), float(span["high"])
        return {"min": min(low, high), "max": max(low, high)}
    found = re.fullmatch(
        r"\W*(?:about|around|roughly|maybe|max|up to)?\s*\$?(?P<n>\d+(?:\.\d+)?)"
        r"\s*(?:dollars|bucks|usd)?(?:\s*(?:a|per|/)\s*night)?\W*",
        said,
    )
    return {"min": None, "max": float(found["n"])} if found else None


def no_budget(text: str) -> bool:
    """An answer to the budget question that there is none ("no preference", "don't care")."""
    return _BUDGET_NONE.search(normalize(text)) is not None


def bare_miles(text: str) -> float | None:
    """A lone distance ("5 miles", "10") answering the distance question, place unnamed."""
    found = re.fullmatch(
        rf"\W*(?:within|under|less than|at most|max|up to)?\s*{_MILES}\s*(?:mi|miles?)?\W*",
        normalize(text),
    )
    return _miles(found["n"]) if found else None


def both_places(text: str) -> bool:
    """Whether a lone distance is meant for both places ("5 miles from both")."""
    return _BOTH.search(normalize(text)) is not None


def no_distance(text: str) -> bool:
    """An answer to the distance question that it does not matter."""
    return _DISTANCE_NONE.search(normalize(text)) is not None


def wants_search(text: str) -> bool:
    """The literal request "search" ("Search.", " search "); "find me hotels" is not one: the
    router shows the criteria and asks for "search" (never an automatic search)."""
    return _SEARCH.match(text) is not None


def wants_review(text: str) -> bool:
    """An explicit request to see the saved criteria ("review", "what do I have so far")."""
    return bool(_REVIEW.search(text) or wants_to_see_criteria(text))


def wants_exit(text: str) -> bool:
    """An explicit wish to stop ("bye", "cancel", "never mind", "that's all")."""
    return bool(_EXIT.search(normalize(text)) or wants_to_quit(text))


def is_small_talk(text: str) -> bool:
    """A greeting or an acknowledgement: nothing to route but the next question."""
    return _GREETING.match(text.strip()) is not None


def off_topic(text: str) -> bool:
    """Outside a Portland hotel search: another city, the weather, a joke, a flight."""
    if _OTHER_CITY.search(text) and not re.search(r"\bportland\b", text, re.IGNORECASE):
        return True
    return _OFF_TOPIC.search(text) is not None and not _HOTEL_WORDS.search(
        re.sub(r"\b(?:portland|hilton)\b", "", text, flags=re.IGNORECASE)
    )


def spelled_months(text: str) -> str:
    """`text` with a month misspelt by a letter or two written right ("decmber" is december)."""

    def right(found: re.Match[str]) -> str:
        word = found.group(0).lower()
        if word in _MONTHS:
            return found.group(0)
        near = [m for m in _MONTHS if m[:2] == word[:2] and OSA.distance(word, m) <= 2]
        return near[0] if len(near) == 1 else found.group(0)

    return _LONG_WORD.sub(right, text)


def nights_after(start: date, text: str) -> date | None:
    """The checkout a stay's length gives once the check-in is known ("3 nights")."""
    nights = re.search(rf"\b(?P<n>\d+|{'|'.join(NUMBER_WORDS)})\s+nights?\b", normalize(text))
    if nights is None:
        return None
    count = nights["n"]
    return start + timedelta(days=int(count) if count.isdigit() else NUMBER_WORDS[count])
