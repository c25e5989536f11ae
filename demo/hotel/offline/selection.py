"""Which listed hotels a guest's sentence picks, in every form people type.

Numbers ("3", "#3", "number 3", "1,3,5", "1, 3 and 5", "2-4"), ordinals and ends of the list
("the second", "the last one", "the first two"), superlatives ("the cheapest", "the closest to
the airport"), name fragments ("the Riverside") and places ("the one in Beaverton"). Ordinals
count in the order the guest sees (``shown``: the page of the list, or a table's columns);
numbers are the list's own numbers. A number the list does not have is reported, not dropped
with the rest of the selection.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from demo.hotel import catalog
from demo.hotel.formats import OfferLine
from demo.hotel.offline._text import NUMBER_WORDS, ORDINAL_WORDS, normalize, to_int


@dataclass(frozen=True)
class Selection:
    """The hotels picked, in the order said, and the numbers that are not on the list."""

    hotels: tuple[OfferLine, ...] = ()
    missing: tuple[int, ...] = ()
    places: tuple[str, ...] = field(default=())

    def __bool__(self) -> bool:
        """Whether anything was picked, or a number that is not on the list was said."""
        return bool(self.hotels or self.missing)


_WORDS = "|".join(w for w in NUMBER_WORDS if w != "one")
_ORDINALS = "|".join(ORDINAL_WORDS)
_UNIT = (
    r"(?!\s*(?:nights?|miles?|mi\b|beds?|queens?|kings?|dollars|bucks|%|people|guests|adults"
    r"|stars?|am\b|pm\b|o'?clock|of (?:them|those|these)|days?|weeks?|months?|rooms?|/|:|\.\d))"
)
_NUMBER = re.compile(
    rf"(?:#\s*|\bnumbers?\s+|\bno\.?\s*|\boption\s+|\bhotel\s+|\bchoice\s+)?"
    rf"(?<![\w$.,/:-])(?<!these )(?<!those )(?<!the )(?P<n>\d{{1,3}}|{_WORDS})\b{_UNIT}"
)
_RANGE = re.compile(
    r"(?:#\s*|\bnumbers?\s+)?(?<![\w$.,/:])(?P<a>\d{1,2})\s*(?:-|to|through|thru)\s*#?\s*"
    r"(?P<b>\d{1,2})\b" + _UNIT
)
_ORDINAL = re.compile(
    rf"\b(?:the\s+)?(?P<o>{_ORDINALS}|\d{{1,2}}(?:st|nd|rd|th))"
    rf"(?:\s+(?:one|hotel|option|choice|place|column))?\b"
    r"(?!\s+(?:of (?:july|june|may|august|september|october|next|this)|night|week))"
)
_ENDS = re.compile(
    rf"\b(?P<end>first|top|last|bottom)\s+(?P<n>\d|{_WORDS})\b(?!\s*(?:nights?|days?|weeks?))"
)
_LAST = re.compile(r"\b(?:the\s+)?(?:very\s+)?(?:last|final|bottom)(?:\s+(?:one|hotel|option))?\b")
_ALL = re.compile(
    r"(?<!that's )(?<!that is )\b(?:all(?: of them| of those| three| four| five)?|every one"
    r"|each of them|the whole list)\b(?!\s+(?:set|good|done|right))"
)
_BOTH = re.compile(r"\bboth\b")
_SUPERLATIVES: tuple[tuple[re.Pattern[str], str], ...] = (
    (
        re.compile(
            r"\b(?:cheapest|cheaper|least expensive|lowest[- ]priced?|most affordable|best price)"
        ),
        "price",
    ),
    (re.compile(r"\b(?:most expensive|more expensive|pricier|priciest|fanciest)\b"), "-price"),
    (
        re.compile(
            r"\b(?:closest|nearest)\s+(?:one\s+)?(?:to\s+)?(?:the\s+)?(?:airport|pdx)\b"
            r"|\b(?:airport|pdx)\b.{0,12}\b(?:closest|nearest)\b"
        ),
        "airport",
    ),
    (re.compile(r"\b(?:closest|closer|nearest|nearer|most central|best located)\b"), "near"),
    (re.compile(r"\b(?:farthest|furthest)\b"), "-downtown"),
)
"""Superlatives and the ranking each means; "near" is downtown, or the airport when the list is
sorted by distance to the airport."""
_RANKINGS: dict[str, Callable[[OfferLine], float]] = {
    "price": lambda o: o.total,
    "-price": lambda o: -o.total,
    "airport": lambda o: o.airport,
    "downtown": lambda o: o.downtown,
    "-downtown": lambda o: -o.downtown,
}
_NOT_A_HOTEL = re.compile(r"\s+(?:room|rate|price|night|way|time|suite|bed|deal)s?\b")
"""After a superlative, a noun that is not a hotel: "the cheapest room at Mabel's"."""
_DATE_BEFORE = re.compile(
    r"\b(?:on|from|until|till|to|through|thru|by|in|arriv\w*|leav\w*|check(?:ing)?[ -]?(?:in|out)"
    r"|start\w*|stay\w*|before|after)\s+(?:the\s+)?$"
)
_CITY = re.compile(
    r"\b(?:the )?(?:one|hotel|place|option|lodging)s? (?:in|at) (?P<place>[a-z]+(?: [a-z]+)?)"
)
_PRICE_BEFORE = re.compile(
    r"(?:\$|\b(?:under|below|over|above|less than|more than|at least|at most|up to|budget"
    r"|max(?:imum)?|cap|limit)(?:\s+(?:of|is|to|at))?)\s*$"
)
"""What makes the number after it a price ("under 200", "budget 500"), not a hotel's number."""
_COMPARATIVE = re.compile(r"\b(?:cheaper|closer|nearer|more expensive|pricier|further|farther)\b")


