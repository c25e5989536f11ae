"""What every stage of the offline model reads the same way: numbers and money, yes and no,
questions, a wish to stop, negation ("no pool, trampoline or wood stove") and sensitive data.

The readers look for what a person says, in their words, and never guess: a value that could
belong to two fields is left for a question.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

NUMBER_WORDS = {
    "zero": 0,
    "no": 0,
    "none": 0,
    "a": 1,
    "an": 1,
    "one": 1,
    "single": 1,
    "two": 2,
    "double": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
    "twenty": 20,
    "thirty": 30,
    "forty": 40,
    "fifty": 50,
}
_COUNT = r"\d+|" + "|".join(sorted((w for w in NUMBER_WORDS if len(w) > 2), key=len, reverse=True))
COUNT = re.compile(rf"\b({_COUNT})\b", re.IGNORECASE)

_MONEY = re.compile(
    r"(?<![\w.])(?P<dollar>\$\s?)?(?P<number>\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)\s*"
    r"(?P<scale>k\b|thousand\b|grand\b|m\b|mil\b|million\b|mm\b)?",
    re.IGNORECASE,
)
_WORD_MONEY = re.compile(
    r"\b(?:(?P<half>half\s+a)|(?P<one>a|one))\s+(?P<scale>million|mil)\b|\b(?P<quarter>a\s+quarter"
    r"\s+(?:of\s+a\s+)?million)\b",
    re.IGNORECASE,
)
_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|ya|yea|sure|ok(?:ay)?|k|alright|all\s+right|correct|right|"
    r"absolutely|definitely|of\s+course|please(?:\s+do)?|go\s+ahead|sounds\s+good|that'?s\s+"
    r"(?:right|correct|fine|good)|fine|perfect|great|confirm(?:ed)?|affirmative|y)\b",
    re.IGNORECASE,
)
_NO = re.compile(
    r"^\W*(?:no|none|nope|nah|no\s+thanks?|no\s+thank\s+you|not\s+(?:really|now|at\s+all|interested)"
    r"|negative|never|n)\b(?!\s*(?:wait|problem|worries))",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"\?\s*$|^\W*(?:what|why|how|which|who|when|where|is|are|do|does|did|can|could|would|will|"
    r"should|may|am)\b(?!.*\b(?:please|pls)\b)",
    re.IGNORECASE,
)
_STOP = re.compile(
    r"\b(?:stop|cancel|quit|exit|abort|end\s+(?:this|it|the\s+(?:chat|quote|conversation))|"
    r"never\s*mind|forget\s+(?:it|about\s+it)|not\s+interested|no\s+longer\s+(?:want|need|"
    r"interested)|(?:good)?bye|i'?m\s+(?:done|out)|that'?s\s+(?:all|it)\s+for\s+(?:now|today)|"
    r"don'?t\s+want\s+(?:a|the|to\s+(?:continue|go\s+on))|call\s+it\s+a\s+day)\b",
    re.IGNORECASE,
)
_SENSITIVE = re.compile(
    r"\b\d{3}-\d{2}-\d{4}\b|\bsocial\s+security|\bssn\b|\b(?:credit|debit|payment)\s+card|"
    r"\bcard\s+(?:number|no)|\b(?:\d[ -]?){15,16}\b|\bbank\s+(?:account|details|routing)|"
    r"\brouting\s+number|\bdate\s+of\s+birth|\bdob\b|\bborn\s+(?:on|in)\b|\bmy\s+birthday",
    re.IGNORECASE,
)
_NEGATOR = re.compile(
    r"\b(?:no|not|none|without|neither|nor|never|don'?t|doesn'?t|didn'?t|isn'?t|aren'?t|"
    r"haven'?t|hasn'?t|dont|havent|zero)\b|n't\b",
    re.IGNORECASE,
)
_AFFIRM = re.compile(
    r"\b(?:have|has|got|there'?s|there\s+is|yes|yep|yeah|we've|includes?|with|plus|also|but)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[.;!?\n]|,|\bbut\b|\bhowever\b|\balthough\b", re.IGNORECASE)

_OLD_VALUE = re.compile(
    r",?\s*\b(?:not|instead\s+of|rather\s+than)\s+(?:the\s+)?\$?\d[\d,.]*(?:\s*(?:k|grand|years?|"
    r"yrs?|sq\.?\s*ft|square\s+feet|stories))?\b",
    re.IGNORECASE,
)
_ADVERB = re.compile(r"\b(is|it'?s|its|was|are|were)\s+actually\b", re.IGNORECASE)

SENSITIVE_REPLY = (
    "Please don't share that: I never need a Social Security number, a payment card, bank "
    "details or a date of birth for a preliminary quote, and I haven't kept it."
)


@dataclass(frozen=True)
class Amount:
    """A number said in the text, where it was, and whether it was said as money."""

    value: float
    start: int
    end: int
    money: bool  # "$450,000", "450k", "half a million": not a bare count or year


def amounts(text: str) -> list[Amount]:
    """Every number in `text` in order, scaled ("450k" is 450,000, "1.2 million" 1,200,000)."""
    found: list[Amount] = []
    for match in _MONEY.finditer(text):
        number = float(match["number"].replace(",", ""))
        scale = (match["scale"] or "").lower()
        factor = 1_000 if scale in ("k", "thousand", "grand") else 1
        factor = 1_000_000 if scale in ("m", "mil", "million", "mm") else factor
        money = bool(match["dollar"] or scale or "," in match["number"])
        found.append(Amount(number * factor, match.start(), match.end(), money))
    for match in _WORD_MONEY.finditer(text):
        value = 250_000 if match["quarter"] else 500_000 if match["half"] else 1_000_000
        found.append(Amount(value, match.start(), match.end(), True))
    return sorted(found, key=lambda amount: amount.start)


def plain(text: str) -> str:
    """`text` without the value it replaces ("1988, not 1980" is "1988") and without the
    adverb "actually" after a verb ("the roof is actually 30"), which is no correction marker."""
    return _ADVERB.sub(r"\1", _OLD_VALUE.sub("", text))


def fuzzy(text: str, names: Sequence[str], cutoff: float = 0.82) -> list[tuple[int, str]]:
    """The `names` a word of `text` misspells ("oregan" is Oregon, "enhaced" Enhanced), with
    the word's offset; only words of five letters or more, so short words never match."""
    lowered = {name.lower(): name for name in names}
    found = []
    for match in re.finditer(r"[A-Za-z]{5,}", text):
        close = difflib.get_close_matches(match.group().lower(), list(lowered), n=1, cutoff=cutoff)
        if close:
            found.append((match.start(), lowered[close[0]]))
    return found


