"""ContactStep's offline model: the selection explained as non-binding, then consent to an
agent follow-up and, with consent, a name and an email (phone and street address optional).

Consent is what the customer said, yes or no; contact details offered in answer to the
question (an email address) say yes. No details are kept on a no, a message holding data the
flow never takes (a card, an SSN) is not read at all, and a choice taken back commits nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.insurance.offline import faq, words
from demo.insurance.offline.transcript import events, facts
from demo.insurance.presenter import label, money
from demo.reading import corrections
from picoflow.testing import tool_call

_I = re.IGNORECASE
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<!\d)(?:\+?1[\s.-]?)?\(?\d{3}\)?[\s.-]?\d{3}[\s.-]?\d{4}(?!\d)")
_ADDRESS = re.compile(
    r"\b\d{1,6}\s+(?:[NSEW]\.?\s+)?[A-Za-z0-9.']+(?:\s+[A-Za-z0-9.']+){0,3}\s+(?:st|street|ave|"
    r"avenue|rd|road|dr|drive|ln|lane|blvd|boulevard|way|ct|court|pl|place|ter|terrace|pkwy|"
    r"parkway|cir|circle|hwy|highway|loop|trail)\b\.?(?:\s*(?:#|apt\.?|unit|suite)\s*\w+)?"
    r"(?:,\s*[A-Za-z .]+?)?(?:,?\s+[A-Z]{2})?(?:\s+\d{5})?(?=$|[,;\n]|\s+(?:and|my|phone|email)\b)",
    _I,
)
_NAME_CUE = re.compile(
    r"\b(?:my\s+name\s+is|name'?s|name\s*:|i'?m|i\s+am|this\s+is|call\s+me|it'?s)\s+"
    r"(?P<name>[A-Za-z][A-Za-z'.-]*(?:\s+[A-Za-z][A-Za-z'.-]*){0,3})",
    _I,
)
_NOT_NAMES = re.compile(
    r"^(?:yes|yeah|yep|sure|ok|okay|please|no|not|interested|good|fine|great|happy|ready|okay|"
    r"done|here|just|the|a|an|my|email|phone|address|number|and|at|is|it|at|thanks?|thank|you|"
    r"agent|call|contact|follow|up|would|like|want|glad|available|busy|looking|in|on|from|with|"
    r"sorry|actually|also|reach|me|to|be|fine|sounds|perfect|alright|of|course|definitely|"
    r"absolutely|go|ahead|that|works|do|so|well|hi|hello|hey)$",
    _I,
)
_YES = re.compile(
    r"\b(?:yes|yeah|yep|sure|please\s+do|have\s+(?:an\s+)?agent|(?<!n't\s)(?<!not\s)(?:call|contact)\s+me|"
    r"reach\s+out\s+to\s+me|"
    r"follow[- ]?up\s+(?:please|would\s+be)|that\s+would\s+be\s+(?:great|good|nice)|i'?d\s+like\s+"
    r"(?:that|one|a\s+follow)|go\s+ahead|ok(?:ay)?)\b",
    _I,
)
_NO = re.compile(
    r"\b(?:no(?!\s+(?:phone|address|number|street|cell|landline|problem))|nope|nah|not\s+(?:now|interested|needed|necessary|yet)|don'?t\s+(?:contact|call)|"
    r"no\s+(?:follow[- ]?up|agent|need|thanks)|i'?m\s+good|rather\s+not|skip)\b",
    _I,
)


@dataclass
class Contact:
    """What the customer has said about the follow-up so far."""

    consent: bool | None = None
    name: str | None = None
    email: str | None = None
    phone: str | None = None
    address: str | None = None

    def read(self, text: str, asked_name: bool = False) -> None:
        """Take what `text` says (a bare name too, when the name was just asked for); a later
        value replaces an earlier one."""
        email, phone = _EMAIL.search(text), _PHONE.search(text)
        address = _ADDRESS.search(text)
        rest = _EMAIL.sub(" ", text)
        rest = _PHONE.sub(" ", rest)
        rest = _ADDRESS.sub(" ", rest) if address else rest
        if email:
            self.email, self.consent = email.group(), True
        if phone:
            self.phone = phone.group().strip()
        if address:
            self.address = address.group().strip(" ,")
        name = _name(rest, bool(email or phone or asked_name))
        if name:
            self.name = name
        yes, no = bool(email or _YES.search(text)), bool(_NO.search(text))
        if yes != no:
            self.consent = yes

    def args(self) -> dict[str, Any]:
        """capture_home_quote_contact's arguments (no details without consent)."""
        if not self.consent:
            return {
                "consentToContact": False,
                "name": None,
                "email": None,
                "phone": None,
                "propertyAddress": None,
            }
        return {
            "consentToContact": True,
            "name": self.name,
            "email": self.email,
            "phone": self.phone,
            "propertyAddress": self.address,
        }


