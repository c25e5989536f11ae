"""The hotel catalog: loading, searching, name lookup, and advice when a search finds nothing.

Search semantics (documented because the guest sees their effect):

* every requested amenity must be present; distance limits are inclusive ("within 5 miles");
* with a requested room type only that type is priced; without one, each hotel is quoted for its
  cheapest room type whose average nightly price fits the budget;
* the budget (per night) is compared with the stay's *average* nightly price, inclusive;
* results are sorted by total price, then by name, so the order is stable.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from datetime import date
from decimal import Decimal
from functools import lru_cache
from importlib import resources

from rapidfuzz.distance import OSA

from demo.hotel.pricing import quote
from demo.hotel.types import Hotel, Quote, RoomType, StayCriteria, parse_criteria

_PriceTable = dict[tuple[str, RoomType], Quote]
"""Every (hotel id, room type) quote of one stay, computed once, reused by variant searches."""

GENERIC_NAME_WORDS = frozenset(
    "the a an hotel inn suite lodge guesthouse motel resort place of at one".split()
)
"""Words that never identify a hotel, singular or plural ("hotels", "suites", "inns")."""

COMMON_NAME_WORDS = frozenset(
    "happy short grand square landing crossing station valley tower forest mount hood lake river "
    "creek meadows commons manor gateway conference terrace hills pearl fort sandy cedar "
    "portland beaverton hillsboro tigard oswego gresham vancouver troutdale milwaukie tualatin "
    "airfield runway".split()
)
"""Name words too common in ordinary speech ("I'm happy with that"), or a city's name, to
identify a hotel alone; with another word of the name they do ("Orenco Station")."""

HOTEL_ID = re.compile(r"\bH\d{2}\b", re.IGNORECASE)
"""An explicit catalog id such as "H07"."""


@lru_cache(maxsize=1)
def hotels() -> tuple[Hotel, ...]:
    """The whole catalog, in file order (loaded and validated once)."""
    source = resources.files("demo.hotel") / "data" / "hotels.json"
    entries = json.loads(source.read_text(encoding="utf-8"))
    loaded = tuple(Hotel.model_validate(entry) for entry in entries)
    ids = [hotel.id for hotel in loaded]
    if len(set(ids)) != len(ids):
        raise ValueError("hotels.json: hotel ids must be unique")
    return loaded


def get(hotel_id: str) -> Hotel | None:
    """The hotel with this id (case-insensitive), or None: never trust an id without checking."""
    wanted = hotel_id.strip().upper()
    return next((hotel for hotel in hotels() if hotel.id == wanted), None)


# --- search -------------------------------------------------------------------------------------


def _price_table(nights: Sequence[date]) -> _PriceTable:
    """Quote every room type of every hotel for these nights."""
    return {
        (hotel.id, room): quote(hotel, room, nights)
        for hotel in hotels()
        for room in hotel.room_types
    }


def search(criteria: StayCriteria, today: date) -> list[Quote]:
    """Hotels matching ``criteria``, cheapest stay first.

    Raises ``pydantic.ValidationError`` when the stay starts before ``today``.
    """
    criteria = parse_criteria(criteria.model_dump(), today)
    return _search(criteria, _price_table(criteria.nights()))


def _search(criteria: StayCriteria, table: _PriceTable) -> list[Quote]:
    found = []
    for quotes in _candidates(criteria, table):
        affordable = [q for q in quotes if _within_budget(q, criteria)]
        if affordable:
            found.append(min(affordable, key=lambda q: q.total))
    return sorted(found, key=lambda q: (q.total, q.hotel.name))


def _candidates(criteria: StayCriteria, table: _PriceTable) -> list[list[Quote]]:
    """Per matching hotel, the quotes of its allowed room types, before the budget is applied."""
    candidates = []
    for hotel in hotels():
        if _hotel_fits(hotel, criteria):
            rooms = [criteria.room_type] if criteria.room_type else hotel.room_types
            candidates.append([table[hotel.id, room] for room in rooms])
    return candidates


def _hotel_fits(hotel: Hotel, criteria: StayCriteria) -> bool:
    """The price-independent filters: amenities, room type, distances."""
    if criteria.room_type and criteria.room_type not in hotel.room_types:
        return False
    if not hotel.has_all(criteria.amenities):
        return False
    if _exceeds(hotel.miles_to_airport, criteria.max_miles_to_airport):
        return False
    return not _exceeds(hotel.miles_to_downtown, criteria.max_miles_to_downtown)


def _exceeds(miles: float, limit: float | None) -> bool:
    return limit is not None and miles > limit


def _within_budget(stay: Quote, criteria: StayCriteria) -> bool:
    low, high = criteria.budget_min, criteria.budget_max
    if low is not None and stay.average < Decimal(str(low)):
        return False
    return high is None or stay.average <= Decimal(str(high))


# --- advice when nothing matches ----------------------------------------------------------------


def relax_advice(criteria: StayCriteria, today: date) -> str:
    """Which single criterion to relax to get results, as sentences for the guest.

    Tries each criterion on its own (budget, distances, room type, each amenity) and reports the
    changes that find the most hotels; the dates are never second-guessed.
    """
    criteria = parse_criteria(criteria.model_dump(), today)
    table = _price_table(criteria.nights())
    matching = len(_search(criteria, table))
    if matching:
        verb = "matches" if matching == 1 else "match"
        return f"{_hotels(matching)} already {verb} these criteria."
    options = []
    for change, relaxed in _relaxations(criteria, table):
        count = len(_search(relaxed, table))
        if count:
            options.append((count, f"{change} would find {_hotels(count)}"))
    if not options:
        return (
            "No hotel matches all of your criteria, and changing just one of them is not enough. "
            "Try a higher budget together with fewer amenities or a wider area."
        )
    best, *others = [text for _, text in sorted(options, key=lambda option: -option[0])[:3]]
    alternatives = ", or ".join(text[0].lower() + text[1:] for text in others)
    tail = f" Alternatively, {alternatives}." if alternatives else ""
    return f"No hotel matches all of your criteria. {best}.{tail}"


def _relaxations(criteria: StayCriteria, table: _PriceTable) -> list[tuple[str, StayCriteria]]:
    """Candidate single changes, each with the wording of the change."""
    changes = [
        _raise_budget(criteria, table),
        _lower_minimum(criteria, table),
        _widen(criteria, table, "max_miles_to_airport", "the airport"),
        _widen(criteria, table, "max_miles_to_downtown", "downtown"),
    ]
    if criteria.room_type:
        changes.append(
            (
                f"Any room type instead of {criteria.room_type}",
                criteria.model_copy(update={"room_type": None}),
            )
        )
    for amenity in criteria.amenities:
        rest = [a for a in criteria.amenities if a != amenity]
        changes.append(
            (f"Dropping the {amenity} requirement", criteria.model_copy(update={"amenities": rest}))
        )
    return [change for change in changes if change is not None]


def _raise_budget(criteria: StayCriteria, table: _PriceTable) -> tuple[str, StayCriteria] | None:
    if criteria.budget_max is None:
        return None
    low = criteria.model_copy(update={"budget_max": None})
    averages = [q.average for qs in _candidates(low, table) for q in qs if _within_budget(q, low)]
    if not averages:
        return None
    new_max = math.ceil(min(averages) / 10) * 10
    return (
        f"Raising the budget to ${new_max:,} a night",
        criteria.model_copy(update={"budget_max": float(new_max)}),
    )


def _lower_minimum(criteria: StayCriteria, table: _PriceTable) -> tuple[str, StayCriteria] | None:
    if criteria.budget_min is None:
        return None
    high = criteria.model_copy(update={"budget_min": None})
    averages = [q.average for qs in _candidates(high, table) for q in qs if _within_budget(q, high)]
    if not averages:
        return None
    new_min = math.floor(max(averages) / 10) * 10
    if not new_min:
        return "Removing the minimum budget", criteria.model_copy(update={"budget_min": None})
    return (
        f"Lowering the minimum to ${new_min:,} a night",
        criteria.model_copy(update={"budget_min": float(new_min)}),
    )


def _widen(
    criteria: StayCriteria, table: _PriceTable, field: str, place: str
) -> tuple[str, StayCriteria] | None:
    if getattr(criteria, field) is None:
        return None
    found = _search(criteria.model_copy(update={field: None}), table)
    if not found:
        return None
    attribute = "miles_to_airport" if field == "max_miles_to_airport" else "miles_to_downtown"
    miles = math.ceil(min(getattr(q.hotel, attribute) for q in found))
    return (
        f"Allowing up to {miles} miles from {place}",
        criteria.model_copy(update={field: float(miles)}),
    )


def _hotels(count: int) -> str:
    return f"{count} hotel{'s' if count != 1 else ''}"


# --- names --------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    """Lower-case words with apostrophes dropped, so "Mabel's" and "mabels" compare equal."""
    return re.findall(r"[a-z0-9]+", text.lower().replace("'", "").replace("\u2019", ""))


def _same_word(said: str, name_word: str) -> bool:
    """Tolerant word equality: a plural or possessive "s", and one typo in longer words.

    One typo is a wrong, missing, extra or swapped letter, in a word of five letters or more:
    "Hawthrone" is "Hawthorne", but "situation" is not "station".
    """
    if said == name_word or said.rstrip("s") == name_word.rstrip("s"):
        return True
    if min(len(said), len(name_word)) < 5:
        return False
    return OSA.distance(said, name_word, score_cutoff=1) <= 1


def _match_length(said: Sequence[str], name: Sequence[str]) -> int:
    """Longest run of consecutive name words spoken at the start of ``said``."""
    best = 0
    for offset in range(len(name)):
        length = 0
        while (
            length < len(said)
            and offset + length < len(name)
            and _same_word(said[length], name[offset + length])
        ):
            length += 1
        best = max(best, length)
    return best


def _identifies(run: list[str]) -> bool:
    """Whether a run of name words is specific enough to count as naming the hotel."""
    specific = [word for word in run if _singular(word) not in GENERIC_NAME_WORDS]
    if not specific:
        return False
    return len(specific) >= 2 or _singular(specific[0]) not in COMMON_NAME_WORDS


def _singular(word: str) -> str:
    return word[:-1] if word.endswith("s") and word[:-1] in GENERIC_NAME_WORDS else word


def mentioned_hotels(text: str, among: Iterable[Hotel] | None = None) -> list[Hotel]:
    """Hotels named in ``text``, in the order mentioned (ids like "H07" also count).

    Tolerant: "the Riverside" names "Riverside Inn"; a fragment shared by several hotels (e.g.
    "Columbia") is ambiguous and names none of them. ``among`` restricts the candidates, e.g. to
    the hotels just presented.
    """
    pool = list(hotels() if among is None else among)
    by_id = {hotel.id: hotel for hotel in pool}
    names = tuple((hotel.id, hotel.name) for hotel in by_id.values())
    return [by_id[hotel_id] for hotel_id in _mentioned(text, names)]


@lru_cache(maxsize=4096)
def _mentioned(text: str, pool: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The ids ``mentioned_hotels`` returns, remembered per text and pool of (id, name).

    The offline model re-reads the whole visible conversation every turn, so without this a
    turn's name matching grows with the session (issue 25); the catalog is read-only, so the
    same text and pool always give the same answer.
    """
    ids = {hotel_id for hotel_id, _ in pool}
    found = [m.upper() for m in HOTEL_ID.findall(text) if m.upper() in ids]
    said = _words(HOTEL_ID.sub(" ", text))
    names = {hotel_id: _name_words(name) for hotel_id, name in pool}
    position = 0
    while position < len(said):
        lengths = {hid: _match_length(said[position:], name) for hid, name in names.items()}
        longest = max(lengths.values(), default=0)
        winners = [hid for hid, length in lengths.items() if length == longest]
        if longest and _identifies(said[position : position + longest]) and len(winners) == 1:
            found.append(winners[0])
        position += max(longest, 1)
    return tuple(dict.fromkeys(found))


@lru_cache(maxsize=256)
def _name_words(name: str) -> tuple[str, ...]:
    """A hotel name's words, split once per name."""
    return tuple(_words(name))


def find_by_name(text: str, among: Iterable[Hotel] | None = None) -> Hotel | None:
    """The single hotel ``text`` names, or None when it names none or several."""
    found = mentioned_hotels(text, among)
    return found[0] if len(found) == 1 else None
