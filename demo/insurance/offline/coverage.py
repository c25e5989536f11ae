"""CoverageStep's offline model: rebuild cost, deductible, liability limit, endorsements.

An amount goes to the field its words name ("450k to rebuild", "$2,500 deductible", "300k
liability"); amounts said without words fill the fields in the order asked (rebuild cost,
deductible, liability); an amount that fits two fields ("300k" before either is known) is
asked about, not guessed. Unsupported values are said to be unsupported, never rounded.
"""

from __future__ import annotations

import re
from typing import Any

from demo.insurance.offline import faq
from demo.insurance.offline.stage import Context, Found, Stage, error_fields
from demo.insurance.offline.words import Amount, amounts, is_no, polarity
from demo.insurance.presenter import money

_I = re.IGNORECASE
FIELDS = ("dwellingCoverage", "deductible", "liabilityLimit", "endorsements")
DEDUCTIBLES = (1000, 2500, 5000)
LIMITS = (100_000, 300_000, 500_000, 1_000_000)
ENDORSEMENTS = ("water_backup", "identity_theft", "equipment_breakdown")
_KEYWORDS = {
    "dwellingCoverage": re.compile(
        r"\b(?:rebuild\w*|dwelling|replace\w*|coverage\s+a|insure\s+(?:it|the\s+(?:house|home))|"
        r"(?:house|home)\s+(?:for|at|is\s+worth)|worth|cover(?:age)?\s+(?:of|for))\b",
        _I,
    ),
    "deductible": re.compile(r"\b(?:deductible|ded|out\s+of\s+pocket)\b", _I),
    "liabilityLimit": re.compile(r"\b(?:liability|liab)\b", _I),
}
_EXTREMES = [
    ("deductible", re.compile(r"\b(?:lowest|smallest|minimum|min)\s+deductible\b", _I), 1000),
    (
        "deductible",
        re.compile(r"\b(?:highest|largest|biggest|maximum|max)\s+deductible\b", _I),
        5000,
    ),
    ("liabilityLimit", re.compile(r"\b(?:lowest|minimum|min)\s+liability\b", _I), 100_000),
    ("liabilityLimit", re.compile(r"\b(?:highest|maximum|max|most)\s+liability\b", _I), 1_000_000),
]
_ENDORSEMENT = re.compile(
    r"\b(?P<water_backup>(?:water|sewer|drain)[- ]?back[- ]?up|sump\s+pump|backup)\b|"
    r"\b(?P<identity_theft>identity(?:\s+theft)?|id\s+theft)\b|"
    r"\b(?P<equipment_breakdown>(?:equipment|appliance|mechanical|systems?)\s+breakdown|equipment)\b",
    _I,
)
_NO_EXTRAS = re.compile(
    r"\b(?:no|none|without|skip|zero)\s+(?:\w+\s+)?(?:endorsements?|add[- ]?ons?|extras?|riders?|"
    r"options)\b|^\W*(?:none|no|nope|nah|skip(?: them| it)?|nothing(?: extra| else)?|"
    r"none of (?:them|those)|not (?:really|needed))\W*(?:thanks?|thank you|please|pls)?\W*$",
    _I,
)
_ALL = re.compile(
    r"\b(?:all\s+(?:three|of\s+(?:them|those|the\s+endorsements))|every\s+endorsement)\b", _I
)

PHRASES = {
    "dwellingCoverage": "the estimated cost to rebuild the home ($100,000 to $2,000,000)",
    "deductible": "the deductible ($1,000, $2,500 or $5,000)",
    "liabilityLimit": "the liability limit ($100,000, $300,000, $500,000 or $1,000,000)",
    "endorsements": (
        "any optional endorsements: water backup, identity theft, equipment breakdown, or none"
    ),
}


def _near(text: str, amount: Amount) -> str | None:
    """The field whose words sit right by `amount` in its clause, if any."""
    before = re.split(r"[,;.]|\band\b", text[max(0, amount.start - 30) : amount.start])[-1]
    after = re.split(r"[,;.]|\band\b", text[amount.end : amount.end + 30])[0]
    hits = [(name, p) for name, p in _KEYWORDS.items() if p.search(before) or p.search(after)]
    return hits[0][0] if len(hits) == 1 else None


def _assign(name: str, value: float, found: Found) -> None:
    number = int(value) if float(value).is_integer() else None
    if name == "dwellingCoverage":
        if number is not None and 100_000 <= number <= 2_000_000:
            found.values[name] = number
        else:
            found.problems.append("The rebuild cost must be between $100,000 and $2,000,000.")
    elif name == "deductible":
        if number in DEDUCTIBLES:
            found.values[name] = number
        else:
            found.problems.append("The deductible can be $1,000, $2,500 or $5,000.")
    elif number in LIMITS:
        found.values[name] = number
    else:
        found.problems.append(
            "The liability limit can be $100,000, $300,000, $500,000 or $1,000,000."
        )


