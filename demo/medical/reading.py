"""How MedicalFlow's offline model reads a patient: symptoms, doctors, slots, intents.

Doctors are read by name (one typo allowed: "smtih", "jnoes"), by specialty ("the specialist",
"the GP"), by position ("the second doctor", "the first one you suggested") and by pronoun
("book me with them"); slots by time ("2pm", "14:00", "ten in the morning", "3 o'clock"), by
part of the day ("the morning one") and by position ("the later slot", "the earliest"). Every
mention is found with its place in the message, so the last one wins: "Dr. Smith at 10, no
wait, make that 2pm" is 2:00 PM.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

_WORD = re.compile(r"[a-z][a-z'-]*")
_LEAD_IN = re.compile(
    r"^(?:(?:hi|hello|hey|good (?:morning|afternoon|evening)|so|well|um|long story short|"
    r"i'?m calling because|the reason is)[\s,!.]*)*"
    r"(?:i(?: have|'ve| hav| got|'ve got|'ve had| had| am having|'m having) (?:got |had )?"
    r"(?:an? )?)?",
    re.I,
)
_SYMPTOM_WORDS = (
    "headache migraine fever chills cough coughing cold flu throat rash nausea vomiting "
    "diarrhea earache ear back chest stomach belly knee ankle wrist shoulder neck head tooth "
    "toothache eye skin sneezing allergy allergies infection injury sprain asthma breathing "
    "insomnia anxiety fatigue cramps tight pain hurts hurt hurting ache aches aching sore "
    "swollen itchy itching bleeding dizzy dizziness tired sick ill unwell lump bruise burn"
).split()
_SYMPTOM_PHRASES = re.compile(
    r"check-?up|follow-?up|blood pressure|prescription|physical|vaccin\w*|"
    r"\b(?:been|keep|kept) \w+ing\b|\bfeel(?:ing)? (?:\w+ )?(?:bad|awful|terrible|weak|off|sick)",
    re.I,
)
_CLAUSES = re.compile(r"[.!?;,]+\s*|\s+(?:and|but) (?=i\b|i'|can|could|would|please)", re.I)
_END = re.compile(
    r"\b(?:bye|goodbye|good bye|never ?mind|i'?m leaving|forget it|no thanks|"
    r"(?:don'?t|do not) want to book|cancel)\b",
    re.I,
)
_YES = re.compile(
    r"^(?:yes|yeah|yep|yup|sure|ok(?:ay)?|please do|sounds good|perfect|great|do it|"
    r"go ahead|book it|that works)\b",
    re.I,
)
_REQUEST = re.compile(r"\b(?:can|could|may) i (?:please )?(?:have|see|book|get)\b")
_QUESTION = re.compile(
    r"^(?:what|which|who|whom|when|where|how|is|are|does|do|can|could|will|would|"
    r"what's|who's|when's)\b",
    re.I,
)
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_TIME = re.compile(
    r"(?P<at>\bat\s+)?\b(?P<hour>\d{1,2}(?!st|nd|rd|th)|one|two|three|four|five|six|seven|"
    r"eight|nine|ten|eleven|twelve)"
    r"(?::(?P<minute>\d{2}))?\s*(?P<half>a\.?m\.?|p\.?m\.?|o'?clock)?"
    r"(?P<period>\s+in the (?:morning|afternoon|evening))?"
    r"(?!\s*(?:days?|weeks?|months?|years?|hours?|minutes?|mins?|boxes|people|times?)\b)",
    re.I,
)
_ORDINAL = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "last": -1, "other": None}
_DOCTOR_BY_POSITION = re.compile(
    r"\b(?P<pos>first|1st|second|2nd|last) (?:doctor|one you (?:suggested|mentioned|listed)|"
    r"doctor you (?:suggested|mentioned|listed))|\bthe other (?:doctor|one)\b",
    re.I,
)
_SLOT_BY_POSITION = re.compile(
    r"\b(?P<pos>first|1st|second|2nd|last) (?:slot|time|one|appointment)\b", re.I
)
_ONE_BY_POSITION = re.compile(r"\bthe (?P<pos>first|1st|second|2nd|last)(?: one)?\b", re.I)
_EARLY = re.compile(r"\b(?:earlier|earliest|morning one|morning slot|in the morning|morning)\b")
_LATE = re.compile(
    r"\b(?:later|latest|afternoon one|afternoon slot|in the afternoon|afternoon)\b(?!s)"
)
_SUPERLATIVE = re.compile(r"\b(?:earliest|latest|soonest)\b")
_PRONOUN = re.compile(r"\b(?:him|her|them|he|she|they|his|their)\b")
_ANYONE = re.compile(r"\b(?:whoever|anyone|anybody|any doctor|either)\b")
_DAY = re.compile(
    r"\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b|\btomorrow\b|\bweek-?ends?\b"
    r"|\b(?:next|this|coming) (?:week|month)\b|\b\d{1,2}(?:st|nd|rd|th)\b"
    r"|\b(?:jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)[a-z]*\.? \d{1,2}\b"
)
"""A day or date ("on thursday", "tomorrow", "the 12th"): the doctors table has times only."""
_UNKNOWN_DOCTOR = re.compile(r"\bdr\.?\s+(?P<name>[a-z]+)", re.I)
_SPECIALTY_WORDS = {
    "specialist": "Specialist",
    "gp": "General Practice",
    "general practice": "General Practice",
    "general practitioner": "General Practice",
    "family doctor": "General Practice",
}


@dataclass
class Mention:
    """Something the patient named, and where in the message (the last one wins)."""

    at: int
    value: Any


@dataclass
class Reading:
    """What one message says about the booking."""

    text: str = ""
    doctors: list[Mention] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    times: list[Mention] = field(default_factory=list)  # "10:00 AM", or ("pos", index)
    anyone: bool = False
    pronoun: bool = False
    question: bool = False
    yes: bool = False
    end: bool = False
    day: bool = False  # names a day, which the doctors table does not have

    def names_nothing(self) -> bool:
        """Nothing of the booking was read: no doctor, slot, answer or intent."""
        found = self.doctors or self.unknown or self.times or self.day
        return not (found or self.anyone or self.pronoun or self.question or self.yes or self.end)


def symptoms_in(text: str) -> str | None:
    """The clauses of `text` that describe a complaint, lead-ins dropped; None if there are none.

    "hi! I've had a fever and chills since Sunday, it's been rough" gives "a fever and chills
    since Sunday".
    """
    kept = []
    for clause in _CLAUSES.split(text):
        if clause and _is_symptom(clause):
            kept.append(_LEAD_IN.sub("", clause.strip()).strip())
    found = ", ".join(part for part in kept if part)
    return found or None


def _is_symptom(clause: str) -> bool:
    if _SYMPTOM_PHRASES.search(clause):
        return True
    for word in _WORD.findall(clause.lower()):
        if word in _SYMPTOM_WORDS:
            return True
        if len(word) >= 5 and any(  # one typo; never the first letter ("never" is no fever)
            len(known) >= 5 and known[0] == word[0] and fuzz.ratio(word, known) >= 80
            for known in _SYMPTOM_WORDS
        ):
            return True
    return False


_PERSON = re.compile(
    r"\b(?:real|actual|live)\s+(?:person|human|people)\b|\bhuman\s+(?:being|agent)\b"
    r"|\b(?:talk|speak|chat)\s+(?:to|with)\s+(?:a\s+|an\s+|the\s+|some\s+)?(?:person|human"
    r"|someone|somebody|staff|nurse|receptionist|operator|agent|member of (?:the )?staff)\b"
    r"|\b(?:get|want|need)\s+(?:me\s+)?(?:a\s+)?(?:human|person|operator)\b"
    r"|^\W*(?:a\s+)?(?:human|operator|agent|person)(?:\s+please|\s+pls)?\W*$",
    re.IGNORECASE,
)


def wants_a_person(text: str) -> bool:
    """The patient asks for a person ("can I talk to a real person?", "a human please")."""
    return bool(_PERSON.search(text))


def wants_to_end(text: str) -> bool:
    """A goodbye, a "never mind", a "cancel"."""
    return bool(_END.search(text))


def read(text: str, doctors: list[dict[str, Any]]) -> Reading:
    """Every doctor, slot and intent `text` names, given the doctors the prompt lists."""
    said = text.lower().strip()
    reading = Reading(said, end=wants_to_end(said), yes=bool(_YES.match(said)))
    reading.question = bool(_QUESTION.match(said) or said.endswith("?")) and not _REQUEST.search(
        said
    )
    reading.anyone = bool(_ANYONE.search(said))
    reading.pronoun = bool(_PRONOUN.search(said))
    reading.day = bool(_DAY.search(said))
    _read_doctors(said, doctors, reading)
    _read_times(said, doctors, reading)
    reading.doctors.sort(key=lambda m: m.at)
    reading.times.sort(key=lambda m: m.at)
    return reading


def _read_doctors(said: str, doctors: list[dict[str, Any]], reading: Reading) -> None:
    for index, doctor in enumerate(doctors):
        surname = doctor["name"].split()[-1].lower()
        for word in re.finditer(r"[a-z]+", said):
            close = len(word.group()) >= 4 and OSA.distance(word.group(), surname) <= 1
            if word.group() == surname or close:
                reading.doctors.append(Mention(word.start(), index))
        for words, specialty in _SPECIALTY_WORDS.items():
            for found in re.finditer(rf"\b{words}\b", said):
                if doctor["specialty"] == specialty:
                    reading.doctors.append(Mention(found.start(), index))
    for found in _DOCTOR_BY_POSITION.finditer(said):
        pos = found.group("pos")
        reading.doctors.append(Mention(found.start(), ("pos", _ORDINAL[pos] if pos else None)))
    known = {d["name"].split()[-1].lower() for d in doctors}
    for found in _UNKNOWN_DOCTOR.finditer(said):
        name = found.group("name")
        if not any(OSA.distance(name, k) <= 1 for k in known):
            reading.unknown.append(name.capitalize())


def _read_times(said: str, doctors: list[dict[str, Any]], reading: Reading) -> None:
    slots = [slot for doctor in doctors for slot in doctor["availableTimes"]]
    explicit = False
    for found in _TIME.finditer(said):
        slot = _slot_of(found)
        if slot is not None:
            reading.times.append(Mention(found.start(), slot if slot in slots else f"?{slot}"))
            explicit = True
    if not explicit:
        _read_relative_times(said, reading)
    elif not reading.doctors:  # "the first one at 10": a doctor, since the time is given
        for found in _ONE_BY_POSITION.finditer(said):
            reading.doctors.append(Mention(found.start(), ("pos", _ORDINAL[found.group("pos")])))


def _read_relative_times(said: str, reading: Reading) -> None:
    """Slots named by position or part of the day, when no clock time is given."""
    for found in _SLOT_BY_POSITION.finditer(said):
        reading.times.append(Mention(found.start(), ("pos", _ORDINAL[found.group("pos")])))
    for found in _EARLY.finditer(said):
        reading.times.append(Mention(found.start(), ("pos", 0, bool(_SUPERLATIVE.search(said)))))
    for found in _LATE.finditer(said):
        reading.times.append(Mention(found.start(), ("pos", -1, bool(_SUPERLATIVE.search(said)))))
    if reading.doctors or reading.times:
        return
    for found in _ONE_BY_POSITION.finditer(said):  # "the first one": a slot or a doctor
        reading.times.append(Mention(found.start(), ("one", _ORDINAL[found.group("pos")])))


def _slot_of(found: re.Match[str]) -> str | None:
    """The clock time a match names, as the doctors table writes it ("2:00 PM")."""
    raw = found.group("hour").lower()
    clocked = found.group("half") or found.group("period") or found.group("at")
    if raw in _NUMBER_WORDS and not clocked:
        return None  # "the first one" is not one o'clock
    hour = _NUMBER_WORDS.get(raw) or int(raw)
    minute = found.group("minute") or "00"
    half = (found.group("half") or "").replace(".", "").lower()
    period = (found.group("period") or "").strip()
    if hour > 23 or hour == 0 or int(minute) > 59:
        return None
    if hour > 12:
        return f"{hour - 12}:{minute} PM"
    if half in ("am", "pm"):
        return f"{hour}:{minute} {half.upper()}"
    if period:
        return f"{hour}:{minute} {'AM' if 'morning' in period else 'PM'}"
    return f"{hour}:{minute} {'AM' if 8 <= hour <= 11 else 'PM'}"
