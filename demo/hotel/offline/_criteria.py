"""Understanding budget, room type, amenities and distance limits in a guest's sentence.

Each parser returns None when the sentence says nothing about its subject, so the caller can tell
"not mentioned" from "mentioned": ``parse_budget`` returns ``Budget(None, None)`` for "no limit".
"""

from __future__ import annotations

import re
from typing import NamedTuple

from rapidfuzz.distance import OSA

from demo.hotel.offline._dates import strip_dates
from demo.hotel.offline._text import NUMBER_WORDS, negated, normalize, to_int
from demo.hotel.types import NEAR_AIRPORT_MILES, NEAR_DOWNTOWN_MILES, Amenity, RoomType

WALKING_MILES = 1.0
"""What "walking distance" means."""

MIN_BARE_AMOUNT = 20
"""A number without "$" below this is not a nightly price (it is a day, a count, a distance...)."""


class Budget(NamedTuple):
    """Per-night budget in USD; ``Budget(None, None)`` means the guest said there is no limit."""

    minimum: float | None
    maximum: float | None


class DistanceLimits(NamedTuple):
    """Maximum miles to PDX airport and to downtown Portland; None where not mentioned."""

    airport_max: float | None
    downtown_max: float | None


# --- budget -------------------------------------------------------------------------------------

_AMOUNT = (
    r"(?<![\w/.])\$?\s?(?P<{name}>\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.\d{{1,2}})?"
    r"(?!\s*(?:mi\b|miles?|nights?|beds?|stars?|people|guests|adults|rooms?|%)|/\d|\.\d|\w)"
)
"""Template of a money amount ("$1,200", "150"), not followed by a unit that makes it a count."""


def _amount(name: str) -> str:
    return _AMOUNT.format(name=name)


_NO_LIMIT = re.compile(
    r"\b(?:no|any|unlimited|whatever)\s+(?:budget|limit|price limit|max(?:imum)?)\b"
    r"|\b(?:budget|price|cost|money)\s+(?:is no object|doesn'?t matter|does not matter)\b"
    r"|\bdon'?t care (?:about|what) (?:the )?(?:price|cost|it costs)\b"
    r"|\b(?:drop|remove|forget(?: about)?|scrap|ditch|lose|clear|lift|get rid of|take off"
    r"|take away)\s+(?:the\s+|a\s+|my\s+|any\s+|that\s+|this\s+)?(?:\$?\d[\d,]*\s+)?"
    r"(?:budget|price|max(?:imum)?|cap|limit|ceiling)(?:\s+(?:limit|cap|price))?\b"
)
"""The guest explicitly has no budget."""

_RANGES = (
    re.compile(rf"\bbetween\s+{_amount('low')}\s+and\s+{_amount('high')}"),  # between 150 and 250
    re.compile(rf"{_amount('low')}\s*(?:-|to)\s*{_amount('high')}"),  # $150-$250, 150 to 250
)

_MAXIMUM = re.compile(
    r"\b(?:max(?:imum)?|under|below|(?<!no )(?<!not )less than|up to|no more than|at most|"
    r"not more than|cheaper than|tops|cap(?:ped)? at|budget(?: is| of| to)?|spend|pay"
    r"|(?:price\s+)?(?:limit|cap|ceiling))\s*(?:price\s+|budget\s+|rate\s+)?"
    r"(?:of\s+|is\s+|to\s+|at\s+)?" + _amount("n")
)
"""An upper limit: "max 700", "under $300 a night", "my budget is 200"."""

_MINIMUM = re.compile(
    r"\b(?:at least|min(?:imum)?|over|above|(?<!no )(?<!not )more than|no less than|"
    r"not less than|starting at|from)\s*"
    r"(?:of\s+)?" + _amount("n")
)
"""A lower limit: "at least 100", "over $150"."""

_BARE_PRICES = (
    re.compile(_amount("n") + r"\s*(?:dollars|bucks|usd)?\s*(?:a|per|/|each)\s*night"),
    re.compile(
        _amount("n")
        + r"\s*(?:dollars|bucks|usd)?\s*(?:max(?:imum)?|tops|at most|or (?:less|under))\b"
    ),
    re.compile(_amount("n") + r"\s*(?:dollars|bucks|usd)\b"),
    re.compile(r"(?<![\w/.])\$\s?(?P<n>\d{1,3}(?:,\d{3})+|\d+)"),
)
"""A price with no limit word ("$200", "150 a night"), read as the most the guest will pay."""


