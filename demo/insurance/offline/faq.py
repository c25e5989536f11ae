"""Answers to the questions a customer asks along the way, from the prompt's facts only.

The model may explain the process (preliminary, non-binding, what each stage needs, why); it
never estimates a premium, promises coverage or decides eligibility before the rules do.
"""

from __future__ import annotations

import re
from typing import Any

STATE_NAMES = {
    "AL": "Alabama",
    "AK": "Alaska",
    "AZ": "Arizona",
    "AR": "Arkansas",
    "CA": "California",
    "CO": "Colorado",
    "CT": "Connecticut",
    "DE": "Delaware",
    "DC": "District of Columbia",
    "FL": "Florida",
    "GA": "Georgia",
    "HI": "Hawaii",
    "ID": "Idaho",
    "IL": "Illinois",
    "IN": "Indiana",
    "IA": "Iowa",
    "KS": "Kansas",
    "KY": "Kentucky",
    "LA": "Louisiana",
    "ME": "Maine",
    "MD": "Maryland",
    "MA": "Massachusetts",
    "MI": "Michigan",
    "MN": "Minnesota",
    "MS": "Mississippi",
    "MO": "Missouri",
    "MT": "Montana",
    "NE": "Nebraska",
    "NV": "Nevada",
    "NH": "New Hampshire",
    "NJ": "New Jersey",
    "NM": "New Mexico",
    "NY": "New York",
    "NC": "North Carolina",
    "ND": "North Dakota",
    "OH": "Ohio",
    "OK": "Oklahoma",
    "OR": "Oregon",
    "PA": "Pennsylvania",
    "RI": "Rhode Island",
    "SC": "South Carolina",
    "SD": "South Dakota",
    "TN": "Tennessee",
    "TX": "Texas",
    "UT": "Utah",
    "VT": "Vermont",
    "VA": "Virginia",
    "WA": "Washington",
    "WV": "West Virginia",
    "WI": "Wisconsin",
    "WY": "Wyoming",
}

NON_BINDING = (
    "This is only a preliminary, non-binding estimate: no coverage is bound, no policy is "
    "issued and no payment is taken."
)

_ANSWERS: list[tuple[str, str]] = [
    (
        r"\bbind|binding|official|real quote|covered (?:now|yet|today)|am i (?:insured|covered)"
        r"|policy (?:now|today)|start(?:s)? (?:my )?coverage now",
        NON_BINDING,
    ),
    (
        r"\b(?:how much|price|cost|premium|expensive|cheap|rate|estimate)\b",
        "I can't estimate a premium yet: the quote is rated by our rules from your answers "
        "once you have confirmed them.",
    ),
    (
        r"\b(?:pay|payment|credit card|card|bank)\b",
        "No payment is needed: this is a preliminary estimate, and I never ask for payment "
        "details.",
    ),
    (
        r"\b(?:ssn|social security|date of birth|birthday|dob)\b",
        "I never need a Social Security number or a date of birth for this estimate.",
    ),
    (
        r"\b(?:who are you|are you (?:a |an )?(?:bot|ai|human|person|real))\b",
        "I'm the quoting assistant of Evergreen Home Insurance, a fictional carrier, here to "
        "prepare a preliminary estimate.",
    ),
    (
        r"\b(?:how long|how many (?:questions|steps)|what (?:else )?do you need|what info)\b",
        "A few questions in four short parts: where the home is, the property, claims and "
        "safety features, and the coverage you want; then you review it all before rating.",
    ),
    (
        r"\b(?:agent|human|person|talk to someone|speak to someone)\b",
        "You can ask for an agent follow-up once you have chosen a quote option.",
    ),
]


def common_answer(text: str, known: dict[str, Any]) -> str | None:
    """The answer to a question any stage may get, or None."""
    lowered = text.lower()
    if re.search(r"\b(?:which|what) states?\b|\bdo you (?:cover|insure|quote|serve)\b", lowered):
        return supported_states(known)
    for pattern, answer in _ANSWERS:
        if re.search(pattern, lowered):
            return answer
    return None


def supported_states(known: dict[str, Any]) -> str:
    """Which states this demo quotes, from the prompt's SUPPORTED_STATES."""
    codes = known.get("SUPPORTED_STATES") or ["OR"]
    names = ", ".join(f"{STATE_NAMES.get(code, code)} ({code})" for code in codes)
    return f"This demo quotes homes in {names} only."
