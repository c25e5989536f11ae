"""Which package a traveller means: by name, by number, or by what is in it.

``choose(text, packages)`` returns the package the text picks, or None when it picks none or
is a question ("what's the difference?"); ``answer`` replies to such a question. A cue that
fits several packages is no choice; "not the premium one" takes the premium one out.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from demo.travel.offer import offer

_ORDINALS = {
    "1": 0, "one": 0, "first": 0, "1st": 0, "2": 1, "two": 1, "second": 1, "2nd": 1,
    "3": 2, "three": 2, "third": 2, "3rd": 2,
}  # fmt: skip
_COMMIT = re.compile(
    r"\b(?:take|book|go with|go for|choose|pick|want|i'?ll have|let'?s do|let'?s go|"
    r"sounds good|please|pls|plz|i'?d like|we'?ll|i'?ll|reserve|select|opt for|prefer)\b",
    re.I,
)
_ASKING = re.compile(
    r"\b(?:what|which|how|why|does|do|is|are|can you|could you|difference|compare|"
    r"tell me more|explain|included|include)\b",
    re.I,
)
_CHEAP = re.compile(
    r"\b(?:cheapest|cheaper|lowest|least expensive|budget[- ]friendly|affordable|low[- ]cost|"
    r"economical|inexpensive|most basic|cheap)\b",
    re.I,
)
_DEAR = re.compile(
    r"\b(?:most expensive|priciest|luxur\w*|fanciest|fancy|top|best|high[- ]end|deluxe|"
    r"splurge|poshest|most premium)\b",
    re.I,
)
_MIDDLE = re.compile(r"\b(?:middle|mid[- ]?range|medium|in[- ]between|moderate)\b", re.I)
_NEGATED = re.compile(
    r"\b(?:not|no|don'?t want|dont want|rather than|instead of|except)\s+(?:the\s+)?"
    r"([\w-]+)(?:\s+one)?",
    re.I,
)
_NUMBER = re.compile(
    r"(?:\b(?:option|package|number|no\.?|#|choice|pick)\s*(1|2|3|one|two|three)\b)"
    r"|(?:\b(first|second|third|1st|2nd|3rd)\b(?![\s-]class))"
    r"|(?:(?<![\d$€£.,])\b([123])\b(?![\d,.%]|\s*(?:nights|days|adults|people|stars?|of us"
    r"|travell?ers|guests|persons|pax|kids|children|weeks?)))"
    r"|(?:^\s*(one|two|three)\b)",
    re.I,
)
_GENERIC = {"trip", "package", "the", "and", "of"}


def choose(text: str, packages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The package `text` picks, or None."""
    if not packages:
        return None
    if _is_question(text):
        return None
    kept = _NEGATED.sub(" ", text)
    excluded = _by_name(_negated_words(text), packages)
    for cue in (
        _by_name(kept, packages),
        _by_number(kept, packages),
        _by_description(kept, packages),
        _by_content(kept, packages),
    ):  # noqa: E501
        left = [i for i in cue if i not in excluded] if len(cue) > 1 or cue - excluded else cue
        if len(set(left)) == 1:
            return packages[next(iter(left))]
    if excluded and len(packages) - len(excluded) == 1:
        return next(p for i, p in enumerate(packages) if i not in excluded)
    return None


def _is_question(text: str) -> bool:
    if "?" not in text:
        return bool(re.match(r"^\s*(?:what|which|how|why)\b", text, re.I)) and not _COMMIT.search(
            text
        )
    return not _COMMIT.search(text) or bool(
        re.search(r"\b(?:difference|compare|included|include)\b", text, re.I)
    )


def _negated_words(text: str) -> str:
    return " ".join(m.group(1) for m in _NEGATED.finditer(text))


def _name_words(package: dict[str, Any], packages: list[dict[str, Any]]) -> set[str]:
    """Words of this package's name that no other package's name has."""
    mine = set(re.findall(r"[a-z]+", str(package.get("name", "")).lower()))
    others = set()
    for other in packages:
        if other is not package:
            others |= set(re.findall(r"[a-z]+", str(other.get("name", "")).lower()))
    return mine - others - _GENERIC


def _by_name(text: str, packages: list[dict[str, Any]]) -> set[int]:
    words = set(re.findall(r"[a-z]+", text.lower()))
    found = set()
    for index, package in enumerate(packages):
        if any(_close(word, name) for name in _name_words(package, packages) for word in words):
            found.add(index)
    if re.search(r"\bbudget\b(?!\s+(?:of|is|was))", text, re.I) and not found:
        found |= {i for i, p in enumerate(packages) if "budget" in str(p.get("name")).lower()}
    return found


def _close(word: str, name: str) -> bool:
    """The word, or a typo of it ("premuim", "balenced") for words of five letters or more."""
    if word == name:
        return True
    return len(name) >= 5 and difflib.SequenceMatcher(None, word, name).ratio() >= 0.8


def _by_number(text: str, packages: list[dict[str, Any]]) -> set[int]:
    found = set()
    for match in _NUMBER.finditer(text):
        word = next(group for group in match.groups() if group)
        index = _ORDINALS[word.lower()]
        if index < len(packages):
            found.add(index)
    if re.search(r"\b(?:last|final)\b(?:\s+one)?", text, re.I):
        found.add(len(packages) - 1)
    return found


def _by_description(text: str, packages: list[dict[str, Any]]) -> set[int]:
    totals = [float(p.get("total_cost") or 0) for p in packages]
    found = set()
    if _CHEAP.search(text):
        found.add(totals.index(min(totals)))
    if _DEAR.search(text):
        found.add(totals.index(max(totals)))
    if _MIDDLE.search(text) and len(packages) == 3:
        found.add(sorted(range(3), key=lambda i: totals[i])[1])
    return found


def _by_content(text: str, packages: list[dict[str, Any]]) -> set[int]:
    """Packages whose hotel, airline, location or activities the text names (unique ones)."""
    lower = text.lower()
    found = set()
    for index, package in enumerate(packages):
        for phrase in _phrases(package):
            if phrase in lower and not any(
                phrase in _phrases(other) for other in packages if other is not package
            ):
                found.add(index)
    stars = re.search(r"\b(\d(?:\.\d)?)[\s-]*stars?\b", lower)
    if stars:
        rating = float(stars.group(1))
        found |= {
            i for i, p in enumerate(packages) if (p.get("hotel") or {}).get("rating") == rating
        }
    return found


def _phrases(package: dict[str, Any]) -> list[str]:
    hotel, flight = package.get("hotel") or {}, package.get("flight") or {}
    phrases = [str(hotel.get("name", "")).lower(), str(hotel.get("location", "")).lower()]
    phrases += [str(a.get("name", "")).lower() for a in package.get("activities") or []]
    phrases += [part.strip().lower() for part in str(flight.get("airline", "")).split("/")]
    return [p for p in phrases if p]


def asks(text: str) -> bool:
    """Whether `text` asks about the packages rather than choosing one."""
    return _is_question(text)


def answer(text: str, packages: list[dict[str, Any]], plan: dict[str, Any]) -> str:
    """A reply to a question about the packages, ending with the request to choose."""
    lines = ["Here is what each package includes:"]
    lines += [f"{n}. {offer(p, plan)}" for n, p in enumerate(packages, 1)]
    lines.append("Which one would you like to book?")
    return "\n".join(lines)
