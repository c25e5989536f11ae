"""Guest wording onto PicoFlow's 23 amenity names (AmenityStep's "map wording to values").

`read_amenities("free wifi and parking, no pets").wanted` is ``["freeWiFi", "freeParking"]``:
the names in vocabulary order, negated ones left out ("no pets" is no requirement) and taken
off a list said before ("drop the pool"), additions told from a restated list ("also a gym"),
and the words of amenities the vocabulary has not ("a spa") apart. "No amenities" is ``[]``,
an explicit none; a bare "no preference" is one only as the answer to the amenity question.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from demo.decision_hotel.criteria import AMENITIES
from demo.hotel.offline._criteria import amenity_spelling
from demo.hotel.offline._text import negated, normalize

PATTERNS: dict[str, re.Pattern[str]] = {
    name: re.compile(pattern) for name, pattern in {
        "freeWiFi": r"\bwi-?fi\b|\bwireless\b|\binternet\b",
        "nonSmoking": r"\bnon-? ?smok\w*|\bsmoke-? ?free\b|\bno smoking\b",
        "freeBreakfast": r"\bbreakfast\b",
        "freeParking": r"\bparking\b|\bpark (?:my|the|our) (?:car|truck|van)\b|\bgarage\b",
        "airportShuttle": r"\bshuttle\b|\bairport (?:transfer|pick-?up|ride)s?\b",
        "roomService": r"\broom service\b",
        "fitnessCenter": r"\bgym\b|\bfitness\b|\bwork ?out\b|\bexercise\b",
        "petFriendly": r"\bpets?\b|\bpet[- ]friendly\b|\bdogs?\b|\bcats?\b|\bpupp\w*",
        "digitalKey": r"\bdigital (?:room )?key\b|\bmobile key\b|\bkeyless\b"
        r"|\bphone as (?:a )?key\b",
        "boutique": r"\bboutique\b",
        "onSiteRestaurant": r"\brestaurants?\b|\bon-?site dining\b|\bdining\b",
        "indoorPool": r"\bindoor (?:swimming )?pool\b|(?<!outdoor )(?<!outdoor swimming )\bpool\b"
        r"|\bswimming\b(?! pool)",
        "businessCenter": r"\bbusiness cent(?:er|re)\b|\bprint(?:er|ing)\b",
        "meetingRoom": r"\bmeeting rooms?\b|\bconference rooms?\b",
        "evCharging": r"\bev\b|\belectric (?:car|vehicle)\b|\bcharg(?:er|ing) (?:station|point)s?\b"
        r"|\bev charg\w*|\btesla\b",
        "connectingRooms": r"\bconnecting rooms?\b|\badjoining rooms?\b|\bconnected rooms\b",
        "eveningReception": r"\bevening reception\b|\bhappy hour\b|\bmanager'?s reception\b",
        "concierge": r"\bconcierge\b",
        "streaming": r"\bstreaming\b|\bnetflix\b|\bsmart tv\b",
        "kitchen": r"\bkitchen(?:ette)?s?\b|\bcook\b",
        "tennis": r"\btennis\b",
        "outdoorPool": r"\boutdoor (?:swimming )?pool\b",
        "newHotel": r"\bnew(?:ly built| build)? hotel\b|\bbrand[- ]new\b"
        r"|\bnewly (?:built|opened)\b",
    }.items()
}  # fmt: skip
"""Wording per amenity name; a pool of no kind is read as ``indoorPool`` (see below)."""
assert tuple(PATTERNS) == AMENITIES

UNKNOWN = re.compile(
    r"\bspa\b|\bmassages?\b|\bhot ?tubs?\b|\bjacuzzis?\b|\bsauna\b|\bbar\b|\blaundry\b"
    r"|\bwheelchair\b|\baccessib\w*|\bbalcony\b|\bocean view\b|\bminibar\b|\bcasino\b|\bgolf\b"
)
"""Amenities guests ask for that PicoFlow's 23 names do not hold."""

