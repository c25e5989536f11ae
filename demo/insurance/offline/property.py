"""PropertyStep's offline model: dwelling type and year built; size, stories and construction;
roof material and age; the years plumbing, electrical and HVAC were last updated.

A number goes to the field its words name ("built in 1998", "2,100 sq ft", "roof is 6 years
old", "furnace replaced 2019"); a bare number only to the field just asked for. "Never",
"original" or "not sure" for a system is null, as the prompt says; nothing is assumed.
"""

from __future__ import annotations

import re
from typing import Any

from demo.insurance.offline import faq
from demo.insurance.offline.spans import Spans
from demo.insurance.offline.stage import Context, Found, Stage, error_fields
from demo.insurance.offline.words import NUMBER_WORDS

SYSTEMS = ("plumbingUpdatedYear", "electricalUpdatedYear", "hvacUpdatedYear")
_I = re.IGNORECASE
_TYPES = [
    (
        "townhome",
        re.compile(r"\btown\s?(?:home|house)s?\b|\brow\s?(?:home|house)\b|\battached\b", _I),
    ),
    ("duplex", re.compile(r"\bduplex\b|\b(?:two|2)[- ](?:family|unit)\b", _I)),
    (
        "single_family",
        re.compile(
            r"\bsing(?:le|el)[- ]?family\b|\bdetached\b|\bsfh\b|^\W*(?:a\s+)?house\W*$|"
            r"\b(?:a|it'?s\s+a|regular|normal|standalone)\s+house\b|"
            r"\bbungalow\b|\bcottage\b|\bstand[- ]?alone\b",
            _I,
        ),
    ),
]
_UNSUPPORTED_TYPE = re.compile(
    r"\b(?:condo\w*|apartment|mobile home|manufactured|trailer|triplex|fourplex|co-?op)\b", _I
)
_BUILT = re.compile(
    r"\b(?:built|bulit|buit|biult|constructed|build|erected|dates?\s+(?:back\s+)?(?:to|from))\s+(?:in\s+)?"
    r"(?:around\s+|about\s+|circa\s+|ca\.?\s+|roughly\s+)?((?:18|19|20)\d\d)\b|"
    r"\b((?:18|19|20)\d\d)\s+(?:build|built|construction|home|house|townhome|townhouse|duplex)\b|"
    r"\b(?:house|home|townhome|townhouse|duplex|place|it'?s)\s+(?:is\s+)?from\s+((?:18|19|20)\d\d)\b",
    _I,
)
_AGE = re.compile(
    r"\b(?:house|home|place|building|it)(?:'s|\s+is)\s+(?:about\s+|around\s+|roughly\s+)?"
    r"(\d{1,3}|[a-z]+)\s+years?\s+old\b|\b(\d{1,3}|[a-z]+)[- ]years?[- ]old\s+(?:house|home)\b",
    _I,
)
_ANY_AGE = re.compile(r"\b(\d{1,3}|[a-z]+)[- ]years?[- ]old\b", _I)
_SQFT = re.compile(
    r"(\d{1,2}(?:,\d{3})|\d+(?:\.\d+)?)\s*(k)?\s*(?:sq\.?\s*(?:ft|feet|foot)\.?|square\s*"
    r"(?:feet|foot|ft)|sqft|sf\b|ft2|ft²)",
    _I,
)
_STORIES = re.compile(
    r"\b(\d|one|two|three|four|five|single)[- ]?"
    r"(?:story|storey|stories|storeys|storys|level|floor)s?\b",
    _I,
)
_WOOD = re.compile(
    r"\bwood(?:en)?(?:[- ]?frame[d]?)?\b(?!\s*(?:shake|shingle|stove|floor|deck|burn))|"
    r"\bframe\b|\bstick[- ]built\b|\btimber\b",
    _I,
)
_MASONRY = re.compile(
    r"\bmasonry\b|\bbrick\b|\bstone\b|\bconcrete\b(?!\s*tile)|\bcinder\s?block\b|\bcmu\b|"
    r"\bblock\b|\badobe\b",
    _I,
)
_MIXED = re.compile(r"\bmixed\b|\bcombination\b|\bhybrid\b|\bboth\b", _I)
_ROOFS = [
    (
        "tile",
        re.compile(r"\b(?:concrete\s+|clay\s+|spanish\s+)?tiles?\b|\bclay\b|\bterra\s?cotta\b", _I),
    ),
    (
        "metal",
        re.compile(r"\bmetal\b|\bsteel\b|\btin\b|\balumin(?:i)?um\b|\bstanding[- ]seam\b", _I),
    ),
    (
        "composition",
        re.compile(
            r"\bcomposition\b|\bcomp\b|\bcomposite\b|\basphalt\b|"
            r"\b(?:architectural\s+)?shingles?\b|\b3[- ]tab\b",
            _I,
        ),
    ),
]
_UNSUPPORTED_ROOF = re.compile(
    r"\bslate\b|\bshakes?\b|\brubber\b|\bepdm\b|\btar\b|\bmembrane\b", _I
)
_ROOF_AGE = re.compile(
    r"\broof\b[^.;]{0,40}?\b(\d{1,2}|[a-z]+)\s*(?:years?|yrs?)\b|"
    r"\b(\d{1,2}|[a-z]+)[- ]years?[- ]old\s+(?:\w+\s+)?roof\b",
    _I,
)
_ROOF_YEAR = re.compile(
    r"\broof\b[^.;\d]{0,40}?\b((?:19|20)\d\d)\b|\b((?:19|20)\d\d)\s+(?:\w+\s+)?roof\b", _I
)
_NEW_ROOF = re.compile(
    r"\b(?:brand[- ])?new\s+(?:\w+\s+)?roof\b|\broof\s+is\s+(?:brand\s+)?new\b", _I
)
_SYSTEM = {
    "plumbingUpdatedYear": re.compile(
        r"\bplumbing\b|\bpipes?\b|\bre-?piped?\b|\bwater\s+lines\b", _I
    ),
    "electricalUpdatedYear": re.compile(
        r"\belectrical\b|\belectric\b|\bwiring\b|\bre-?wired\b|"
        r"\bpanel\b|\bbreakers?\b",
        _I,
    ),
    "hvacUpdatedYear": re.compile(
        r"\bhvac\b|\bheating\b|\bfurnace\b|\bair\s+condition\w*|\ba/?c\b|"
        r"\bheat\s+pump\b|\bboiler\b|\bcooling\b",
        _I,
    ),
}
_NULL = re.compile(
    r"\b(?:never|original|not\s+(?:been\s+)?(?:updated|replaced|sure)|no\s+idea|unknown|"
    r"don'?t\s+know|dunno|no\s+updates?|not\s+that\s+i\s+know|n/?a|none)\b",
    _I,
)
_ALL = re.compile(
    r"\ball\s+(?:three|of\s+(?:them|those)|systems|updated|redone|replaced)\b|"
    r"\beverything\b",
    _I,
)
_REST = re.compile(r"\b(?:the\s+)?(?:rest|others?|other\s+two)\b", _I)

