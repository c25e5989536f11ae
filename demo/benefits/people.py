"""People named in an employee's words: dependents with birth dates, beneficiaries with shares.

"my wife Sam Rivera born 1990-04-02 and our son Leo, 6/15/2018" gives a spouse and a child;
"Sam 60% (wife), Leo 40% (son)" two beneficiaries. A person is anchored on what only a person
has here (a birth date, a percentage, a relationship word) and named by the words around it;
a name is never made up: a person without one is left for the model to ask about.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from rapidfuzz.distance import OSA

from demo.benefits.reading import MONTHS, Ambiguous, dates_in

RELATIONS = {
    "spouse": r"wife|husband|spouse|hubby|missus",
    "domestic_partner": r"domestic\s+partner|partner|girlfriend|boyfriend|fianc[eé]e?",
    "child": r"sons?|daughters?|child(?:ren)?|kids?|step-?(?:son|daughter|child)|baby|"
    r"little\s+one|boy|girl|twins?",
}
_RELATION = re.compile(
    r"\b(?P<word>" + "|".join(f"(?:{p})" for p in RELATIONS.values()) + r")\b", re.I
)
_PLURAL = re.compile(r"\b(?:sons|daughters|children|kids|twins)\b", re.I)
_STOP = (
    set(
        (
            "my our a an the is are was named called born on dob birthday birth date and with who "
            "she he her his they their it its of to for me i also plus both two three four one "
            "as been has have had got dated bday b-day b. d. in at from be will would like add "
            "cover covered coverage include including please yes no ok okay so then just only "
            "name names s percent pct each all everything rest remaining split evenly equally "
            "between half goes get gets beneficiary beneficiaries primary secondary make change "
            "set give update put switch actually instead rather let lets now hi hey hello hmm um "
            "oh sorry wait thanks thank you"
        ).split()
    )
    | {month for month in MONTHS}
    | {month[:3] for month in MONTHS}
)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-.]*")


def relation_of(word: str) -> str | None:
    """The schema relationship of a relationship word ("wife" is spouse)."""
    for relation, pattern in RELATIONS.items():
        if re.fullmatch(pattern, word, re.I):
            return relation
    return None


def name_in(text: str, after: bool = True) -> str | None:
    """The words of `text` that read as a name: up to three, title-cased; None if none.

    With `after`, the first name-like run (after a relationship word); else the last one.
    """
    runs: list[list[str]] = [[]]
    for match in _WORD.finditer(text):
        word = re.sub(r"'s$", "", match.group(), flags=re.I).strip(".'-")
        if not word or word.lower() in _STOP or relation_of(word):
            runs.append([])
            continue
        runs[-1].append(word)
    names = [run[:3] for run in runs if run]
    if not names:
        return None
    chosen = names[0] if after else names[-1]
    return " ".join(word[:1].upper() + word[1:] for word in chosen)


@dataclass
class Person:
    """A dependent as said: any of name, relationship, birth date may still be missing."""

    name: str | None = None
    relationship: str | None = None
    birth: str | None = None
    at: int = 0


_KNOWN_WORDS = ("husband", "daughter", "partner", "spouse", "children", "daughters")


def spelled(text: str) -> str:
    """`text` with a relationship word typed one letter off written right ("husbnd")."""

    def fix(match: re.Match[str]) -> str:
        word = match.group()
        lower = word.lower()
        if lower in _KNOWN_WORDS or len(lower) < 5:
            return word
        close = [known for known in _KNOWN_WORDS if OSA.distance(lower, known) == 1]
        return close[0] if len(close) == 1 else word

    return re.sub(r"[A-Za-z]+", fix, text)


def dependents_in(text: str) -> list[Person]:
    """Every person of `text`: by relationship word or by birth date, in order.

    Raises:
        Ambiguous: a birth date that reads two ways ("03/04/2018").
    """
    text = spelled(text)
    people: list[Person] = []
    relations = list(_RELATION.finditer(text))
    for at, day in dates_in(text):
        before = text[:at]
        owner = next((r for r in reversed(relations) if r.start() < at), None)
        start = max(owner.start() if owner else 0, _previous_end(people, text))
        chunk = text[start:at]
        kind = relation_of(owner["word"]) if owner else None
        words = chunk[len(owner.group()) :] if owner and owner.start() == start else chunk
        name = name_in(words) or name_in(before[start - 40 if start >= 40 else 0 : start], False)
        people.append(Person(name, kind, day.isoformat(), at))
    _inherit_plural(people, text, relations)
    for mention in relations:  # named without a date yet ("my wife Sam")
        if any(p.at > mention.start() and _owner_is(p, mention, relations) for p in people):
            continue
        tail = text[mention.end() : mention.end() + 40]
        tail = re.split(r"[,;.(]|\band\b", tail, maxsplit=1)[0]
        kind = relation_of(mention["word"])
        if kind == "child" and _PLURAL.fullmatch(mention["word"]):
            continue  # "my kids": who they are comes with their names
        people.append(Person(name_in(tail), kind, None, mention.start()))
    for match in _NAMED_AS.finditer(text):  # "her name is Sam Rivera": who was not named yet
        if not any(p.name and p.at <= match.start() < p.at + 40 for p in people):
            said = match["name"] or match["n2"]
            people.append(Person(name_in(said), None, None, match.start()))
    return sorted(people, key=lambda person: person.at)


_NAMED_AS = re.compile(
    r"\b(?:his|her|their)\s+(?:full\s+)?name\s+is\s+(?P<name>[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?)"
    r"|\b(?:she|he|they)(?:'s|\s+is|\s+are)\s+(?:called|named)\s+(?P<n2>[a-z][\w'-]*(?:\s+[a-z][\w'-]*)?)",
    re.I,
)


def _previous_end(people: list[Person], text: str) -> int:
    if not people:
        return 0
    last = people[-1].at
    found = re.search(r"[\s,;)]", text[last:])
    return last + (found.start() if found else 0) + 1


def _owner_is(person: Person, relation: re.Match[str], relations: list[re.Match[str]]) -> bool:
    owner = next((r for r in reversed(relations) if r.start() < person.at), None)
    return owner is relation


def _inherit_plural(people: list[Person], text: str, relations: list[re.Match[str]]) -> None:
    """ "my kids Leo 2018-06-01 and Mia 2020-03-03": Mia is a child too."""
    for index, person in enumerate(people):
        if index and people[index - 1].relationship == "child" and person.relationship == "child":
            continue
        owner = next((r for r in reversed(relations) if r.start() < person.at), None)
        if owner is not None and _PLURAL.fullmatch(owner["word"]):
            person.relationship = "child"


_SHARE = re.compile(r"(?P<pct>\d{1,3})\s?(?:%|percent\b|pct\b)", re.I)
_HALF = re.compile(r"\b(?:50\s?/\s?50|split\s+(?:it\s+)?(?:evenly|equally|in\s+half)|half\s+each|"
                   r"(?:evenly|equally)\s+(?:split|between|divided))\b", re.I)  # fmt: skip
_ALL = re.compile(
    r"\b(?:all\s+of\s+it|everything|all\s+to|the\s+whole\s+(?:thing|amount)|100)\b", re.I
)
_BENEFICIARY_WORDS = (
    r"wife|husband|spouse|partner|son|daughter|child|kid|mother|mom|mum|father|dad|brother|"
    r"sister|sibling|friend|niece|nephew|aunt|uncle|cousin|grand(?:mother|father|son|daughter|"
    r"ma|pa|child)|fianc[eé]e?|girlfriend|boyfriend|estate|trust|parent|stepson|stepdaughter"
)
_KIN = re.compile(rf"\b(?P<rel>{_BENEFICIARY_WORDS})s?\b", re.I)


@dataclass
class Share:
    """A beneficiary as said: name, relationship in the employee's words, whole percentage."""

    name: str | None = None
    relationship: str | None = None
    percentage: int | None = None


