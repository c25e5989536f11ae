"""The offline model of HouseholdStep: the tier, each covered person, a partner's coverage.

The tier is what the employee names ("just me", "employee + spouse", "family"), or follows
from the people named ("my wife Sam, born 1990-04-02" is employee + spouse). Each person needs
a name, a relationship and a birth date; a covered partner's other coverage is asked, never
assumed. Code judges the household (`validate_household`): the model calls the tool once
every piece is said and relays what code answers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage

from demo.benefits.heard import Heard, guard
from demo.benefits.people import Person, dependents_in, spelled
from demo.benefits.play_intake import defers
from demo.benefits.reading import Ambiguous, is_no, is_yes
from picoflow.testing import tool_call

_TIERS = (
    ("employee_only", r"(?:just|only)\s+(?:me|myself)(?!\s+(?:and|\+|&|plus)\b)|me\s+only|"
     r"myself\s+only|employee[\s_-]*only|no\s+dependents|single\s+coverage|self[\s-]+only|nobody\s+else|"
     r"no\s+one\s+else|^\W*me\W*$|^\W*myself\W*$|individual\s+coverage|for\s+myself"),
    ("employee_spouse", r"employee[\s_-]*(?:\+|plus|and|&)?[\s_-]*(?:spouse|partner)\b"),
    ("employee_children", r"employee[\s_-]*(?:\+|plus|and|&)?[\s_-]*(?:children|child|kids?)\b"),
    ("family", r"\bfamily\b|whole\s+family|all\s+of\s+us|everyone"),
)  # fmt: skip
_ME_AND = re.compile(r"\b(?:me|myself)\s*(?:and|\+|&|plus)\s*(?:my\s+)?", re.I)
_PARTNER = re.compile(r"\b(?:wife|husband|spouse|partner|girlfriend|boyfriend|fianc)", re.I)
_KIDS = re.compile(r"\b(?:sons?|daughters?|child(?:ren)?|kids?|baby|twins)\b", re.I)
_HAS_OTHER = re.compile(
    r"\b(?:has|have|gets|got)\s+(?:(?:her|his|their)\s+)?(?:own\s+)?(?:other\s+)?(?:medical\s+)?"
    r"(?:coverage|insurance|plan)|\bcovered\s+(?:through|by|at|under|elsewhere)|(?:coverage|"
    r"insurance)\s+(?:through|from|at|via)\s+(?:her|his|their)|other\s+coverage\W+yes|"
    r"\b(?:she|he|they)\s+(?:does|do)\b(?!\s*n)",
    re.I,
)
_NO_OTHER = re.compile(
    r"\b(?:no|not|doesn'?t|does\s+not|don'?t|do\s+not|hasn'?t|has\s+no|without)\s+(?:have\s+)?"
    r"(?:any\s+)?(?:other\s+)?(?:medical\s+)?(?:coverage|insurance|plan)|\bnot\s+covered|"
    r"other\s+coverage\W+no|uninsured|\b(?:she|he|they)\s+(?:doesn'?t|don'?t|does\s+not)\b|"
    r"\bno\s+other\b",
    re.I,
)
_UNSURE = re.compile(
    r"\b(?:not\s+sure|unsure|don'?t\s+know|do\s+not\s+know|idk|no\s+idea|maybe|might|"
    r"not\s+certain|i\s+think|probably|i\s+guess)\b",
    re.I,
)
ASK_FAMILY = (
    "For family coverage, please tell me, in one message, your spouse or partner and every child "
    "to cover: each person's name, relationship and birth date (YYYY-MM-DD), and whether your "
    "spouse or partner has access to other medical coverage."
)
ASK_TIER = (
    "Who should be covered? Please choose a coverage tier: employee only, employee + spouse (or "
    "domestic partner), employee + children, or family. For each person to cover I'll need only "
    "their name, relationship and birth date."
)


def _tier_in(text: str) -> str | None:
    for tier, pattern in _TIERS:
        if re.search(pattern, text, re.I):
            return tier
    if _ME_AND.search(text):
        partner, kids = bool(_PARTNER.search(text)), bool(_KIDS.search(text))
        if partner or kids:
            return {(True, True): "family", (True, False): "employee_spouse"}.get(
                (partner, kids), "employee_children"
            )
    return None


@dataclass
class Household:
    """The household as said so far."""

    tier: str | None = None
    people: list[Person] = field(default_factory=list)
    other: bool | None = None
    ambiguous: list[str] = field(default_factory=list)
    children_said: bool = False  # "my wife and 2 kids": children to come, not yet named

    def read(self, text: str, last_ai: str) -> None:
        """Apply one part of what the employee said."""
        text = spelled(text)
        self.tier = _tier_in(text) or self.tier
        self.children_said = self.children_said or bool(_KIDS.search(text))
        try:
            found, self.ambiguous = dependents_in(text), []
        except Ambiguous as exc:
            found, self.ambiguous = [], exc.readings
        for person in found:
            self._merge(person)
        if _UNSURE.search(text):
            pass  # "not sure if she has other coverage": still to be asked
        elif _NO_OTHER.search(text):
            self.other = False
        elif _HAS_OTHER.search(text):
            self.other = True
        elif "other medical coverage" in last_ai.lower() and (is_yes(text) or is_no(text)):
            self.other = is_yes(text)

    def _merge(self, person: Person) -> None:
        """Fold `person` into someone already named (same first name), or into the one person
        still without a name ("my wife" // "her name is Sam"); else add them."""
        same = [
            p
            for p in self.people
            if p.name and person.name and _first(p.name) == _first(person.name)
        ]
        unnamed = [
            p
            for p in self.people
            if p.name is None
            and person.relationship in (None, p.relationship)
            and not (person.birth and p.birth)
        ]
        target = same[0] if same else unnamed[0] if person.name and len(unnamed) == 1 else None
        if target is not None:
            if person.name and (target.name is None or len(person.name) > len(target.name)):
                target.name = person.name
            target.relationship = target.relationship or person.relationship
            target.birth = person.birth or target.birth
            return
        if person.relationship is None and person.name is None:
            return
        self.people.append(person)

    def partners(self) -> list[Person]:
        """The covered spouse or partner(s)."""
        return [p for p in self.people if p.relationship in ("spouse", "domestic_partner")]

    def inferred_tier(self) -> str | None:
        """The tier named, else the one the people named make."""
        if self.tier is not None:
            return self.tier
        partner = bool(self.partners())
        kids = self.children_said or any(p.relationship == "child" for p in self.people)
        if not (partner or kids):
            return None
        return {(True, True): "family", (True, False): "employee_spouse"}.get(
            (partner, kids), "employee_children"
        )


def _first(name: str) -> str:
    return name.split()[0].lower()


def _person_gaps(person: Person) -> list[str]:
    who = person.name or f"your {(person.relationship or 'dependent').replace('_', ' ')}"
    gaps = []
    if person.name is None:
        gaps.append(f"{who}'s name")
    if person.relationship is None:
        gaps.append(f"how {who} is related to you (spouse, domestic partner or child)")
    if person.birth is None:
        gaps.append(f"{who}'s birth date (YYYY-MM-DD)")
    return gaps


def _gaps(house: Household, tier: str) -> str | None:
    """One question for everything still missing, None when the household is complete."""
    if tier == "family" and not house.people:
        return ASK_FAMILY
    gaps: list[str] = []
    if tier in ("employee_spouse", "family") and not house.partners():
        gaps.append("your spouse or domestic partner's name and birth date (YYYY-MM-DD)")
    for person in house.people:
        gaps += _person_gaps(person)
    if tier in ("employee_children", "family") and not any(
        p.relationship == "child" for p in house.people
    ):
        gaps.append("each child's name and birth date (YYYY-MM-DD)")
    partners = house.partners()
    if partners and house.other is None:
        who = partners[0].name or "your spouse or partner"
        gaps.append(f"whether {who} has access to other medical coverage")
    if not gaps:
        return None
    listed = gaps[0] if len(gaps) == 1 else ", ".join(gaps[:-1]) + " and " + gaps[-1]
    return f"Please tell me {listed}."


def household(heard: Heard) -> AIMessage | str:
    """HouseholdStep's model: collect the household, then capture it."""
    if not heard.said:
        return ASK_TIER
    hold = "No problem — nothing has been recorded. Tell me who to cover when you're ready."
    early = guard(heard, "end_household_enrollment", hold)
    if early is not None:
        return early
    house = Household()
    for said in heard.kept():
        house.read(said.text, heard.last_ai)
    if house.ambiguous:
        first, second = house.ambiguous[:2]
        return f"Just to be sure about that birth date: is it {first} or {second}?"
    tier = house.inferred_tier()
    if tier == "employee_children" or "each child" in heard.last_ai:
        for person in house.people:  # "me and my kids" // "Leo 2018-06-01 and Mia 2020-03-03"
            person.relationship = person.relationship or "child"
    if tier is None:
        lead = "I can't choose the coverage for you. " if defers(heard.said[-1].text) else ""
        return lead + ASK_TIER
    question = _gaps(house, tier) if tier != "employee_only" or house.people else None
    return question if question is not None else _capture(house, tier)


def _capture(house: Household, tier: str) -> AIMessage:
    dependents = [
        {"name": p.name, "relationship": p.relationship, "birthDate": p.birth} for p in house.people
    ]
    return tool_call(
        "capture_benefits_household",
        coverageTier=tier,
        dependents=dependents,
        spouseHasOtherMedicalCoverage=house.other if house.partners() else None,
    )
