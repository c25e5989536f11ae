"""ReviewStep's offline model: the application read back, then a confirmation or one correction.

A correction is recognised by reading the message with each stage's own reader, against the
saved application: the section whose facts it changes is the one corrected, and the change is
said back concisely ("a 10-year-old roof"). Two sections at once, a correction taken back or a
message that changes nothing commit nothing; a plain yes confirms.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import faq, words
from demo.insurance.offline.coverage import STAGE as COVERAGE
from demo.insurance.offline.property import STAGE as PROPERTY
from demo.insurance.offline.qualification import STAGE as QUALIFICATION
from demo.insurance.offline.risk import STAGE as RISK
from demo.insurance.offline.stage import Context, Stage, today_of
from demo.insurance.offline.transcript import events, facts
from demo.reading import corrections
from picoflow.testing import tool_call

SECTIONS: dict[str, Stage] = {
    "qualification": QUALIFICATION,
    "property": PROPERTY,
    "risk": RISK,
    "coverage": COVERAGE,
}
_CONFIRM = re.compile(
    r"\b(?:looks?\s+(?:good|great|right|cor+ect|fine)|all\s+(?:good|correct|right)|(?:that'?s|it'?s|"
    r"everything(?:'?s| is)?|all\s+of\s+it\s+is)\s+(?:all\s+)?(?:right|correct|accurate|good|fine)|"
    r"confirm\w*|go\s+ahead|rate\s+it|get\s+(?:me\s+)?(?:my|the)\s+quote|proceed|submit|"
    r"cor+ect\b|accurate|perfect|yes|checks\s+out|run\s+(?:the\s+)?numbers)\b",
    re.IGNORECASE,
)
_WRONG = re.compile(
    r"\b(?:wrong|incorrect|not\s+right|mistake|typo|change|fix|update|correct(?:ion)?\s+(?:to|the))\b",
    re.IGNORECASE,
)
ASK = "Is everything correct? Say yes to confirm, or tell me one thing to correct."


def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
    """The review model's reply."""
    known = facts(str(messages[0].text))
    history = events(messages)
    application = known.get("APPLICATION") or {}
    last = history[-1] if history else None
    if last is None or last.kind == "opener":
        return summary(application, known.get("LAST_CORRECTION"))
    if last.kind == "result":
        return f"{last.text} {ASK}"
    text = last.text
    if words.has_sensitive(text):
        return f"{words.SENSITIVE_REPLY} {ASK}"
    if corrections.withdrawn(text):
        return f"No problem: I haven't changed or confirmed anything. {ASK}"
    said = corrections.expand([words.plain(text)])[-1]
    return _reply_to(said, application, known)


def _reply_to(said: str, application: dict[str, Any], known: dict[str, Any]) -> AIMessage | str:
    """A correction, a confirmation, a question or a goodbye, as `said` (the final part) says."""
    changes = changed_sections(said, application, today_of(known))
    if words.wants_to_stop(said) and not changes:
        return tool_call("end_review_quote")
    if len(changes) > 1:
        listed = " and the ".join(changes)
        return f"Let's correct one section at a time: which first, the {listed}?"
    if changes:
        section, change = next(iter(changes.items()))
        return tool_call("correct_home_application", section=section, change=change)
    if words.is_question(said):
        return f"{_answer(said, known)} {ASK}"
    if _CONFIRM.search(said) and not _WRONG.search(said) and not words.is_no(said):
        return tool_call("confirm_home_application", confirmed=True)
    if words.is_no(said) or _WRONG.search(said):
        return "What should I correct? Tell me the section and the right value."
    return f"Sorry, I didn't catch that. {ASK}"


def changed_sections(text: str, application: dict[str, Any], today: date) -> dict[str, str]:
    """Each section whose saved facts `text` changes, with the change said concisely."""
    changes = {}
    for section, stage in SECTIONS.items():
        saved = application.get(section)
        draft = dict(stage.flatten(saved)) if isinstance(saved, dict) else {}
        found = stage.read(text, Context((), dict(draft), today))
        new = {
            name: value
            for name, value in found.values.items()
            if not name.startswith("_") and draft.get(name, object()) != value
        }
        if new:
            changes[section] = "; ".join(stage.say(name, value) for name, value in new.items())
    return changes


def _answer(text: str, known: dict[str, Any]) -> str:
    lowered = text.lower()
    if re.search(r"\b(?:premium|price|cost|how much)\b", lowered):
        return "The premium comes once you confirm: the rules rate exactly these facts."
    return faq.common_answer(text, known) or "I can only help with this preliminary home quote."


def summary(application: dict[str, Any], correction: Any) -> str:
    """The application read back, section by section, with the non-binding reminder."""
    lines = []
    if isinstance(correction, dict):
        lines.append(f"I've updated the {correction.get('section')}: {correction.get('change')}.")
    lines.append("Here is your application for a preliminary, non-binding estimate:")
    for section, stage in SECTIONS.items():
        saved = application.get(section)
        told = _section_text(section, stage, saved) if isinstance(saved, dict) else "not given yet"
        lines.append(f"- {section.capitalize()}: {told}.")
    coverage = application.get("coverage") or {}
    if isinstance(correction, dict) and coverage.get("deductible"):
        lines.append(
            f"Rating will use these facts, with your ${coverage['deductible']:,} deductible; "
            "there is no premium until then."
        )
    lines.append(ASK)
    return "\n".join(lines)


def _section_text(section: str, stage: Stage, saved: dict[str, Any]) -> str:
    flat = stage.flatten(saved)
    if section == "qualification":
        return ", ".join(stage.say(name, flat[name]) for name in flat)
    if section == "risk":
        claims = stage.say("claims", flat.get("claims", []))
        rest = ", ".join(stage.say(n, v) for n, v in flat.items() if n != "claims")
        return f"{claims} in the last five years; {rest}"
    return ", ".join(stage.say(name, value) for name, value in flat.items())
