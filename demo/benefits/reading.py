"""How the benefits offline model reads an employee's words: the pieces every stage shares.

Dates (`dates_in`: ISO, US numeric, month names, "yesterday", "3 days ago"; a numeric date
that reads two ways raises `Ambiguous`), money (`amounts_in`: "$2,500", "2.5k", "two
thousand"), yes and no, a wish to stop, a question, and the stage's messages in the order
said, corrections applied and a withdrawn part marked (`said_in_stage`), so no stage acts on a
choice taken back.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from demo.reading import corrections

MONTHS = (
    "january february march april may june july august september october november december"
).split()
_MONTH = r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"  # noqa: E501
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_ISO = re.compile(r"(?<!\d)(?P<year>\d{4})-(?P<month>\d{1,2})-(?P<day>\d{1,2})(?!\d)")
_NUMERIC = re.compile(
    r"(?<![\d/.-])(?P<a>\d{1,2})[/.-](?P<b>\d{1,2})(?:[/.-](?P<year>\d{4}|\d{2}))?(?![\d/-])"
)
_NAMED = (
    re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}\b(?:,?\s*{_YEAR})?", re.I),
    re.compile(rf"\b(?:the\s+)?{_DAY}(?:\s+of)?\s+{_MONTH}\b(?:,?\s*{_YEAR})?", re.I),
)
_NUMBER_WORDS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "hundred": 100,
}  # fmt: skip
_AGO = re.compile(
    r"\b(?P<n>\d+|a|an|one|two|three|four|five|six|seven|ten|twelve|twenty|thirty)\s+"
    r"(?P<unit>days?|weeks?)\s+ago\b",
    re.I,
)
_WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday".split()

_YES = re.compile(
    r"^\W*(?:yes|yeah|yep|yup|ya|yea|sure|correct|right|ok(?:ay)?|absolutely|definitely|"
    r"of course|affirmative|please do|go ahead|sounds good|that'?s (?:right|correct)|y)\b",
    re.I,
)
_NO = re.compile(r"^\W*(?:no|nope|nah|negative|not really|n)\b(?!\s+(?:wait|problem))", re.I)
_END = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|actually|um+|hmm+|sorry|please|no|nah)\W+)*(?:stop|quit|exit|cancel|"
    r"end|abort|bye|goodbye)(?:\s+(?:it|this|everything|now|please|the\s+(?:enrollment|chat|"
    r"session|whole\s+thing)|my\s+enrollment|enrolling|for\s+now))*\W*$"
    r"|\b(?:i\s+(?:want|would\s+like|'d\s+like|need)\s+to\s+(?:stop|quit|cancel|end|exit|leave)"
    r"|let'?s\s+(?:stop|end|quit)|(?:stop|cancel|end|quit)\s+(?:the|this|my)\s+(?:enrollment|"
    r"chat|session|whole\s+thing|process)|i'?m\s+done\s+(?:here|for\s+now|with\s+this)|"
    r"forget\s+(?:it|the\s+whole\s+thing)|i\s+(?:don'?t|do\s+not)\s+want\s+to\s+(?:enroll|"
    r"continue|do\s+this)|not\s+(?:enrolling|interested)\b|(?:good)?bye\b|nevermind\b|"
    r"never\s+mind(?:\W*$|,?\s+(?:i'?ll|bye|forget)))",
    re.I,
)
_QUESTION = re.compile(
    r"^\W*(?:what|whats|what's|how|why|which|who|when|where|is|are|does|do|did|can|could|"
    r"would|will|should|tell me|explain)\b",
    re.I,
)
_REQUEST = re.compile(
    r"^\W*(?:can|could|would|will)\s+(?:you|i|we)\s+(?:please\s+)?(?:get|have|take|go|enroll|"
    r"sign|choose|pick|select|put|do|submit|use|add|elect|set|make|change|switch|keep)\b",
    re.I,
)


class Ambiguous(Exception):
    """A value that reads two ways ("03/04/2026"); the model asks instead of choosing."""

    def __init__(self, said: str, readings: list[str]) -> None:
        super().__init__(said)
        self.said = said
        self.readings = readings


@dataclass(frozen=True)
class Said:
    """One part of what the employee said, in order; `withdrawn` parts take a choice back."""

    text: str
    message: int
    withdrawn: bool = False


def human_texts(messages: list[BaseMessage], opener: str | None) -> list[str]:
    """The employee's messages of this stage: after the stage's opener, openers left out."""
    start = 0
    if opener is not None:
        for index, message in enumerate(messages):
            if isinstance(message, HumanMessage) and message.text == opener:
                start = index + 1
    return [
        message.text
        for message in messages[start:]
        if isinstance(message, HumanMessage) and not message.additional_kwargs.get("origin")
    ]


def said_in_stage(texts: list[str]) -> list[Said]:
    """Every message as its parts, corrections amended in, withdrawn parts marked."""
    out: list[Said] = []
    for index, text in enumerate(texts):
        earlier = [said.text for said in out]
        for part in corrections.expand([text], earlier):
            out.append(Said(part, index, corrections.withdrawn(part)))
    return out


def last_ai_text(messages: list[BaseMessage]) -> str:
    """What the assistant said last in this namespace ("" when nothing)."""
    for message in reversed(messages):
        if isinstance(message, AIMessage) and message.text:
            return message.text
    return ""


def is_yes(text: str) -> bool:
    """A plain yes ("yes", "sure", "ok go ahead")."""
    return bool(_YES.match(text)) and not is_no(text)


def is_no(text: str) -> bool:
    """A plain no ("no", "nope", "nah")."""
    return bool(_NO.match(text))


def wants_to_stop(text: str) -> bool:
    """A clear wish to stop the enrollment ("cancel", "I want to stop", "bye")."""
    return bool(_END.search(text))


def is_question(text: str) -> bool:
    """A question rather than a request ("what is EOI?", not "can you enroll me in the PPO?")."""
    said = text.strip()
    if _REQUEST.match(said):
        return False
    return said.endswith("?") or bool(_QUESTION.match(said))


def _year_of(text: str | None) -> int | None:
    if text is None:
        return None
    number = int(text)
    return number + 2000 if len(text) == 2 else number


def _named_month(name: str) -> int:
    key = name.lower().rstrip(".")[:3]
    return next(i + 1 for i, month in enumerate(MONTHS) if month.startswith(key))


def _make(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _nearest(month: int, day: int, today: date) -> date | None:
    """A day without a year: the one of last year, this year or next year nearest today."""
    found = [d for y in (today.year - 1, today.year, today.year + 1) if (d := _make(y, month, day))]
    return min(found, key=lambda d: abs((d - today).days)) if found else None


def dates_in(text: str, today: date | None = None) -> list[tuple[int, date]]:
    """Every date of `text` with its position, in order. Without `today`, a date needs a year.

    Raises:
        Ambiguous: a numeric date whose day and month could swap ("03/04/2026").
    """
    found: list[tuple[int, date]] = []
    taken: list[range] = []
    candidates = [*_iso(text), *_named(text, today)]
    candidates += [
        (match.start(), match.end(), _numeric(match, today))
        for match in _NUMERIC.finditer(text)
        if not any(match.start() in range(s, e) for s, e, _ in candidates)
    ]
    if today is not None:
        candidates += _relative(text, today)
    for start, end, day in candidates:
        if day is not None and not any(start in span for span in taken):
            found.append((start, day))
            taken.append(range(start, end))
    return sorted(found, key=lambda item: item[0])


def _iso(text: str) -> list[tuple[int, int, date | None]]:
    return [
        (m.start(), m.end(), _make(int(m["year"]), int(m["month"]), int(m["day"])))
        for m in _ISO.finditer(text)
    ]


def _named(text: str, today: date | None) -> list[tuple[int, int, date | None]]:
    out: list[tuple[int, int, date | None]] = []
    for pattern in _NAMED:
        for match in pattern.finditer(text):
            month, number = _named_month(match["mon"]), int(match["day"])
            year = _year_of(match["year"])
            if year is not None:
                out.append((match.start(), match.end(), _make(year, month, number)))
            elif today is not None:
                out.append((match.start(), match.end(), _nearest(month, number, today)))
    return out


def _numeric(match: re.Match[str], today: date | None) -> date | None:
    a, b, year = int(match["a"]), int(match["b"]), _year_of(match["year"])
    if year is None and today is None:
        return None
    if a <= 12 and b <= 12 and a != b:
        first = date(year, a, b) if year else _nearest(a, b, today)  # type: ignore[arg-type]
        second = date(year, b, a) if year else _nearest(b, a, today)  # type: ignore[arg-type]
        raise Ambiguous(match.group(0), [day.isoformat() for day in (first, second) if day])
    month, day = (a, b) if a <= 12 else (b, a)
    if year is None:
        return _nearest(month, day, today)  # type: ignore[arg-type]
    return _make(year, month, day)


def _relative(text: str, today: date) -> list[tuple[int, int, date | None]]:
    said = text.lower()
    found: list[tuple[int, int, date | None]] = []
    for word, offset in (("today", 0), ("yesterday", -1), ("tomorrow", 1)):
        for match in re.finditer(rf"\b{word}\b", said):
            found.append((match.start(), match.end(), today + timedelta(days=offset)))
    for match in _AGO.finditer(said):
        count = int(match["n"]) if match["n"].isdigit() else _NUMBER_WORDS[match["n"]]
        days = count * (7 if match["unit"].startswith("week") else 1)
        found.append((match.start(), match.end(), today - timedelta(days=days)))
    for match in re.finditer(r"\blast\s+(" + "|".join(_WEEKDAYS) + r")\b", said):
        back = (today.weekday() - _WEEKDAYS.index(match[1])) % 7 or 7
        found.append((match.start(), match.end(), today - timedelta(days=back)))
    return found


_AMOUNT = re.compile(
    r"(?<![\w.-])\$?\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)\s?(?P<k>k\b|thousand\b)?"
    r"(?!\s?(?:%|percent|x\b|×|times\b|years?\b|yrs?\b|kids?\b|children\b))",
    re.I,
)
_WORD_THOUSANDS = re.compile(
    r"\b(?P<n>one|two|three|four|five|six|seven|eight|nine|ten|twelve|fifteen|twenty)"
    r"(?:\s+thousand)(?:\s+(?:and\s+)?(?P<h>one|two|three|four|five|six|seven|eight|nine)"
    r"\s+hundred)?\b",
    re.I,
)


def amounts_in(text: str) -> list[float]:
    """The money amounts of `text`, in order ("$2,500", "2.5k", "two thousand", "1500")."""
    found: list[tuple[int, float]] = []
    for match in _AMOUNT.finditer(text):
        value = float(match["num"].replace(",", ""))
        if match["k"]:
            value *= 1000
        if re.fullmatch(r"20[2-3]\d", match["num"]) and "$" not in match.group(0):
            continue  # a year, not an amount
        found.append((match.start(), value))
    for match in _WORD_THOUSANDS.finditer(text):
        value = _NUMBER_WORDS[match["n"].lower()] * 1000.0
        if match["h"]:
            value += _NUMBER_WORDS[match["h"].lower()] * 100
        found.append((match.start(), value))
    return [value for _, value in sorted(found)]
