"""The offline model of AncillaryBenefitsStep: dental and vision, then life and disability.

Each benefit mentioned is read with the words around it: "basic dental, waive vision",
"2x life", "no short-term or long-term disability" (the "no" carries over "or"), "STD yes,
LTD no". A bare yes or no answers the one election last asked about. The elections are
captured only when all five are explicit; dental differences and life amounts come from the
tools, and prices the prompt does not hold are never made up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from demo.benefits.heard import Heard
from demo.benefits.play_intake import defers
from demo.benefits.reading import is_no, is_question, is_yes, wants_to_stop
from picoflow.testing import tool_call

_MENTIONS = (
    ("dental", r"dental|teeth|dentist|orthodont\w*"),
    ("vision", r"vision|eye\s*(?:care|exams?)|glasses|contacts"),
    ("life", r"(?:supplemental\s+)?life(?:\s+insurance)?"),
    ("std", r"short[\s-]*term(?:\s+disability)?|\bstd\b"),
    ("ltd", r"long[\s-]*term(?:\s+disability)?|\bltd\b"),
    ("disability", r"(?:both\s+)?disabilit(?:y|ies)"),
)
_MENTION = re.compile("|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _MENTIONS), re.I)
_NEGATIVE = re.compile(
    r"\b(?:no|not|waive[ds]?|skip|without|decline[ds]?|don'?t|none|pass|nope|neither|nor|opt\s+"
    r"out|zero|0x|no\s+thanks)\b",
    re.I,
)
_POSITIVE = re.compile(r"\b(?:yes|yeah|yep|sure|add|include|want|take|elect|please|both)\b", re.I)
_CONNECTIVE = re.compile(r"^[\s,&/]*(?:and|or|nor|&|,|/)?[\s,&/]*(?:the\s+)?$", re.I)
_MULTIPLE = re.compile(
    r"(?P<n>[0-3])\s*(?:x|×|times)\b|\b(?P<w>one|two|three|single|double|triple)\s*(?:x|times)?"
    r"(?:\s+(?:my\s+)?salary)?|\bx\s*(?P<after>[0-3])\b",
    re.I,
)
_WORDS = {"one": 1, "single": 1, "two": 2, "double": 2, "three": 3, "triple": 3}
FIELDS = {
    "dental": "dental (basic, premium or waive)",
    "vision": "vision (standard or waive)",
    "life": "the supplemental-life multiple of your salary (1×, 2×, 3× or none)",
    "std": "short-term disability (yes or no)",
    "ltd": "long-term disability (yes or no)",
}


def _multiple(text: str) -> int | None:
    found = _MULTIPLE.search(text)
    if found is None:
        return None
    if found["n"] or found["after"]:
        return int(found["n"] or found["after"])
    return _WORDS[found["w"].lower()]


@dataclass
class Elections:
    """The five elections as said so far (None: not said)."""

    dental: str | None = None
    vision: str | None = None
    life: int | None = None
    std: bool | None = None
    ltd: bool | None = None
    life_unsure: bool = False  # life wanted, multiple not said

    def read(self, text: str, last_ai: str) -> None:
        """Apply one part of what the employee said."""
        mentions = list(_MENTION.finditer(text))
        if not mentions:
            self._answer(text, last_ai)
            return
        polarity: bool | None = None
        for index, match in enumerate(mentions):
            start = mentions[index - 1].end() if index else 0
            before = text[start : match.start()]
            following = mentions[index + 1].start() if index + 1 < len(mentions) else len(text)
            after = re.split(r"[,;.]|\band\b|\bbut\b", text[match.end() : following], maxsplit=1)[0]
            own = _polarity(before, after)
            if own is None and index and _CONNECTIVE.match(before):
                own = polarity  # "no short-term or long-term disability"
            polarity = own
            self._set(match.lastgroup or "", own, f"{before} {match.group()} {after}")

    def _set(self, kind: str, positive: bool | None, window: str) -> None:
        if kind == "dental":
            level = (
                "premium"
                if re.search(r"premium|best|higher|orthodont|better", window, re.I)
                else None
            )
            level = level or (
                "basic" if re.search(r"basic|cheap|lower|regular", window, re.I) else None
            )
            self.dental = "waive" if positive is False else level or self.dental
        elif kind == "vision":
            self.vision = "waive" if positive is False else "standard"
        elif kind == "life":
            multiple = _multiple(window)
            if positive is False or multiple == 0:
                self.life, self.life_unsure = 0, False
            elif multiple is not None:
                self.life, self.life_unsure = multiple, False
            elif positive:
                self.life_unsure = True
        elif kind in ("std", "ltd"):
            setattr(self, kind, positive is not False)
        elif kind == "disability" and (positive is not None or "both" in window.lower()):
            self.std = self.ltd = positive is not False

    def _answer(self, text: str, last_ai: str) -> None:
        """A bare yes or no answers the one election the last question asked about."""
        if not (is_yes(text) or is_no(text)):
            life = _multiple(text)
            if life is not None and "supplemental-life" in last_ai:
                self.life, self.life_unsure = life, False
            return
        asked = [kind for kind, question in FIELDS.items() if question in last_ai]
        if len(asked) != 1:
            return
        kind, yes = asked[0], is_yes(text)
        if kind in ("std", "ltd"):
            setattr(self, kind, yes)
        elif kind == "vision":
            self.vision = "standard" if yes else "waive"
        elif kind == "life" and not yes:
            self.life = 0
        elif kind == "dental" and not yes:
            self.dental = "waive"

    def missing(self) -> list[str]:
        """The elections still open: dental and vision first, then life and disability."""
        values: dict[str, Any] = {
            "dental": self.dental,
            "vision": self.vision,
            "life": self.life,
            "std": self.std,
            "ltd": self.ltd,
        }
        gaps = [kind for kind, value in values.items() if value is None]
        first = [kind for kind in gaps if kind in ("dental", "vision")]
        return first or gaps


def _polarity(before: str, after: str) -> bool | None:
    near = " ".join(before.split()[-4:])
    if _NEGATIVE.search(near) or re.match(r"^\W*(?:no|none|waive|skip|nope)\b", after, re.I):
        return False
    if _POSITIVE.search(near) or re.match(r"^\W*(?:yes|yeah|sure|please)\b", after, re.I):
        return True
    return None


def _ask(gaps: list[str], unsure_life: bool) -> str:
    if unsure_life and "life" in gaps:
        return "How much supplemental life would you like: 1×, 2× or 3× your salary (or none)?"
    questions = [FIELDS[kind] for kind in gaps]
    listed = questions[0] if len(questions) == 1 else "; ".join(questions)
    return f"Please tell me your choice for {listed}."


def ancillary(heard: Heard) -> AIMessage | str:
    """AncillaryBenefitsStep's model: the elections, then the capture."""
    if not heard.said:
        return (
            "Let's start with dental and vision. Dental: basic, premium or waive? Vision: "
            "standard or waive? I can compare the dental options if you like."
        )
    final = heard.said[-1].text
    if heard.withdrawn():
        return "No problem — nothing has been recorded. Tell me your choices when you're ready."
    if wants_to_stop(final):
        return tool_call("end_ancillary_enrollment")
    if is_question(final):
        return _question(final)
    chosen = Elections()
    for said in heard.said:
        if not said.withdrawn:
            chosen.read(said.text, _asked_before(heard, said.message))
    gaps = chosen.missing()
    if gaps:
        lead = "I can't make these choices for you. " if defers(final) else ""
        return lead + _ask(gaps, chosen.life_unsure)
    return tool_call(
        "capture_benefits_ancillary",
        dentalPlan=chosen.dental,
        visionPlan=chosen.vision,
        supplementalLifeMultiple=chosen.life,
        shortTermDisability=chosen.std,
        longTermDisability=chosen.ltd,
    )


def _asked_before(heard: Heard, message: int) -> str:
    """The assistant's last text before the employee's `message`-th message of the stage."""
    seen, last = -1, ""
    for entry in heard.messages:
        if entry.type == "human" and entry.text in heard.texts:
            seen += 1
            if seen == message:
                return last
        elif isinstance(entry, AIMessage) and entry.text:
            last = entry.text
    return last


def _question(text: str) -> AIMessage | str:
    if re.search(r"dental|teeth|dentist|orthodont", text, re.I):
        return tool_call("compare_benefits_dental_options")
    if re.search(r"\blife\b", text, re.I):
        multiple = _multiple(text)
        if multiple in (1, 2, 3):
            return tool_call("explain_benefits_life_option", multiple=multiple)
        return "Which multiple should I explain: 1×, 2× or 3× your salary?"
    return (
        "I don't have those prices here; the ancillary payroll cost will show on the enrollment "
        "review. " + _ask(list(FIELDS), False)
    )
