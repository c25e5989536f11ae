"""Text helpers shared by the language parsers: normalisation and small numbers in words."""

from __future__ import annotations

import re

NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14,
}  # fmt: skip
"""Cardinals guests spell out ("two nights", "the first three")."""

ORDINAL_WORDS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10,
}  # fmt: skip
"""Ordinals used to pick from a presented list ("the second one")."""

NUMBER = r"(?:\d+|" + "|".join(NUMBER_WORDS) + r")"
"""A small count in digits or words, as a regex fragment."""

_SMART_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u2013": "-", "\u2014": "-"})


def normalize(text: str) -> str:
    """Lower-case, straight quotes, plain hyphens, single spaces: one form for every parser."""
    return re.sub(r"\s+", " ", text.translate(_SMART_QUOTES).lower()).strip()


def to_int(token: str) -> int:
    """``"3"`` or ``"three"`` → 3 (the caller's regex guarantees one of the two)."""
    return int(token) if token.isdigit() else NUMBER_WORDS[token]


_NEGATION_BEFORE = re.compile(r"\b(?:no|not|don't|do not|doesn't|without|never|skip)\b[^,;.]*$")
"""A negation word earlier in the same clause: "no pool", "don't need a gym", "without pets"."""

_NEGATION_AFTER = re.compile(
    r"^\W*(?:is|are)?\s*(?:not|isn't|aren't)\s+(?:needed|necessary|required|important)"
)
"""A negation right after the phrase: "pool not needed", "a gym isn't necessary"."""


def negated(clause: str, start: int, end: int) -> bool:
    """Whether the phrase at ``clause[start:end]`` is negated, looking a few words either side."""
    before = clause[max(0, start - 30) : start]
    after = clause[end : end + 30]
    return bool(_NEGATION_BEFORE.search(before) or _NEGATION_AFTER.search(after))