def shares_in(text: str) -> list[Share]:
    """The beneficiaries of `text`: clause by clause, a clause that only completes the one
    before it ("Sam Rivera, wife, 60%") merged into it."""
    shares: list[Share] = []
    for clause in re.split(r"[;,\n]|\band\b|\s&\s", text):
        share = _share_in(clause)
        if share is None:
            continue
        if shares and _completes(shares[-1], share):
            last = shares[-1]
            last.name = last.name or share.name
            last.relationship = last.relationship or share.relationship
            last.percentage = last.percentage if last.percentage is not None else share.percentage
            continue
        shares.append(share)
    if _HALF.search(text) and len(shares) == 2 and all(s.percentage is None for s in shares):
        for each in shares:
            each.percentage = 50
    if len(shares) == 1 and shares[0].percentage is None and _ALL.search(text):
        shares[0].percentage = 100
    return shares


def _share_in(clause: str) -> Share | None:
    kin = _KIN.search(clause)
    part = _SHARE.search(clause)
    name = name_in(_KIN.sub(" ", _SHARE.sub(" ", clause)))
    if kin is None and part is None and (name is None or len(clause.split()) > 4):
        return None  # nothing of a person, or a sentence rather than a name
    percentage = int(part["pct"]) if part else None
    return Share(name, kin["rel"].lower() if kin else None, percentage)


def _completes(before: Share, share: Share) -> bool:
    """Whether `share` only fills in what `before` lacks."""
    pairs = [
        (before.name, share.name),
        (before.relationship, share.relationship),
        (before.percentage, share.percentage),
    ]
    return any(old is None for old, _ in pairs) and all(
        new is None or old is None for old, new in pairs
    )


__all__ = ["Ambiguous", "Person", "Share", "dependents_in", "name_in", "relation_of", "shares_in"]
