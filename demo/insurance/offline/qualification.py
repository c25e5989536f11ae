"""QualificationStep's offline model: state and ZIP, then purchase status, occupancy, start date.

A state is a name ("Oregon") or a code written as one ("OR", "portland, or 97201"); the word
"or" in a sentence is no state. A city names no state (Portland is in Oregon and in Maine).
"""

from __future__ import annotations

import re
from typing import Any

from demo.insurance.offline import faq
from demo.insurance.offline.dates import read_date, vague
from demo.insurance.offline.stage import Context, Found, Stage, error_fields
from demo.insurance.offline.words import fuzzy

_CODES = "|".join(faq.STATE_NAMES)
_NAMES = {name.lower(): code for code, name in faq.STATE_NAMES.items()}
_STATE_NAME = re.compile(
    r"\b(" + "|".join(sorted(_NAMES, key=len, reverse=True)) + r")\b", re.IGNORECASE
)
_CODE_BY_ZIP = re.compile(rf"\b({_CODES})\b\.?,?\s*(?=\d{{5}}\b)", re.IGNORECASE)
_CODE = re.compile(rf"(?<![\w'])({_CODES})(?![\w'])")
_WORDS = frozenset({"HI", "IN", "ME", "OK", "OR", "OH", "ID", "PA", "MA", "AL", "LA", "DE", "MO"})
"""State codes that are also words: said alone in lower case, they are the word, not the state."""
_ZIP = re.compile(r"(?<![\d$,.\-/])(\d{5})(?:-\d{4})?(?!\d|,\d|/|\s*(?:sq|k\b|dollars))")
_SHORT_ZIP = re.compile(r"(?<![\d$,.])\d{4}(?!\d)|(?<![\d$,.])\d{6,9}(?!\d)")

_PURCHASE = [
    ("refinancing", r"\brefi(?:nanc\w*)?\b"),
    (
        "buying",
        r"\b(?:buying|purchas\w*|closing|under contract|about to buy|going to buy|"
        r"in escrow|making an offer|new purchase|plan(?:ning)? to buy)\b",
    ),
    (
        "own",
        r"\b(?:own|owned|owner|homeowners?|already own|paid off|bought|have a mortgage|"
        r"it'?s mine|we own it|i own it)\b",
    ),
]
_OCCUPANCY = [
    (
        "secondary",
        r"\b(?:secondary|second home|vacation|holiday home|cabin|weekend|part[- ]time|"
        r"seasonal|summer home|getaway)\b",
    ),
    (
        "rental",
        r"\b(?:rental|rent(?:ing)? it(?: out)?|rent out|tenants?|landlord|investment|"
        r"airbnb|lease it|renting)\b",
    ),
    (
        "primary",
        r"\b(?:primary|main (?:home|residence)|live (?:there|in it|here)|we live|i live|"
        r"full[- ]time|reside|year[- ]round|principal|live in (?:the house|the home|it full))\b",
    ),
]
_NEGATED = re.compile(r"\b(?:not|n't|no longer|never)\s+(?:\w+\s+){0,2}$", re.IGNORECASE)

QUESTIONS = {
    ("state", "zip"): "Which state is the property in, and what is its ZIP code?",
    ("state",): "Which state is the property in?",
    ("zip",): "What is the property's five-digit ZIP code?",
}
_PARTS = {
    "purchaseStatus": "do you own the home, are you buying it, or refinancing",
    "occupancy": "will it be your primary residence, a secondary home or a rental",
    "effectiveDate": "what date should coverage start (YYYY-MM-DD, after today and within a year)",
}
SAYS = {
    "own": "you own the home",
    "buying": "you are buying it",
    "refinancing": "you are refinancing",
    "primary": "your primary residence",
    "secondary": "a secondary home",
    "rental": "a rental",
}


def _choice(text: str, options: list[tuple[str, str]]) -> list[str]:
    found = []
    for value, pattern in options:
        for match in re.finditer(pattern, text, re.IGNORECASE):
            if not _NEGATED.search(text[: match.start()]):
                found.append(value)
                break
    return found


