"""How TravelFlow's offline model reads a trip request: rules over what the traveller typed.

`read_trip(messages, today)` reads every message in order; a fact said later replaces the one
said before (a correction), so travellers may give everything at once or one thing at a time.
Dates come in many forms (``2025-06-03``, ``7/4/2025``, ``June 3rd``, ``the 3rd of August``,
``14-18 July``, ``tomorrow``, ``next friday``, ``in two weeks``); a date without a year is the
next such day from ``today``. A length of stay (``for 4 nights``, ``a week``) and two dates
complete each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from demo.reading.ranges import range_words

NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "thirteen": 13, "fourteen": 14, "fifteen": 15, "twenty": 20, "thirty": 30,
}  # fmt: skip
MONTHS = {
    "jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4,
    "april": 4, "may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8,
    "sep": 9, "sept": 9, "september": 9, "oct": 10, "october": 10, "nov": 11,
    "november": 11, "dec": 12, "december": 12,
}  # fmt: skip
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUM = r"\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True))
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s*(\d{4}))?"

# Words that follow "to", "from", "in"... without being a place.
NOT_PLACES = {
    "i", "we", "me", "us", "my", "our", "you", "the", "a", "an", "and", "or", "go", "fly",
    "travel", "plan", "see", "visit", "book", "be", "stay", "get", "take", "leave", "return",
    "come", "know", "do", "have", "find", "make", "spend", "head", "explore", "trip",
    "flight", "flights", "hotel", "hotels", "activity", "activities", "only", "just",
    "please", "pls", "need", "want", "like", "hey", "hi", "hello", "there", "here", "it",
    "that", "this", "next", "tomorrow", "today", "week", "weekend", "month", "economy",
    "business", "first", "class", "budget", "premium", "balanced", "people", "adults",
    "nights", "days", "family", "wife", "husband", "back", "home", "somewhere", "anywhere",
    "cheap", "warm", "sunny", "what", "which", "how", "can", "could", "would", "should",
    "is", "are", "thanks", "thank", "ok", "okay", "yes", "no", "sure", "great", "also",
    "actually", "looking", "planning", "going", "thinking", "full", "whole", "all",
    "everything", "flying", "leaving", "coming", "returning", "departing", "staying",
    "around", "about", "at", "on", "for", "with", "by", "of", "in", "into", "out", "up",
    "cruise", "cruises", "holiday", "vacation", "solo", "myself", "alone", "late", "early",
    "mid", "end", "beginning", "start", "some", "any", "more", "less", "price", "prices",
    "change", "same", "again", "redo", "different", "scratch", "over",
    "cheaper", "weather", "date", "dates", "tour", "tours", "package", "packages", "nyc's",
    *MONTHS, *WEEKDAYS,
}  # fmt: skip
_CONNECTORS = {"de", "del", "da", "do", "la", "le", "los", "las", "san", "santa", "st."}
_WORD = r"[A-Za-z][A-Za-z.'’-]*"
_PLACE = rf"({_WORD}(?:\s+(?:{_WORD})){{0,3}})"  # a few words: the next pattern may follow


@dataclass
class Trip:
    """What the traveller asked for so far; None where nothing was said."""

    intent: str | None = None
    origin: str | None = None
    destination: str | None = None
    depart: date | None = None
    back: date | None = None
    days: int | None = None
    adults: int | None = None
    travel_class: str | None = None
    budget: float | None = None
    asked: bool = False  # a message with a question mark and no fact
    said: dict[str, int] = field(default_factory=dict)  # fact -> index of the message

    def missing(self) -> list[str]:
        """The facts a plan cannot do without, in the order a person asks for them."""
        gaps = []
        if self.origin is None and self.intent not in ("hotels_only", "activities_only"):
            gaps.append("where you are leaving from")
        if self.destination is None:
            gaps.append("where you are going")
        if self.depart is None:
            gaps.append("the day you leave")
        if self.back is None:
            gaps.append("the day you come back (or how many nights)")
        return gaps

    def plan(self) -> dict[str, Any]:
        """The `submit_plan` arguments, as a careful model would send them."""
        assert self.depart is not None and self.back is not None and self.destination
        plan: dict[str, Any] = {
            "user_intent": self.intent or "full_plan",
            "origin": self.origin,
            "destination": self.destination,
            "departure_date": self.depart.isoformat(),
            "return_date": self.back.isoformat(),
            "duration_days": (self.back - self.depart).days,
            "adults": self.adults or 1,
            "travel_class": self.travel_class or "ECONOMY",
        }
        if self.budget is not None:
            plan["budget"] = int(self.budget) if self.budget == int(self.budget) else self.budget
        return plan


def read_trip(messages: list[str], today: date) -> Trip:
    """Everything the messages say about the trip; later facts replace earlier ones."""
    trip = Trip()
    for index, text in enumerate(messages):
        _read_one(trip, _normalise(text), today, index)
    _complete_dates(trip)
    return trip


def _normalise(text: str) -> str:
    text = re.sub(r"\s*(?:→|->|—>|=>|–>)\s*", " to ", range_words(text))
    text = re.sub(r"\bfr[ou]?m\b", "from", text, flags=re.I)
    text = re.sub(r"\btoo\b(?=\s+[A-Z])", "to", text)
    text = re.sub(r"\bnigh?th?s\b|\bnites\b|\bnihgts\b|\bngihts\b", "nights", text, flags=re.I)
    return re.sub(r"\badu?lt?u?s\b|\badutls\b|\badluts\b", "adults", text, flags=re.I)


def _set(trip: Trip, name: str, value: Any, index: int) -> None:
    setattr(trip, name, value)
    trip.said[name] = index


def _read_one(trip: Trip, text: str, today: date, index: int) -> None:
    before = dict(trip.said)
    intent = read_intent(text)
    if intent:
        _set(trip, "intent", intent, index)
    _read_places(trip, text, index)
    rest = _read_dates(trip, text, today, index)
    if (days := read_days(rest)) is not None:
        _set(trip, "days", days, index)
    if (adults := read_adults(text)) is not None:
        _set(trip, "adults", adults, index)
    if travel_class := read_class(text):
        _set(trip, "travel_class", travel_class, index)
    if (budget := read_budget(text)) is not None:
        _set(trip, "budget", budget, index)
    trip.asked = "?" in text and trip.said == before


# -- intent -------------------------------------------------------------------------------

_KINDS = {
    "flights": r"flights?|fly|plane tickets?|airfare",
    "hotels": r"hotels?|rooms?|accommodations?|a place to stay|lodging",
    "activities": r"activities|activity|things to do|tours?|excursions?|experiences",
}


_EVERYTHING = re.compile(
    r"\b(?:everything|full plan|whole trip|the works|all of it|full package)\b"
)


def read_intent(text: str) -> str | None:
    """``flights_only`` and the like when the traveller limits the request, else None."""
    lower = text.lower()
    if _EVERYTHING.search(lower):
        return "full_plan"
    named = [kind for kind, words in _KINDS.items() if re.search(rf"\b(?:{words})\b", lower)]
    only = re.search(r"\b(?:only|just|solely|merely)\b", lower)
    if only and len(named) == 1:
        return f"{named[0]}_only"
    no = [k for k, w in _KINDS.items() if re.search(rf"\bno (?:need for )?(?:{w})\b", lower)]
    if len(named) > 1 and not only and not no:
        return "full_plan"
    left = [kind for kind in named if kind not in no]
    if no and len(left) == 1:
        return f"{left[0]}_only"
    if len(named) == 1 and _ASKS_FOR.search(lower) and named[0] != "flights":
        return f"{named[0]}_only"  # "I need a hotel in Prague": the hotel is the request
    return None


_ASKS_FOR = re.compile(
    r"\b(?:need|want|looking for|book|find|get)\s+(?:me\s+|us\s+)?(?:a|an|some)\s+"
    r"(?:hotel|room|place to stay|activities|things to do|tours?)\b"
)


# -- places -------------------------------------------------------------------------------


def place(raw: str) -> str | None:
    """A place name from the words a pattern caught: up to the first word that is not one."""
    words = raw.replace("’", "'").split()
    kept: list[str] = []
    for word in words:
        bare = word.strip(".,'").lower()
        if not bare or bare in NOT_PLACES or any(c.isdigit() for c in word):
            break
        if kept and not word[0].isupper() and bare not in _CONNECTORS:
            break
        kept.append(word.strip(".,"))
        if len(kept) == 3:
            break
    while kept and kept[-1].lower() in _CONNECTORS:
        kept.pop()
    return " ".join(kept) or None


_FROM_TO = re.compile(rf"\bfrom\s+{_PLACE}\s+to\s+{_PLACE}", re.I)
_PAIR = re.compile(rf"(?:^|[\s,:;!(])({_WORD}(?:\s+[A-Z][A-Za-z.'-]*)*)\s+to\s+{_PLACE}")
_ORIGIN = re.compile(
    rf"\b(?:from|out of|leaving from|departing from|flying out of|starting from|based in|"
    rf"live in|living in|i'm in|i am in|leaving|departing)\s+{_PLACE}",
    re.I,
)
_DESTINATION = re.compile(
    rf"\b(?:to|into|in|visit|visiting|see|seeing|explore|exploring|make (?:that|it)|"
    rf"change (?:that|it|the destination) to|instead go to|rather go to|destination is|"
    rf"destination:)\s+{_PLACE}",
    re.I,
)
_NOT_THIS = re.compile(rf"\bnot\s+{_PLACE}[,;]?\s+(?:but\s+|rather\s+)?{_PLACE}", re.I)
_CAPITAL = re.compile(r"(?:^|[\s,:;!(])([A-Z][A-Za-z.'-]+(?:\s+[A-Z][A-Za-z.'-]+)*)")


def _read_places(trip: Trip, text: str, index: int) -> None:
    origin, destination = _route(text)
    if found := _NOT_THIS.search(text):
        destination = place(found.group(2))  # "not Paris, Nice"
    if origin is None and (found := _ORIGIN.search(text)):
        origin = place(found.group(1))
    if destination is None:
        for found in _DESTINATION.finditer(text):
            if (candidate := place(found.group(1))) and candidate != origin:
                destination = candidate  # the last one said wins ("... make that Rome")
    if destination is None and trip.destination is None:
        destination = _bare_place(text, origin)
    if origin:
        _set(trip, "origin", origin, index)
    if destination:
        _set(trip, "destination", destination, index)


def _route(text: str) -> tuple[str | None, str | None]:
    """Origin and destination said together: "from X to Y", "X to Y", "X → Y"."""
    if (found := _FROM_TO.search(text)) and (
        (origin := place(found.group(1))) and (destination := place(found.group(2)))
    ):
        return origin, destination
    for found in _PAIR.finditer(text):
        first, second = place(found.group(1)), place(found.group(2))
        if first and second and found.group(1).split()[-1].lower() not in NOT_PLACES:
            return first, second
    return None, None


def _bare_place(text: str, origin: str | None) -> str | None:
    """A capitalised name said on its own ("hotels only, Barcelona, ..."), if there is one."""
    for found in _CAPITAL.finditer(text):
        candidate = place(found.group(1))
        opens = not text[: found.start(1)].strip() or text[: found.start(1)].rstrip()[-1] in ".!?"
        if "'" in found.group(1) or not candidate or candidate == origin:
            continue
        if not opens or " " not in text.strip():
            return candidate
    return None


# -- dates --------------------------------------------------------------------------------


@dataclass
class _Mention:
    at: int
    day: date
    role: str | None  # "depart", "back" or None


_BACK_WORDS = re.compile(
    r"(?:back|return|returning|return on|home|until|till|til|through|thru|to|and|-|–|coming "
    r"back|come back|fly back|flying back|get back)\s*(?:on|the|by|at)?\s*(?:the\s*)?$",
    re.I,
)
_OUT_WORDS = re.compile(
    r"(?:leav\w*|depart\w*|out|start\w*|from|on|fly\w*|go\w*|arriv\w*|beginning|begin)\s*"
    r"(?:on|the|at)?\s*(?:the\s*)?$",
    re.I,
)


def _resolve(today: date, month: int, day: int, year: str | None) -> date | None:
    try:
        if year:
            return date(int(year) + (2000 if len(year) == 2 else 0), month, day)
        found = date(today.year, month, day)
    except ValueError:
        return None
    return found if found >= today else date(today.year + 1, month, day)


def _month_days(text: str, today: date) -> list[tuple[int, int, list[date]]]:
    """Spans of the text holding dates, each with its dates in order."""
    found: list[tuple[int, int, list[date]]] = []
    patterns: list[tuple[str, Any]] = [
        (rf"\b(\d{{1,2}}){_ORD}\s*(?:-|–|to|until|till)\s*(?:the\s+)?(\d{{1,2}}){_ORD}\s+(?:of\s+)?"
         rf"({_MONTH})\b\.?{_YEAR}", lambda m: [(m[3], m[1], m[4]), (m[3], m[2], m[4])]),
        (rf"\b({_MONTH})\.?\s+(\d{{1,2}}){_ORD}\s*(?:-|–|to|until|till)\s*(\d{{1,2}}){_ORD}\b"
         rf"(?!\s*(?:nights|days|adults|people|:))(?!/){_YEAR}",
         lambda m: [(m[1], m[2], m[4]), (m[1], m[3], m[4])]),
        (r"\b(\d{4})-(\d{1,2})-(\d{1,2})(?:T[\d:.]+Z?)?\b", lambda m: [("#" + m[2], m[3], m[1])]),
        (r"\b(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?\b", lambda m: [("#" + m[1], m[2], m[3])]),
        (rf"\b({_MONTH})\.?\s+(?:the\s+)?(\d{{1,2}}){_ORD}\b(?!\s*(?:nights|days|adults|:)){_YEAR}",
         lambda m: [(m[1], m[2], m[3])]),
        (rf"\b(\d{{1,2}}){_ORD}\s+(?:of\s+)?({_MONTH})\b\.?{_YEAR}",
         lambda m: [(m[2], m[1], m[3])]),
    ]  # fmt: skip
    taken = [False] * len(text)
    for pattern, parts in patterns:
        for match in re.finditer(pattern, text, re.I):
            if any(taken[match.start() : match.end()]):
                continue
            days = []
            for month, day, year in parts(match):
                number = int(month[1:]) if month.startswith("#") else MONTHS[month.lower()]
                if (resolved := _resolve(today, number, int(day), year)) is not None:
                    days.append(resolved)
            if days:
                taken[match.start() : match.end()] = [True] * (match.end() - match.start())
                found.append((match.start(), match.end(), days))
    return found


_RELATIVE = re.compile(
    rf"\b(?:(day after tomorrow)|(tomorrow)|(today|tonight)|in\s+({_NUM})\s+(days?|weeks?)"
    rf"|(next week)|(?:(next|this|on|coming)\s+)?({'|'.join(WEEKDAYS)})|(next month))\b",
    re.I,
)


_DATE_FOLLOWS = re.compile(rf",?\s*(?:the\s+)?\d|,?\s*(?:{_MONTH})\b", re.I)


def _relative(text: str, today: date) -> list[tuple[int, int, list[date]]]:
    found = []
    for m in _RELATIVE.finditer(text):
        if m[8] and _DATE_FOLLOWS.match(text[m.end() :]):
            continue  # "Friday the 16th of May": the date says it
        if m[1]:
            day = today + timedelta(days=2)
        elif m[2]:
            day = today + timedelta(days=1)
        elif m[3]:
            day = today
        elif m[4]:
            count = int(m[4]) if m[4].isdigit() else NUMBERS[m[4].lower()]
            day = today + timedelta(days=count * (7 if m[5].lower().startswith("week") else 1))
        elif m[6]:
            day = today + timedelta(days=7)
        elif m[8]:
            ahead = (WEEKDAYS.index(m[8].lower()) - today.weekday()) % 7 or 7
            if (m[7] or "").lower() == "next" and ahead < 7:
                ahead += 7 if ahead <= 2 else 0
            day = today + timedelta(days=ahead)
        else:
            day = (today.replace(day=1) + timedelta(days=32)).replace(day=1)
        found.append((m.start(), m.end(), [day]))
    return found


def _day_only(text: str, month_of: date | None, today: date) -> list[tuple[int, int, list[date]]]:
    """ "back the 9th": a day of the month the trip starts in (or the next month)."""
    found = []
    base = month_of or today
    for m in re.finditer(
        r"\bthe\s+(\d{1,2})(?:st|nd|rd|th)\b(?!\s+(?:of\s+)?\w*\s*(?:" + _MONTH + "))", text, re.I
    ):  # noqa: E501
        try:
            day = base.replace(day=int(m[1]))
        except ValueError:
            continue
        if day < base:
            day = (base.replace(day=1) + timedelta(days=32)).replace(day=int(m[1]))
        found.append((m.start(), m.end(), [day]))
    return found


def _read_dates(trip: Trip, text: str, today: date, index: int) -> str:
    """Read the dates of one message; return the text without them (for the durations)."""
    spans = _month_days(text, today)
    spans += [s for s in _relative(text, today) if not _overlaps(s, spans)]
    month_of = min((d for _, _, days in spans for d in days), default=trip.depart)
    spans += [s for s in _day_only(text, month_of, today) if not _overlaps(s, spans)]
    mentions = []
    for start, _, days in sorted(spans, key=lambda s: s[0]):
        role = _role(text[max(0, start - 28) : start])
        if len(days) == 2:
            mentions += [_Mention(start, days[0], "depart"), _Mention(start, days[1], "back")]
        else:
            mentions.append(_Mention(start, days[0], role))
    _assign(trip, mentions, index)
    for start, end, _ in sorted(spans, key=lambda s: -s[0]):
        text = text[:start] + " " + text[end:]
    return text


def _overlaps(span: tuple[int, int, Any], spans: list[tuple[int, int, Any]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end, _ in spans)


def _role(before: str) -> str | None:
    if _BACK_WORDS.search(before):
        return "back"
    if _OUT_WORDS.search(before):
        return "depart"
    return None


def _assign(trip: Trip, mentions: list[_Mention], index: int) -> None:
    depart = next((m.day for m in mentions if m.role == "depart"), None)
    back = next((m.day for m in mentions if m.role == "back"), None)
    loose = [m.day for m in mentions if m.role is None]
    if depart is None and loose:
        if back is None and len(loose) == 1 and _is_return(trip, loose[0], index):
            back = loose.pop(0)
        else:
            depart = loose.pop(0)
    if back is None and loose:
        back = loose.pop(0)
    if depart is not None:
        _set(trip, "depart", depart, index)
    if back is not None:
        _set(trip, "back", back, index)
        trip.said["back_date"] = index


def _is_return(trip: Trip, day: date, index: int) -> bool:
    """One new date, no word saying which: the return if the stay's end is all that is missing."""
    return (
        trip.depart is not None
        and day > trip.depart
        and "back_date" not in trip.said
        and "days" not in trip.said
    )