NONE = re.compile(
    r"\bno (?:amenit\w+|preference|requirements?|special (?:requests?|needs))\b"
    r"|\bnothing (?:special|in particular|specific)?\b|\b(?:don'?t|do not) (?:need|care|mind)\b"
    r"|\bdoesn'?t matter\b|\bnone\b|^\W*(?:no|nope|nah)\W*$|\bnot (?:really|picky|fussy)\b"
    r"|\banything (?:is fine|works|goes)\b|\bno need\b|\bno extras\b"
)
"""An answer to "which amenities?" that there are none; read only as that answer."""
EXPLICIT_NONE = re.compile(
    r"\bno (?:amenit\w+|extras)\b|\bamenit\w+\W+(?:don'?t|doesn'?t|do not|does not) matter\b"
    r"|\b(?:don'?t|do not) (?:need|want|care about|require) (?:any )?(?:special )?"
    r"(?:amenit\w+|extras)\b"
    r"|\bany amenit\w+ (?:is|are) fine\b|\bno amenity preference\b"
)
"""No amenities, said anywhere ("no amenities needed")."""
_CLAUSE = re.compile(r"[,;.!?]|\bbut\b|\band\b|\balso\b|\bplus\b|\bor\b")
_REMOVE = re.compile(
    r"\b(?:remove|drop|delete|take (?:off|out)|no longer|get rid of|scrap|forget(?: about)?"
    r"|cross off|lose|any ?more)\b"
)
_APOSTROPHES = re.compile(r"\b(do|does|is|are|won|can|would|did)nt\b")
_ADD = re.compile(r"\b(?:add|also|too|as well|plus|another|in addition|additionally)\b")


@dataclass
class AmenitySaid:
    """What a message says about amenities: required names, names taken off, unknown words.

    `wanted` is None when it names none, [] for an explicit none; `adds` when it adds to (or,
    with `removed`, takes from) what was asked before rather than restating the whole list.
    """

    wanted: list[str] | None = None
    removed: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    adds: bool = False

    def says_something(self) -> bool:
        """Whether it changes the amenities at all."""
        return self.wanted is not None or bool(self.removed)

    def applied_to(self, before: list[str] | None) -> list[str] | None:
        """The required list after this message, given the one before (None: unknown)."""
        if not self.says_something():
            return before
        if before is not None and (self.adds or self.wanted is None):
            kept = set(before) | set(self.wanted or [])
            return [name for name in AMENITIES if name in kept and name not in self.removed]
        if self.wanted is None:
            return None  # only taken off, from a list not known: nothing to restate
        return list(self.wanted)


def read_amenities(text: str, answering: bool = False) -> AmenitySaid:
    """What `text` says about amenities. `answering`: it answers the amenity question, so a
    bare "none" or "no preference" is about amenities.

    "A pool" becomes ``indoorPool``: AmenityStep cannot ask which kind (PicoFlow replaces its
    every reply with one fixed question), and the catalog records a pool without its kind, so
    both names find the same hotels; the saved criteria show the name, for the guest to change.
    """
    said = AmenitySaid(adds=_ADD.search(normalize(text)) is not None)
    wanted: set[str] = set()
    removed: set[str] = set()
    spelled = _APOSTROPHES.sub(r"\1n't", amenity_spelling(text))
    for clause in _CLAUSE.split(spelled):
        for name, pattern in PATTERNS.items():
            for found in pattern.finditer(clause):
                off = negated(clause, found.start(), found.end()) or _REMOVE.search(clause)
                (removed if off else wanted).add(name)
        said.unknown += [m.group(0) for m in UNKNOWN.finditer(clause)
                         if not negated(clause, m.start(), m.end())]  # fmt: skip
    if "outdoorPool" in wanted | removed and not re.search(r"\bindoor\b", spelled):
        wanted.discard("indoorPool")
        removed.discard("indoorPool")
    said.removed = [name for name in AMENITIES if name in removed - wanted]
    none = EXPLICIT_NONE.search(spelled) or (answering and NONE.search(spelled))
    if wanted:
        said.wanted = [name for name in AMENITIES if name in wanted]
    elif none and not said.unknown and not said.removed:
        said.wanted = []
    return said