def whole(value: float) -> int | None:
    """`value` as an int when it is whole."""
    return int(value) if float(value).is_integer() else None


def years(text: str) -> list[tuple[int, int]]:
    """Four-digit years 1800-2100 in `text`, with their positions ("'98" is not read)."""
    return [
        (int(match.group(1)), match.start())
        for match in re.finditer(
            r"(?<![\d,.$])((?:18|19|20)\d\d|2100)(?!\d|,\d|\s*(?:sq|k\b|square))", text
        )
    ]


def count_word(text: str) -> int | None:
    """A small count said as digits or a word ("two", "3")."""
    match = COUNT.search(text)
    if match is None:
        return None
    word = match.group(1).lower()
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word)


def is_yes(text: str) -> bool:
    """A plain yes ("yes", "sure", "sounds good", "that's right")."""
    return _YES.search(text) is not None and not is_no(text)


def is_no(text: str) -> bool:
    """A plain no ("no", "nope", "no thanks", "not now")."""
    return _NO.search(text) is not None


def is_question(text: str) -> bool:
    """Whether `text` asks something (a question mark, or a question word first)."""
    return _QUESTION.search(text.strip()) is not None


def wants_to_stop(text: str) -> bool:
    """Whether the customer wants to stop the quote ("cancel", "never mind", "bye")."""
    return _STOP.search(text) is not None


def has_sensitive(text: str) -> bool:
    """Whether `text` holds or offers data this flow never takes (SSN, card, bank, birth date)."""
    return _SENSITIVE.search(text) is not None


def clauses(text: str) -> Iterator[tuple[int, str]]:
    """The clauses of `text` with their offsets: split at punctuation, commas and "but"."""
    position = 0
    for match in _CLAUSE.finditer(text):
        yield position, text[position : match.start()]
        position = match.end()
    yield position, text[position:]


def polarity(text: str, keyword: re.Pattern[str]) -> dict[int, bool]:
    """Each match of `keyword` in `text` (by offset), True when affirmed, False when negated.

    A negator before it in its clause negates it ("no trampoline"); a clause naming only the
    item carries the previous clause's polarity ("no pool, trampoline or wood stove": all three
    negated; "we have a pool, trampoline too": both affirmed).
    """
    result: dict[int, bool] = {}
    carried = True
    for offset, clause in clauses(text):
        hits = list(keyword.finditer(clause))
        if not hits:
            said = _said(clause)
            carried = carried if said is None else said
            continue
        for hit in hits:
            before = clause[: hit.start()]
            said = _said(before)
            state = carried if said is None else said
            if re.match(r"\s*[:=-]?\s*(?:no|none|nope|n)\b", clause[hit.end() :], re.I):
                state = False  # "pool: no"
            elif re.match(r"\s*[:=-]?\s*(?:yes|yep|y)\b", clause[hit.end() :], re.I):
                state = True
            result[offset + hit.start()] = state
            carried = state
    return result


def _said(text: str) -> bool | None:
    """Whether `text` ends affirming (True), negating (False) or neither (None); "don't have"
    negates: an affirming verb right after a negator belongs to it."""
    negators = list(_NEGATOR.finditer(text))
    affirms = [
        a
        for a in _AFFIRM.finditer(text)
        if not _NEGATOR.search(text[max(0, a.start() - 12) : a.start()])
    ]
    if not negators and not affirms:
        return None
    if not affirms:
        return False
    return not negators or affirms[-1].start() > negators[-1].start()