QUESTIONS = {
    "dwellingType": "what type of home is it (single-family, townhome or duplex)",
    "yearBuilt": "what year was it built",
    "squareFeet": "about how many square feet is it",
    "stories": "how many stories does it have (1 to 4)",
    "construction": "is it wood frame, masonry or mixed construction",
    "roofMaterial": "what is the roof made of (composition shingles, metal or tile)",
    "roofAgeYears": "how many years old is the roof",
}
SAYS = {"single_family": "single-family home", "wood_frame": "wood frame"}


def _count(word: str) -> int | None:
    return int(word) if word.isdigit() else NUMBER_WORDS.get(word.lower())


def _read_type(spans: Spans, found: Found) -> None:
    for value, pattern in _TYPES:
        if any(True for _ in spans.find(pattern)):
            found.values["dwellingType"] = value
            return
    if _UNSUPPORTED_TYPE.search(spans.text):
        found.problems.append("I can only quote a single-family home, a townhome or a duplex.")


def _read_built(spans: Spans, found: Found, context: Context) -> None:
    year = context.today.year
    for match in spans.find(_BUILT):
        found.values["yearBuilt"] = int(next(group for group in match.groups() if group))
    for match in spans.find(_AGE):
        age = _count(match.group(1) or match.group(2))
        if age is not None:
            found.values["yearBuilt"] = year - age
    if "yearBuilt" in found.values or "yearBuilt" not in context.asking:
        return
    for match in _ANY_AGE.finditer(spans.text):  # "about 40 years old", just asked the year built
        clause = re.split(r"[,;.]", spans.text[: match.start()])[-1]
        age = _count(match.group(1))
        if (
            age is not None
            and "roof" not in clause.lower()
            and spans.free(match.start(), match.end())
        ):
            spans.take(match.start(), match.end())
            found.values["yearBuilt"] = year - age


def _read_size(spans: Spans, found: Found) -> None:
    for match in spans.find(_SQFT):
        feet = float(match.group(1).replace(",", "")) * (1000 if match.group(2) else 1)
        _set_feet(found, feet)
    for match in spans.find(_STORIES):
        stories = 1 if match.group(1).lower() == "single" else _count(match.group(1))
        if stories is not None:
            _set_stories(found, stories)