_TENS = {
    "ten": 10, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
_UNITS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
          "eight": 8, "nine": 9}  # fmt: skip
_HUNDREDS = re.compile(
    rf"\b(?P<h>{'|'.join(_UNITS)})\s+hundred(?:\s+(?:and\s+)?(?P<t>{'|'.join(_TENS)}))?\b"
)
"""A price in words: "two hundred", "a hundred and fifty" (guests rarely spell out more)."""

_LOOSE_N = (
    r"\d{2,}(?!\d|\s*(?:days?|weeks?|months?|minutes?|mins?|hours?|hrs?|blocks?|km|mi\b|miles?"
    r"|nights?|people|guests|adults|stars?|%))"
)
"""An amount after "around": two digits or more, and no unit that makes it a count."""
_ABOUT = re.compile(
    r"\b(?:(?:somewhere|something)\s+)?(?:around|about|roughly|approximately|approx\.?|like"
    r"|in the (?:region|range|ballpark) of|ballpark)\s+\$?(?=_N)|~\s*\$?(?=_N)".replace(
        "_N", _LOOSE_N
    )
)
_ABOUT_AFTER = re.compile(
    r"(?<![\w.$])\$?(?P<n>\d{2,})\s*(?:-?ish\b|\s+or so\b|,?\s+give or take\b)"
)
"""Loose amounts: "around 200", "~150", "200ish", "150 or so"."""


_NOT_MORE = re.compile(
    r"(?:\bnot|n't|\bnever)\s+(?:want to\s+|like to\s+)?(?:spend|pay|go)\s+"
    r"(?:more than|over|above|beyond)\s+"
)
"""A ceiling said with a negation: "I'd rather not spend more than 200" (not "at least 200")."""


def _plain_amounts(text: str) -> str:
    """Spell-out and loose amounts become a plain "$N", read like any price.

    "Around 200" is where the guest aims, so it is read as the most they want to pay (as "about
    $200 a night" always was): the draft shows "up to $200 a night", which the guest can correct.
    The "$" keeps the number a price even without "a night"; a small number, or one with a unit
    ("about 10 days", "about 5 miles"), is left alone.
    """
    text = _HUNDREDS.sub(
        lambda m: str(_UNITS[m["h"]] * 100 + (_TENS[m["t"]] if m["t"] else 0)), text
    )
    text = _NOT_MORE.sub(" under ", text)
    text = _ABOUT_AFTER.sub(lambda m: f"${m['n']}", text)
    return _ABOUT.sub("$", text)


def _number(match: re.Match[str], group: str) -> float | None:
    """The amount in ``group``; None when it is too small to be a price and has no "$"."""
    value = float(match.group(group).replace(",", ""))
    before = match.string[max(0, match.start(group) - 2) : match.start(group)]
    if value < MIN_BARE_AMOUNT and "$" not in before:
        return None
    return value


def _range_budget(text: str) -> Budget | None:
    for pattern in _RANGES:
        for match in pattern.finditer(text):
            low, high = _number(match, "low"), _number(match, "high")
            if low is not None and high is not None:
                return Budget(min(low, high), max(low, high))
    return None


def _limit(patterns: tuple[re.Pattern[str], ...], text: str) -> float | None:
    for pattern in patterns:
        for match in pattern.finditer(text):
            value = _number(match, "n")
            if value is not None:
                return value
    return None


def parse_budget(text: str) -> Budget | None:
    """The per-night budget in ``text``; ``Budget(None, None)`` for "no limit"; None if absent."""
    text = _plain_amounts(strip_dates(normalize(text)))
    if _NO_LIMIT.search(text):
        return Budget(None, None)
    span = _range_budget(text)
    if span is not None:
        return span
    low, high = _limit((_MINIMUM,), text), _limit((_MAXIMUM,), text)
    if low is None and high is None:
        high = _limit(_BARE_PRICES, text)
    if low is None and high is None:
        return None
    return Budget(low, high)


# --- room type ----------------------------------------------------------------------------------