_DAYS = re.compile(
    rf"\b({_NUM})\s*-?\s*(nights?|days?|dys|weeks?)\b|\b(a|one)\s+(fortnight)\b"
    r"|\b(?:for|over)\s+(?:the|a)\s+(weekend)\b|\b(?:for|a)\s+(week)\b",
    re.I,
)


def read_days(text: str) -> int | None:
    """The length of the stay in days (nights), if the text gives one."""
    found = None
    for m in _DAYS.finditer(text):
        if m[1]:
            count = int(m[1]) if m[1].isdigit() else NUMBERS[m[1].lower()]
            found = count * (7 if m[2].lower().startswith("week") else 1)
        elif m[4]:
            found = 14
        elif m[5]:
            found = 2
        elif m[6]:
            found = 7
    return found


def _complete_dates(trip: Trip) -> None:
    """Two dates give the length; a date and a length give the other date (latest wins)."""
    days_at, back_at = trip.said.get("days", -1), trip.said.get("back_date", -1)
    if trip.depart is not None and trip.days is not None and days_at >= back_at:
        trip.back = trip.depart + timedelta(days=trip.days)
    elif trip.depart is None and trip.back is not None and trip.days is not None:
        trip.depart = trip.back - timedelta(days=trip.days)
    if trip.depart is not None and trip.back is not None and trip.back <= trip.depart:
        trip.back = None  # a return before departure: ask again rather than guess