def _set_feet(found: Found, feet: float) -> None:
    if 400 <= feet <= 15000 and feet.is_integer():
        found.values["squareFeet"] = int(feet)
    else:
        found.problems.append("The size must be a whole number from 400 to 15,000 square feet.")


def _set_stories(found: Found, stories: int) -> None:
    if 1 <= stories <= 4:
        found.values["stories"] = stories
    else:
        found.problems.append("I can quote homes of 1 to 4 stories.")


def _read_construction(spans: Spans, found: Found) -> None:
    wood = any(True for _ in spans.find(_WOOD))
    masonry = any(True for _ in spans.find(_MASONRY))
    mixed = any(True for _ in spans.find(_MIXED))
    if mixed or (wood and masonry):
        found.values["construction"] = "mixed"
    elif wood or masonry:
        found.values["construction"] = "wood_frame" if wood else "masonry"


def _read_roof(spans: Spans, found: Found, year: int) -> None:
    if _NEW_ROOF.search(spans.text):
        found.values["roofAgeYears"] = 0
    for value, pattern in _ROOFS:
        if any(True for _ in spans.find(pattern)):
            found.values["roofMaterial"] = value
            break
    else:
        if _UNSUPPORTED_ROOF.search(spans.text):
            found.problems.append(
                "The roof material can be composition (asphalt shingles), metal or tile."
            )
    for match in spans.find(_ROOF_YEAR):
        built = int(match.group(1) or match.group(2))
        if built <= year:
            found.values["roofAgeYears"] = year - built
    for match in spans.find(_ROOF_AGE):
        age = _count(match.group(1) or match.group(2))
        if age is not None:
            _set_roof_age(found, age)


def _set_roof_age(found: Found, age: int) -> None:
    if 0 <= age <= 75:
        found.values["roofAgeYears"] = age
    else:
        found.problems.append("The roof's age must be 0 to 75 years.")


def _read_systems(spans: Spans, found: Found, context: Context) -> None:
    """Years and "never" for each system named; a bare list in the order asked."""
    text = spans.text
    marks = sorted(
        [(m.start(), m.end(), name) for name, p in _SYSTEM.items() for m in p.finditer(text)]
        + [
            (m.start(), m.end(), "year")
            for m in re.finditer(r"\b(?:18|19|20)\d\d\b", text)
            if spans.free(m.start(), m.end())
        ]
        + [(m.start(), m.end(), "null") for m in _NULL.finditer(text)]
    )
    pending: list[str] = []
    orphan: str | int | None = None
    orphan_end = -1
    for start, end, kind in marks:
        if kind in SYSTEMS:
            pending.append(kind)
            if orphan is not None and not text[orphan_end:start].strip():  # "2010 plumbing"
                found.values[kind] = None if orphan == "null" else orphan
                pending, orphan = [], None
            continue
        value: int | None = None if kind == "null" else int(text[start:end])
        if pending:
            if kind == "year":
                spans.take(start, end)
            found.values.update(dict.fromkeys(pending, value))
            pending = []
        else:
            orphan, orphan_end = ("null" if value is None else value), end
    _read_all_systems(spans, found, context, orphan)


def _read_all_systems(spans: Spans, found: Found, context: Context, orphan: Any) -> None:
    asked = [name for name in SYSTEMS if name in context.asking]
    named = [name for name in SYSTEMS if name in found.values]
    rest = [name for name in (asked or SYSTEMS) if name not in found.values]
    if named and _REST.search(spans.text) and _NULL.search(spans.text):
        found.values.update(dict.fromkeys(rest, None))
    elif not named and orphan is not None and (_ALL.search(spans.text) or asked):
        free = [(start, n) for start, n in spans.numbers() if 1800 <= n <= 2100]
        for start, _ in free:
            spans.take(start, start + 4)
        years = [n for _, n in free]
        if orphan == "null" and not years:
            found.values.update(dict.fromkeys(asked or SYSTEMS, None))
        elif years and len(years) == len(asked) and not _ALL.search(spans.text):
            found.values.update(zip(asked, (int(n) for n in years), strict=True))
        elif orphan != "null" and (_ALL.search(spans.text) or len(asked) == 1):
            found.values.update(dict.fromkeys(asked or SYSTEMS, orphan))