_ROOM_PATTERNS: tuple[tuple[RoomType, re.Pattern[str]], ...] = (
    (RoomType.SUITE, re.compile(r"\bsuites?\b")),
    (RoomType.TWO_BEDS, re.compile(
        r"\b(?:two|2)\s+(?:(?:queen|king|double|full|twin|separate)\s+)?(?:beds?|queens?|kings?|"
        r"doubles?|twins|singles)\b|\bdoubles?\b(?![ -]check)|\btwin beds\b"
    )),
    (RoomType.ONE_BED, re.compile(
        r"\b(?:one|1|a|single)\s+(?:(?:queen|king|double)(?:[- ]size)?\s+)?(?:bed|king|queen)\b"
        r"|\bsingle\b(?!\s+(?:nights?|days?|stay))|\bking(?:[- ]size)?(?: bed)?\b"
        r"|\bqueen(?:[- ]size)? bed\b"
    )),
)  # fmt: skip
"""Checked in order, so "a king suite" is a suite and "two queens" is not one bed."""


def parse_room_type(text: str) -> RoomType | None:
    """The room type the guest asks for ("a king", "two queens", "suite"), or None."""
    text = normalize(text)
    for room_type, pattern in _ROOM_PATTERNS:
        if any(not negated(text, m.start(), m.end()) for m in pattern.finditer(text)):
            return room_type
    return None


# --- amenities ----------------------------------------------------------------------------------

AMENITY_PATTERNS: dict[Amenity, re.Pattern[str]] = {
    amenity: re.compile(pattern) for amenity, pattern in {
        Amenity.WIFI: r"\bwi-?fi\b|\bwireless\b|\binternet\b",
        Amenity.FREE_PARKING: r"\bparking\b|\bpark (?:my|the|our) (?:car|truck|van)\b|\bgarage\b",
        Amenity.POOL: r"\bpools?\b|\bswim(?:ming)?\b",
        Amenity.FITNESS_CENTER: r"\bgym\b|\bfitness\b|\bwork ?out\b|\bexercise\b",
        Amenity.PET_FRIENDLY: r"\bpets?\b|\bpet[- ]friendly\b|\bdogs?\b|\bcats?\b|\bpupp",
        Amenity.BREAKFAST_INCLUDED: r"\bbreakfast\b",
        Amenity.RESTAURANT: r"\brestaurants?\b|\bdining\b",
        Amenity.BAR: r"\bbar\b|\bcocktails?\b|\blounge\b",
        Amenity.SPA: r"\bspa\b|\bmassages?\b",
        Amenity.AIRPORT_SHUTTLE: r"\bshuttle\b|\bairport (?:transfer|ride)s?\b",
        Amenity.EV_CHARGING: r"\bev\b|\belectric (?:car|vehicle)\b|\btesla\b|\bcharg(?:er|ing)\b",
        Amenity.BUSINESS_CENTER: r"\bbusiness cent(?:er|re)\b|\bprint(?:er|ing)\b",
        Amenity.LAUNDRY: r"\blaundry\b|\bwash(?:er|ing machine)\b|\bdryer\b",
        Amenity.KITCHENETTE: r"\bkitchen(?:ette)?s?\b|\bcook\b|\bmicrowave\b",
        Amenity.ROOM_SERVICE: r"\broom service\b",
        Amenity.HOT_TUB: r"\bhot ?tubs?\b|\bjacuzzis?\b|\bwhirlpools?\b",
        Amenity.ACCESSIBLE_ROOMS: r"\baccessib\w*|\bwheelchair\b|\bada\b|\bmobility\b",
        Amenity.MEETING_ROOMS: r"\bmeeting rooms?\b|\bconference\b|\bevent space\b",
        Amenity.FRONT_DESK_24H: r"\b24[- ]?(?:hours?|hr|/7)\b|\baround the clock\b|\blate arrival",
        Amenity.BIKE_RENTAL: r"\bbikes?\b|\bbicycles?\b|\bcycling\b",
    }.items()
}  # fmt: skip
"""Guest wording for each amenity of the closed vocabulary."""

_CLAUSE_BREAK = re.compile(r"[,;.!?]|\bbut\b|\band\b|\balso\b|\bplus\b")
"""Negation reaches only to the end of its clause: "no pool, but a gym" wants a gym."""


_SPELLED = (
    "parking", "breakfast", "restaurant", "shuttle", "laundry", "kitchenette", "jacuzzi",
    "wheelchair", "accessible", "fitness", "swimming", "internet", "wireless", "microwave",
    "whirlpool", "bicycle",
)  # fmt: skip
"""Amenity words read with one typo ("parkng", "breakfest"), as hotel names are: words of five
letters or more that no common word is one letter away from ("massage" is not here: "message";
nor "charging": "changing")."""
_WORD = re.compile(r"[a-z]{5,}")
_REAL_WORDS = frozenset({"parting", "barking", "marking"})
"""Words one letter from an amenity word that mean something else."""