def _state(text: str, context: Context) -> str | None:
    named = [(m.start(), _NAMES[m.group(1).lower()]) for m in _STATE_NAME.finditer(text)]
    coded = [(m.start(), m.group(1).upper()) for m in _CODE_BY_ZIP.finditer(text)]
    shouting = sum(c.isupper() for c in text) > sum(c.islower() for c in text)
    if not shouting:
        coded += [(m.start(), m.group(1)) for m in _CODE.finditer(text)]
    bare = text.strip(" .!")
    if "state" in context.asking and bare.upper() in faq.STATE_NAMES:
        if bare.isupper() or bare.upper() not in _WORDS:  # "hi" is a greeting, "HI" Hawaii
            coded.append((0, bare.upper()))
    single = [name for name in _NAMES if " " not in name]
    named += [(start, _NAMES[name]) for start, name in fuzzy(text, single)]
    found = sorted(named + coded)
    return found[-1][1] if found else None


def read(text: str, context: Context) -> Found:
    """The qualification facts `text` states."""
    found = Found()
    state = _state(text, context)
    if state:
        found.values["state"] = state
    zips = _ZIP.findall(text)
    if zips:
        found.values["zip"] = zips[-1]
    elif "zip" in context.asking and _SHORT_ZIP.search(text) and not read_date(text, context.today):
        found.problems.append("A ZIP code has five digits.")
    for name, options in (("purchaseStatus", _PURCHASE), ("occupancy", _OCCUPANCY)):
        chosen = list(dict.fromkeys(_choice(text, options)))
        if len(chosen) == 1:
            found.values[name] = chosen[0]
        elif len(chosen) > 1:
            found.problems.append(f"Just to be sure: {_PARTS[name]}?")
    day = read_date(text, context.today)
    if day is not None:
        found.values["effectiveDate"] = day.isoformat()
    elif vague(text) and "effectiveDate" in context.asking:
        found.problems.append("I need an exact start date.")
    if re.search(r"\bzip\b", text, re.I) and "zip" not in found.values:
        found.named.append("zip")
    return found


def question(fields: tuple[str, ...], draft: dict[str, Any] | None = None) -> str:
    """What the model asks for `fields`."""
    if fields in QUESTIONS:
        return QUESTIONS[fields]
    asked = [_PARTS[name] for name in fields if name in _PARTS]
    if not asked:
        return QUESTIONS[("state", "zip")]
    text = "; and ".join(asked) if len(asked) == 2 else "; ".join(asked)
    if len(asked) == 3:
        text = f"{asked[0]}; {asked[1]}; and {asked[2]}"
    return text[0].upper() + text[1:] + "?"


def say(name: str, value: Any) -> str:
    """A fact read back."""
    if name == "state":
        return f"{faq.STATE_NAMES.get(value, value)} ({value})"
    if name == "zip":
        return f"ZIP {value}"
    if name == "effectiveDate":
        return f"coverage from {value}"
    return SAYS.get(str(value), str(value))


def answer(text: str, known: dict[str, Any]) -> str | None:
    """The qualification stage's answers, then the common ones."""
    lowered = text.lower()
    if re.search(r"\bwhy\b.*\b(?:zip|state|where)\b", lowered):
        return (
            "The state and ZIP code tell us where the home is, which decides whether we can "
            "quote it."
        )
    if re.search(r"\b(?:occupancy|primary|secondary|rental)\b", lowered):
        return (
            "Occupancy is how the home is used: primary (you live there most of the year), "
            "secondary (a second or vacation home) or rental (rented to others)."
        )
    if re.search(r"\b(?:effective|start date|when .*start|how far)\b", lowered):
        today = known.get("CURRENT_DATE", "today")
        return f"The effective date is when coverage would start: after {today}, within a year."
    return faq.common_answer(text, known)


def rejected(feedback: str) -> tuple[str, ...]:
    """The fields a refusal clears."""
    if feedback.startswith("The effective date"):
        return ("effectiveDate",)
    return error_fields(feedback)


STAGE = Stage(
    tool="capture_home_qualification",
    end_tool="end_qualification_quote",
    fact="QUALIFICATION",
    groups=(("state", "zip"), ("purchaseStatus", "occupancy", "effectiveDate")),
    read=read,
    question=question,
    args=lambda draft: {
        name: draft[name]
        for name in ("state", "zip", "purchaseStatus", "occupancy", "effectiveDate")
    },
    flatten=lambda saved: dict(saved),
    say=say,
    intro=(
        "Hi! I can prepare a preliminary, non-binding home insurance estimate from Evergreen "
        "Home Insurance."
    ),
    answer=answer,
    rejected=rejected,
)