def _read_amounts(text: str, found: Found, context: Context) -> None:
    loose: list[float] = []
    for amount in amounts(text):
        if 1900 <= amount.value <= 2100 and not amount.money:
            continue  # a year, not money
        name = _near(text, amount)
        if name is None:
            loose.append(amount.value)
        else:
            _assign(name, amount.value, found)
    for name, pattern, value in _EXTREMES:
        if pattern.search(text):
            found.values[name] = value
    _read_loose(loose, found, context)


def _read_loose(loose: list[float], found: Found, context: Context) -> None:
    """Amounts without words: small ones are the deductible, large ones in the order asked."""
    open_fields = [n for n in FIELDS[:3] if n in context.asking and n not in found.values]
    small = [v for v in loose if v < 50_000]
    large = [v for v in loose if v >= 50_000]
    if small and "deductible" in open_fields:
        _assign("deductible", small[-1], found)
    wanted = [n for n in open_fields if n != "deductible"]
    if len(large) >= 2 and wanted == ["dwellingCoverage", "liabilityLimit"]:
        _assign("dwellingCoverage", large[0], found)
        _assign("liabilityLimit", large[1], found)
    elif len(large) == 1 and len(wanted) == 1:
        _assign(wanted[0], large[0], found)
    elif len(large) == 1 and wanted:
        value = large[0]
        if value not in LIMITS:
            _assign("dwellingCoverage", value, found)
        else:
            found.problems.append(
                f"Is {money(value).removesuffix('.00')} the rebuild cost or the liability limit?"
            )


def _read_endorsements(text: str, found: Found, context: Context) -> None:
    marks = {
        m.start(): next(k for k, v in m.groupdict().items() if v)
        for m in _ENDORSEMENT.finditer(text)
    }
    states = polarity(text, _ENDORSEMENT)
    wanted = [name for start, name in sorted(marks.items()) if states.get(start, True)]
    if marks:
        found.values["endorsements"] = list(dict.fromkeys(wanted))
    elif _ALL.search(text):
        found.values["endorsements"] = list(ENDORSEMENTS)
    elif _NO_EXTRAS.search(text) or (
        "endorsements" in context.asking and is_no(text) and len(context.asking) == 1
    ):
        found.values["endorsements"] = []


def read(text: str, context: Context) -> Found:
    """The coverage preferences `text` states."""
    found = Found()
    _read_amounts(text, found, context)
    _read_endorsements(text, found, context)
    for name, pattern in _KEYWORDS.items():
        if pattern.search(text) and name not in found.values:
            found.named.append(name)
    return found


def question(fields: tuple[str, ...], draft: dict[str, Any] | None = None) -> str:
    """What the model asks for `fields`."""
    asked = [PHRASES[name] for name in fields if name in PHRASES] or [PHRASES["dwellingCoverage"]]
    if fields == ("endorsements",):
        return (
            "Would you like any optional endorsements: water backup, identity theft or "
            "equipment breakdown? None is fine too."
        )
    if len(asked) == 1:
        return f"What would you like for {asked[0]}?"
    return "Please tell me " + "; ".join(asked[:-1]) + "; and " + asked[-1] + "."


def say(name: str, value: Any) -> str:
    """A fact read back."""
    if name == "endorsements":
        return "no endorsements" if not value else ", ".join(v.replace("_", " ") for v in value)
    label = {
        "dwellingCoverage": "rebuild cost",
        "deductible": "deductible",
        "liabilityLimit": "liability",
    }[name]
    return f"{label} {money(value).removesuffix('.00')}"


def answer(text: str, known: dict[str, Any]) -> str | None:
    """The coverage stage's answers, then the common ones."""
    lowered = text.lower()
    if "deductible" in lowered:
        return (
            "The deductible is what you pay on a claim before coverage pays: $1,000, $2,500 "
            "or $5,000."
        )
    if "liability" in lowered:
        return (
            "Liability covers you if someone is hurt or their property is damaged and you are "
            "responsible."
        )
    if re.search(r"\b(?:endorsement|water backup|identity|equipment|add-?on)", lowered):
        return (
            "Endorsements are optional extras: water backup (sewer or drain backup), identity "
            "theft help, and equipment breakdown (home systems and appliances)."
        )
    if re.search(r"\b(?:rebuild|how much should|recommend|what amount)", lowered):
        return (
            "Use what it would cost to rebuild the home, not its market value; I can't estimate "
            "it for you."
        )
    return faq.common_answer(text, known)


STAGE = Stage(
    tool="capture_home_coverage",
    end_tool="end_coverage_quote",
    fact="COVERAGE",
    groups=(FIELDS,),
    read=read,
    question=question,
    args=lambda draft: {name: draft[name] for name in FIELDS},
    flatten=lambda saved: {name: saved[name] for name in FIELDS if name in saved},
    say=say,
    intro="Thanks! Last part: the coverage you'd like rated.",
    answer=answer,
    rejected=error_fields,
)