def _name(text: str, beside_details: bool) -> str | None:
    cue = _NAME_CUE.search(text)
    if cue:
        found = _clean(cue.group("name"))
        if found:
            return found
    if not beside_details:
        return None
    for piece in re.split(r"[,;\n]|\band\b", text):
        found = _clean(piece)
        if found:
            return found
    return None


def _clean(piece: str) -> str | None:
    """A name: one to four words, none of them a common word; title-cased when all lower."""
    tokens = [t for t in re.findall(r"[A-Za-z][A-Za-z'.-]*", piece)]
    while tokens and _NOT_NAMES.match(tokens[0]):
        tokens.pop(0)
    cut = next((i for i, t in enumerate(tokens) if _NOT_NAMES.match(t)), len(tokens))
    tokens = tokens[:cut]
    if not 1 <= len(tokens) <= 4:
        return None
    name = " ".join(tokens)
    return name.title() if name.islower() else name


def respond(messages: Sequence[BaseMessage]) -> AIMessage | str:
    """The contact model's reply."""
    known = facts(str(messages[0].text))
    chosen, quote = known.get("SELECTED_OPTION") or {}, known.get("QUOTE_RESULT") or {}
    history = events(messages)
    last = history[-1] if history else None
    if last is None or last.kind == "opener":
        return explain(chosen, quote)
    if last.kind == "result":
        return f"{_feedback(last.text)} {ASK_DETAILS}"
    text = last.text
    if words.has_sensitive(text):
        return f"{words.SENSITIVE_REPLY} {ASK_CONSENT}"
    if corrections.withdrawn(text):
        return f"No problem: I haven't recorded anything. {ASK_CONSENT}"
    contact, asked_name = Contact(), False
    for event in history:
        if event.kind == "ai":
            asked_name = "what name" in event.text.lower()
        if event.kind == "human" and not words.has_sensitive(event.text):
            for part in corrections.expand([event.text]):
                contact.read(part, asked_name)
    return _next(contact, corrections.settle(text), known)


ASK_CONSENT = "Would you like an agent to follow up with you about this estimate? It's optional."
ASK_DETAILS = (
    "What name and email address should the agent use? A phone number and the property's "
    "street address are optional."
)


def _next(contact: Contact, said: str, known: dict[str, Any]) -> AIMessage | str:
    if contact.consent is None and words.wants_to_stop(said):
        return tool_call("end_contact_quote")
    if words.is_question(said) and not _EMAIL.search(said):
        return f"{_answer(said, known)} {ASK_CONSENT if contact.consent is None else ASK_DETAILS}"
    if contact.consent is False:
        return tool_call("capture_home_quote_contact", **contact.args())
    if contact.consent is None:
        return f"Sorry, I didn't catch that. {ASK_CONSENT}"
    if contact.name and contact.email:
        return tool_call("capture_home_quote_contact", **contact.args())
    if contact.email:
        return "Thanks! And what name should the agent use?"
    if contact.name:
        return f"Thanks, {contact.name}! What email address should the agent use?"
    return f"Great. {ASK_DETAILS}"


def _answer(text: str, known: dict[str, Any]) -> str:
    lowered = text.lower()
    if re.search(r"\b(?:call|contact|phone|email|agent|follow)", lowered):
        return (
            "Only if you agree: an agent would contact you about this estimate, and nothing "
            "is bound or charged."
        )
    return faq.common_answer(text, known) or "I can only help with this preliminary home quote."


def _feedback(text: str) -> str:
    if text.startswith("Error:"):
        return "Sorry, that didn't look right: I need a name and a valid email address."
    return "To set up the follow-up, I need both your name and a valid email address."


def explain(chosen: dict[str, Any], quote: dict[str, Any]) -> str:
    """The selection, said to be non-binding, and the consent question."""
    if not chosen:
        return f"This is still a non-binding estimate. {ASK_CONSENT}"
    return (
        f"You selected {label(chosen)} at {money(chosen['annualPremium'])} a year (about "
        f"{money(chosen['monthlyPremium'])} a month) on quote {quote.get('quoteId')}, valid "
        f"through {quote.get('validThrough')}. This is still a non-binding estimate: no coverage "
        f"is bound and no payment is taken. {ASK_CONSENT}"
    )