def select(
    text: str,
    offers: Sequence[OfferLine],
    shown: Sequence[OfferLine],
    ranked: Sequence[OfferLine] | None = None,
    near: str = "downtown",
) -> Selection:
    """The hotels ``text`` picks among ``offers``, in the order said.

    Ordinals count in ``shown``; "the cheapest" ranks ``ranked`` (by default every offer), and
    a comparative ("the cheaper one") ranks ``shown``.
    """
    said = re.sub(r"(\d),(?=\d{1,2}\b)", r"\1, ", normalize(text))  # "1,3,5"; not "1,200"
    if not offers:
        return Selection()
    if _ALL.search(said):
        return Selection(hotels=tuple(shown))
    found: list[tuple[int, list[OfferLine]]] = []
    missing: list[int] = []
    said = _names(said, offers, found)
    said = _places(said, shown, found)
    comparative = _COMPARATIVE.search(said)
    pool = shown if comparative else (ranked or offers)
    if comparative:  # "which is closer, 3 or 5?" ranks 3 and 5: it picks no third hotel
        said = _ends(_numbers(said, offers, found, missing), shown, found, missing)
    said = _superlatives(said, pool, found, near) if not (comparative and found) else said
    said = _ends(said, shown, found, missing)
    said = _numbers(said, offers, found, missing)
    if not found and _BOTH.search(said) and len(shown) == 2:
        found.append((0, list(shown)))
    picked = list(dict.fromkeys(o for _, group in sorted(found, key=lambda f: f[0]) for o in group))
    return Selection(hotels=tuple(picked), missing=tuple(missing))


def _blank(text: str, start: int, end: int) -> str:
    return text[:start] + " " * (end - start) + text[end:]