# -- travellers, class, budget -------------------------------------------------------------

_ADULTS = [
    (re.compile(rf"\b({_NUM})\s+(?:adults?|people|persons?|pax|travell?ers?|guests?|of us)\b",
                re.I), None),
    (re.compile(rf"\b(?:family|party|group) of\s+({_NUM})\b", re.I), None),
    (re.compile(rf"\b(?:we are|we're|we will be|we'll be|there are|there will be)\s+({_NUM})\b",
                re.I), None),
    (re.compile(r"\b(?:me and my|my \w+ and i|me and a|with my)\s+\w+", re.I), 2),
    (re.compile(r"\b(?:couple|the two of us|both of us)\b", re.I), 2),
    (re.compile(r"\b(?:just me|only me|solo|alone|by myself|on my own|just myself|"
                r"one person|1 person)\b", re.I), 1),
]  # fmt: skip


def read_adults(text: str) -> int | None:
    """How many travel, if the text says."""
    for pattern, fixed in _ADULTS:
        if m := pattern.search(text):
            if fixed is not None:
                return fixed
            value = m[1].lower()
            return int(value) if value.isdigit() else NUMBERS[value]
    return None


def read_class(text: str) -> str | None:
    """The cabin class in PicoFlow's spelling (``BUSINESS``), if the text names one."""
    lower = text.lower()
    if re.search(r"\bfirst[\s-]class\b", lower):
        return "FIRST"
    if re.search(r"\bpremium economy\b", lower):
        return "PREMIUM_ECONOMY"
    if re.search(r"\b(?:business|buisness|bussiness|busines|bizness)\b", lower):
        return "BUSINESS"
    if re.search(r"\b(?:economy|coach|econ)\b", lower):
        return "ECONOMY"
    return None


_AMOUNT = r"[$€£]?\s*(\d[\d,]*(?:\.\d+)?)\s*(k\b)?"
_BUDGET = [
    re.compile(
        r"\b(?:budget|spend|max(?:imum)?|up to|under|below|no more than|less than|within|cap)"
        rf"\b(?:\s+(?:is|of|at|around|about|roughly|approx\.?|total|:))*\s*{_AMOUNT}",
        re.I,
    ),
    re.compile(r"[$€£]\s*(\d[\d,]*(?:\.\d+)?)\s*(k\b)?", re.I),
    re.compile(rf"\b{_AMOUNT}\s*(?:euros?|eur|dollars?|usd|bucks|pounds|gbp)\b", re.I),
]


def read_budget(text: str) -> float | None:
    """The total budget, if the text gives one ("budget 3000", "$2,500", "under 2k")."""
    for pattern in _BUDGET:
        if m := pattern.search(text):
            value = float(m[1].replace(",", ""))
            return value * 1000 if m[2] else value
    return None
