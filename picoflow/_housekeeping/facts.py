"""The dropped-fact check: which hard values a new summary lost.

After each summary, every number, date, time, e-mail address, URL and identifier-like token of the
evicted messages should still be findable in the new summary or in some step's durable state.
The ones that are not are reported as a warning ("summary dropped: ...") and counted on the
namespace. The check never blocks a compaction: the evicted messages are archived either way
(M9); it tells you which values the model can no longer see.

It is a heuristic, tuned against false alarms:

- Framework text is not scanned: the system slot is never evicted, tool results that report an
  error (R6) are skipped, and tool-call ids and message ids are ignored wherever they appear.
- Matching is lenient: case-insensitive, "1,200" equals "1200" and "1200.00", a number written
  as a word ("two") counts, a date counts in any of the forms below, and a value found inside a
  longer token of the summary (4821 in "BK-4821") counts.
- Dates are recognised as ISO (2025-03-14), "14 March 2025" and "March 14th"; a date is found if
  the summary names the same month and day in any of those forms.

>>> from langchain_core.messages import HumanMessage
>>> said = [HumanMessage("Book BK-4821 for 2 nights from 2025-03-14, mail ana@example.com")]
>>> dropped_facts(said, "Booking BK-4821: two nights from 14 March.", [])
['ana@example.com']
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

__all__ = ["dropped_facts", "MAX_LISTED"]

MAX_LISTED = 12  # values named in one warning; the count on the namespace includes all of them

_MONTHS = (
    "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    "|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"'()\[\]{}]+", re.I)
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ][\d:.]+(?:Z|[+-]\d\d:?\d\d)?)?\b")
_DAY_MONTH = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTHS})\b\.?(?:,?\s+\d{{4}}\b)?", re.I
)
_MONTH_DAY = re.compile(
    rf"\b({_MONTHS})\b\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}}\b)?", re.I
)
_MONTH_PREFIXES = tuple("jan feb mar apr may jun jul aug sep oct nov dec".split())
_TIME = re.compile(r"\b\d{1,2}:\d{2}\b")
_TOKEN = re.compile(r"\b[A-Za-z0-9](?:[\w-]*[A-Za-z0-9])?\b")
_UNIT = re.compile(r"\d+(?:[.,]\d+)?[A-Za-z]{1,3}")  # 2nd, 3pm, 5km, 300eur: a number
_NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\w.,])\d+(?:\.\d+)?")
_ANY_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_WORDS) + r")\b")


def dropped_facts(
    evicted: Iterable[BaseMessage], summary: str, states: Iterable[dict[str, Any]]
) -> list[str]:
    """Values of `evicted` found neither in `summary` nor in any of `states`, in order."""
    messages = list(evicted)
    ignored = _framework_ids(messages)
    facts: dict[str, str] = {}
    for message in messages:
        for key, raw in _facts_in(_scanned_text(message)):
            if raw.lower() not in ignored:
                facts.setdefault(key, raw)
    if not facts:
        return []
    kept = _Corpus(summary + "\n" + json.dumps(list(states), default=str))
    return [raw for key, raw in facts.items() if not kept.has(key, raw)]


def _framework_ids(messages: list[BaseMessage]) -> set[str]:
    """Ids picoflow or the provider generated: never facts of the conversation."""
    ids = {str(m.id).lower() for m in messages if m.id}
    for message in messages:
        ids.update(str(c.get("id")).lower() for c in getattr(message, "tool_calls", []) or [])
        if isinstance(message, ToolMessage):
            ids.add(str(message.tool_call_id).lower())
    return ids


def _scanned_text(message: BaseMessage) -> str:
    if isinstance(message, ToolMessage) and message.status == "error":
        return ""  # R6 error text is ours (validation errors carry URLs and numbers)
    text = str(message.text)
    if isinstance(message, AIMessage):
        args = [json.dumps(call.get("args") or {}, default=str) for call in message.tool_calls]
        text = " ".join([text, *args])
    return text


def _facts_in(text: str) -> list[tuple[str, str]]:
    """(key, raw) pairs in text order; each match is blanked so a date's digits are not numbers."""
    found: list[tuple[int, str, str]] = []

    def take(pattern: re.Pattern[str], keyer: Any) -> None:
        nonlocal text

        def blank(match: re.Match[str]) -> str:
            key = keyer(match)
            if key is None:
                return match.group(0)
            found.append((match.start(), key, match.group(0).rstrip(".,;:!?")))
            return " " * len(match.group(0))

        text = pattern.sub(blank, text)

    take(_URL, lambda m: "url:" + _bare_url(m.group(0)))
    take(_EMAIL, lambda m: "email:" + m.group(0).lower())
    for pattern in (_ISO_DATE, _DAY_MONTH, _MONTH_DAY):
        take(pattern, _date_key)
    take(_TIME, lambda m: "time:" + m.group(0))
    take(_TOKEN, _identifier_key)
    take(_NUMBER, lambda m: "number:" + _canonical(m.group(0)))
    return [(key, raw) for _, key, raw in sorted(found)]


def _bare_url(url: str) -> str:
    bare = re.sub(r"^(?:https?://)?(?:www\.)?", "", url.lower())
    return bare.rstrip(".,;:!?/")


def _identifier_key(match: re.Match[str]) -> str | None:
    token = match.group(0)
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    if len(token) < 3 or not (has_digit and has_letter) or _UNIT.fullmatch(token):
        return None
    return "id:" + token.lower()


def _date_key(match: re.Match[str]) -> str | None:
    """`date:MM-DD` for any recognised date form; None for an impossible one."""
    groups = match.groups()
    if match.re is _ISO_DATE:
        month, day = int(groups[1]), int(groups[2])
    elif match.re is _DAY_MONTH:
        month, day = _month(groups[1]), int(groups[0])
    else:
        month, day = _month(groups[0]), int(groups[1])
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return None
    return f"date:{month:02d}-{day:02d}"


def _month(name: str) -> int:
    return _MONTH_PREFIXES.index(name[:3].lower()) + 1


def _canonical(number: str) -> str:
    """1,200 / 1200 / 1200.00 -> "1200"; anything unparsable is kept as written."""
    try:
        value = Decimal(number.replace(",", "")).normalize()
    except InvalidOperation:
        return number
    return format(value, "f")


class _Corpus:
    """What was kept: the new summary and every step's durable state, indexed for lookups."""

    def __init__(self, text: str) -> None:
        self.text = text.lower()
        self.numbers = {_canonical(n) for n in _ANY_NUMBER.findall(self.text)}
        self.numbers |= {_canonical(n) for n in re.findall(r"\d+(?:\.\d+)?", self.text)}
        self.numbers |= {str(_WORDS.index(w)) for w in _NUMBER_WORD.findall(self.text)}
        self.dates = {key for key, _ in _facts_in(self.text) if key.startswith("date:")}

    def has(self, key: str, raw: str) -> bool:
        kind, _, value = key.partition(":")
        if kind == "number":
            return value in self.numbers
        if kind == "date":
            return key in self.dates or raw.lower() in self.text
        if kind == "url":
            return value in self.text
        return raw.lower() in self.text