def _read_bare(spans: Spans, found: Found, context: Context) -> None:
    """Numbers no words claimed, for the field just asked (in the order asked)."""
    for _, number in spans.numbers():
        if "yearBuilt" in context.asking and "yearBuilt" not in found.values:
            if 1800 <= number <= 2100:
                found.values["yearBuilt"] = int(number)
                continue
        if "squareFeet" in context.asking and "squareFeet" not in found.values and number >= 100:
            _set_feet(found, number)
        elif "stories" in context.asking and "stories" not in found.values and number < 10:
            _set_stories(found, int(number))
        elif "roofAgeYears" in context.asking and "roofAgeYears" not in found.values:
            if 1900 <= number <= context.today.year:
                found.values["roofAgeYears"] = context.today.year - int(number)
            elif number.is_integer():
                _set_roof_age(found, int(number))


def read(text: str, context: Context) -> Found:
    """The property facts `text` states."""
    found, spans, year = Found(), Spans(text), context.today.year
    _read_type(spans, found)
    _read_built(spans, found, context)
    _read_roof(spans, found, year)
    _read_size(spans, found)
    _read_construction(spans, found)
    _read_systems(spans, found, context)
    _read_bare(spans, found, context)
    if re.search(r"\broof\b", text, _I) and not {"roofMaterial", "roofAgeYears"} & set(
        found.values
    ):
        found.named.extend(["roofMaterial", "roofAgeYears"])
    return found


def question(fields: tuple[str, ...], draft: dict[str, Any] | None = None) -> str:
    """What the model asks for `fields`."""
    systems = [name for name in fields if name in SYSTEMS]
    asked = [QUESTIONS[name] for name in fields if name in QUESTIONS]
    if systems:
        labels = {
            "plumbingUpdatedYear": "plumbing",
            "electricalUpdatedYear": "electrical",
            "hvacUpdatedYear": "HVAC",
        }
        named = [labels[name] for name in systems]
        listed = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        asked.append(
            f"in what year was the {listed} last updated (say never or not sure if it wasn't "
            "or you don't know)"
        )
    text = "; and ".join(asked) if len(asked) <= 2 else "; ".join(asked[:-1]) + "; and " + asked[-1]
    return text[0].upper() + text[1:] + "?"


def say(name: str, value: Any) -> str:
    """A fact read back."""
    labels = {
        "plumbingUpdatedYear": "plumbing",
        "electricalUpdatedYear": "electrical",
        "hvacUpdatedYear": "HVAC",
    }
    if name in labels:
        return (
            f"{labels[name]} {'never updated or unknown' if value is None else f'updated {value}'}"
        )
    texts = {
        "yearBuilt": f"built {value}",
        "squareFeet": f"{value:,} sq ft" if isinstance(value, int) else str(value),
        "stories": f"{value} {'story' if value == 1 else 'stories'}",
        "roofAgeYears": f"a {value}-year-old roof",
        "roofMaterial": f"a {value} roof",
    }
    return texts.get(name, SAYS.get(str(value), str(value).replace("_", " ")))


def answer(text: str, known: dict[str, Any]) -> str | None:
    """The property stage's answers, then the common ones."""
    lowered = text.lower()
    if re.search(r"\b(?:hvac|plumbing|electrical|update|updated)\b", lowered):
        return (
            "For each system, give the year it was last updated, or say never or not sure: "
            "both are fine."
        )
    if re.search(r"\bcomposition\b", lowered):
        return "Composition means asphalt shingles, the most common roof."
    if re.search(r"\b(?:condo|apartment|mobile)\b", lowered):
        return "This quote covers single-family homes, townhomes and duplexes only."
    return faq.common_answer(text, known)


def rejected(feedback: str) -> tuple[str, ...]:
    """The fields a refusal clears."""
    if feedback.startswith("The year built"):
        return ("yearBuilt",)
    for name, label in zip(SYSTEMS, ("plumbing", "electrical", "HVAC"), strict=True):
        if feedback.startswith(f"The {label} update year"):
            return (name,)
    return error_fields(feedback)


FIELDS = (
    "dwellingType",
    "yearBuilt",
    "squareFeet",
    "stories",
    "construction",
    "roofMaterial",
    "roofAgeYears",
    *SYSTEMS,
)

STAGE = Stage(
    tool="capture_home_property",
    end_tool="end_property_quote",
    fact="PROPERTY",
    groups=(
        ("dwellingType", "yearBuilt"),
        ("squareFeet", "stories", "construction"),
        ("roofMaterial", "roofAgeYears"),
        SYSTEMS,
    ),
    read=read,
    question=question,
    args=lambda draft: {name: draft[name] for name in FIELDS},
    flatten=lambda saved: {name: saved[name] for name in FIELDS if name in saved},
    say=say,
    intro="Thanks! Now a few questions about the home itself.",
    answer=answer,
    rejected=rejected,
)