def amenity_spelling(text: str) -> str:
    """``text`` normalised, with amenity words misspelt by one letter written right.

    A dropped amenity is worse than a question: "parkng" read as nothing is silently lost.
    """

    def right(match: re.Match[str]) -> str:
        said = match.group(0)
        if said in _SPELLED or said in _REAL_WORDS:
            return said
        near = [word for word in _SPELLED if OSA.distance(said, word, score_cutoff=1) <= 1]
        return near[0] if len(near) == 1 else said

    return _WORD.sub(right, normalize(text))


def parse_amenities(text: str) -> list[Amenity]:
    """Amenities the guest asks for, in vocabulary order, skipping negated ones ("no pool")."""
    wanted = set()
    for clause in _CLAUSE_BREAK.split(amenity_spelling(text)):
        for amenity, pattern in AMENITY_PATTERNS.items():
            if any(not negated(clause, m.start(), m.end()) for m in pattern.finditer(clause)):
                wanted.add(amenity)
    return [amenity for amenity in Amenity if amenity in wanted]


# --- distances ----------------------------------------------------------------------------------

_AIRPORT = r"(?:the\s+)?(?:airport|pdx|portland international)(?!\s+(?:shuttle|transfer|ride))"
_DOWNTOWN = (
    r"(?:the\s+)?(?:downtown(?: portland)?|city cent(?:er|re)|cent(?:er|re) of (?:town|the city|"
    r"portland)|city|pearl(?: district)?)"
)
_MILES = rf"(?P<miles>\d+(?:\.\d+)?|{'|'.join(NUMBER_WORDS)})\s*(?:mi\b|miles?)"
_NEAR_WORDS = (
    r"\b(?:near(?:by|est)?(?: to)?|close(?:st)? to|close by|next to|by|walkable to"
    r"|not (?:too |very |that )?far (?:from|to)|as close as possible to)\s+"
)
"""Vague nearness, worth the place's default limit: "near the airport", "closest to downtown"."""


def _explicit(place: str) -> re.Pattern[str]:
    """A number of miles: "within 5 miles of the airport", "downtown, under 2 mi"."""
    return re.compile(
        rf"{_MILES}(?:\s+or\s+(?:less|closer))?\s+(?:away\s+)?(?:of|from|to)\s+{place}"
        rf"|{place}\W+(?:within|under|less than|no more than|at most)\s+"
        + _MILES.replace("?P<miles>", "?P<after>")
    )


_PLACES = {
    "airport": (
        _explicit(_AIRPORT),
        re.compile(rf"{_NEAR_WORDS}{_AIRPORT}|\bairport (?:hotel|area)\b"),
        NEAR_AIRPORT_MILES,
    ),
    "downtown": (
        _explicit(_DOWNTOWN),
        re.compile(
            rf"{_NEAR_WORDS}{_DOWNTOWN}|\b(?:in|stay(?:ing)?|hotel) downtown\b"
            r"|\bin the (?:city cent(?:er|re)|cent(?:er|re) of (?:town|the city|portland))\b"
            r"|\bin the pearl\b"
            r"|\bdowntown hotel\b"
        ),
        NEAR_DOWNTOWN_MILES,
    ),
}
"""Per place: an explicit limit, a vague "near" (worth the default), and that default in miles."""

_WALKING = re.compile(rf"\bwalking distance (?:of|to|from)\s+{_DOWNTOWN}")


def _limit_for(text: str, place: str) -> float | None:
    explicit, near, default = _PLACES[place]
    match = explicit.search(text)
    if match:
        token = match.group("miles") or match.group("after")
        return float(token) if token[0].isdigit() else float(to_int(token))
    if place == "downtown" and _WALKING.search(text):
        return WALKING_MILES
    return default if near.search(text) else None


def parse_distances(text: str) -> DistanceLimits | None:
    """Distance limits in miles: "within 5 miles of the airport", "close to downtown" (→ 3)."""
    text = normalize(text)
    limits = DistanceLimits(_limit_for(text, "airport"), _limit_for(text, "downtown"))
    return None if limits == (None, None) else limits