def _names(said: str, offers: Sequence[OfferLine], found: list[tuple[int, list[OfferLine]]]) -> str:
    hotels = [h for h in (catalog.get(o.hotel_id) for o in offers) if h is not None]
    by_id = {o.hotel_id: o for o in offers}
    for hotel in catalog.mentioned_hotels(said, among=hotels):
        words = [
            w
            for w in re.findall(r"[a-z0-9]+", hotel.name.lower().replace("'", ""))
            if len(w) > 3 and w not in catalog.GENERIC_NAME_WORDS
        ]
        positions = [said.find(w[:4]) for w in words if w[:4] in said]
        found.append((min(positions, default=0), [by_id[hotel.id]]))
        for word in words:  # a name's words are not numbers, places or superlatives
            said = re.sub(rf"\b{re.escape(word[:4])}\w*", lambda m: " " * len(m[0]), said)
    return said


def _places(
    said: str, offers: Sequence[OfferLine], found: list[tuple[int, list[OfferLine]]]
) -> str:
    cities = {o.city.split(",")[0].lower() for o in offers}
    for match in _CITY.finditer(said):
        place = next((c for c in cities if match["place"].startswith(c)), None)
        if place is not None:
            found.append((match.start(), [o for o in offers if o.city.lower().startswith(place)]))
            said = _blank(said, match.start(), match.start("place") + len(place))
    for city in cities:
        one = re.search(rf"\b(?:the )?{re.escape(city)} (?:one|hotel|option)\b", said)
        if one:
            found.append((one.start(), [o for o in offers if o.city.lower().startswith(city)]))
            said = _blank(said, one.start(), one.end())
    return said


def _superlatives(
    said: str, offers: Sequence[OfferLine], found: list[tuple[int, list[OfferLine]]], near: str
) -> str:
    for pattern, ranking in _SUPERLATIVES:
        key = _RANKINGS[near if ranking == "near" else ranking]
        match = pattern.search(said)
        if match and not _NOT_A_HOTEL.match(said, match.end()):
            found.append((match.start(), [min(offers, key=key)]))
            said = _blank(said, match.start(), match.end())
    return said


def _ends(
    said: str,
    shown: Sequence[OfferLine],
    found: list[tuple[int, list[OfferLine]]],
    missing: list[int],
) -> str:
    for match in _ENDS.finditer(said):
        count = to_int(match["n"]) if match["n"] != "one" else 1
        first = match["end"] in ("first", "top")
        found.append((match.start(), list(shown[:count] if first else shown[-count:])))
        said = _blank(said, match.start(), match.end())
    for match in _LAST.finditer(said):
        found.append((match.start(), [shown[-1]]))
        said = _blank(said, match.start(), match.end())
    for match in _ORDINAL.finditer(said):
        if _DATE_BEFORE.search(said[: match.start("o")]):
            continue  # "arrive on the 4th" is a day, not the fourth hotel
        token = match["o"]
        index = ORDINAL_WORDS.get(token) or int(re.sub(r"\D", "", token))
        if 1 <= index <= len(shown):
            found.append((match.start(), [shown[index - 1]]))
        elif index not in missing:
            missing.append(index)
        said = _blank(said, match.start(), match.end())
    return said


def _numbers(
    said: str,
    offers: Sequence[OfferLine],
    found: list[tuple[int, list[OfferLine]]],
    missing: list[int],
) -> str:
    by_number = {o.number: o for o in offers}

    def take(position: int, number: int) -> None:
        if number in by_number:
            found.append((position, [by_number[number]]))
        elif number not in missing:
            missing.append(number)

    for match in _RANGE.finditer(said):
        low, high = int(match["a"]), int(match["b"])
        if low < high <= low + 10:
            for number in range(low, high + 1):
                take(match.start(), number)
            said = _blank(said, match.start(), match.end())
    for match in _NUMBER.finditer(said):
        if not _PRICE_BEFORE.search(said[: match.start("n")]):
            take(match.start(), to_int(match["n"]))
    return said


def not_listed(text: str, offers: Sequence[OfferLine]) -> str | None:
    """Hotels the guest names that the search did not find ("the Riverside Inn")."""
    listed = {offer.hotel_id for offer in offers}
    others = [hotel.name for hotel in catalog.mentioned_hotels(text) if hotel.id not in listed]
    return " and ".join(others) or None
