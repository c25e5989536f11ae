"""A returning guest, as the offline model understands one: the usual stay offered, taken or
declined, and a request to be forgotten.

The explore prompt shows the usual stay (``Usual stay JSON``, see ``demo.hotel.returning``);
the model offers it in place of the room-type question and applies it only when the guest
agrees: a yes to the offer, or "same as last time" said at any point. A no, "something else",
or another room type declines it, and the usual questions follow.
"""

from __future__ import annotations

import json
import re

from demo.hotel.formats import USUAL_STAY
from demo.hotel.offline._intents import is_affirmative, is_negative
from demo.hotel.offline._text import normalize
from demo.hotel.offline.conversation import Conversation
from demo.hotel.returning import UsualStay

__all__ = [
    "OFFER_MARK",
    "accepts",
    "declines",
    "offer",
    "usual_of",
    "wants_to_be_forgotten",
]

OFFER_MARK = "— same again?"
"""How the offer ends: a reply that holds it is waiting for the guest's answer."""

_FILLER = r"(?:\s+(?:all|everything|that|this|the|of|stuff|things?|info|data|you|please|now|just))*"
_FORGET = re.compile(
    rf"\b(?:forget|erase|wipe|delete|remove|clear|purge|scrub)\b{_FILLER}\s+(?:about me\b|me\b"
    r"|my (?:data|info\w*|details|preferences|profile|history|personal \w+)"
    r"|what you (?:know|remember|have|stored|saved|kept)|everything (?:you|about me))"
    r"|\b(?:stop|quit|don'?t|do not)\s+(?:storing|keeping|saving|remembering|store|keep|save"
    r"|remember)\b(?:\s+\w+){0,2}?\s+(?:me\b|my\b|anything\b|about me\b)"
)
"""Forget the guest: "forget me", "delete my data", "wipe my info", "forget what you know about
me", "stop remembering my preferences" — not "forget the pool" nor "I forgot my dates"."""
_KEEP = re.compile(r"\b(?:don'?t|do not|never)\s+(?:forget|erase|wipe|delete|remove|clear)\b")
"""Asked to keep, not to forget: "don't forget my preferences"."""
_ACCEPT = re.compile(
    r"\bsame(?: \w+)? (?:again|as (?:last time|before|usual))\b|\bsame (?:room|thing|one|stay)\b"
    r"|\b(?:the|my) usual\b|\bas usual\b|\blike (?:last time|before)\b|\bas last time\b"
    r"|\b(?:do|have) (?:it|that) again\b|\bwhat i had (?:before|last time)\b"
    r"|\b(?:same(?: \w+)?|as|like) (?:as )?(?:my |the )?(?:last|previous)"
    r" (?:booking|stay|visit|trip)\b"
)
"""Taking the usual stay, at any point: "same again", "the usual", "like last time"."""
_SAME_ELSE = re.compile(r"\bsame (?:budget|price|dates?|days?|nights?|distance|area|time)\b")
"""The same something else as last time: nothing but the room and amenities is kept."""
_ABOUT_THE_ROOM = re.compile(r"\b(?:rooms?|stay|suite|amenit\w*|setup|usual)\b")
_APPROVAL = re.compile(
    r"\b(?:would be|sounds|that'?s|that is) (?:great|good|perfect|lovely|fine|ideal)\b"
    r"|^\W*(?:ye+s+|yea+h+|yu+p+|su+re+)\b|^\W*(?:the )?same\b"
)
"""Approving what was just offered: "that would be great", "yesss", "same, but ..."."""
_DECLINE = re.compile(
    r"\bnot this time\b|\bsomething (?:else|different)\b|\bdifferent (?:this time|one)\b"
    r"|\bstart (?:from scratch|fresh|over|afresh)\b|\bfrom scratch\b|\bnot the same\b"
)
"""Declining it without naming another room: "not this time", "something else"."""


def wants_to_be_forgotten(text: str) -> bool:
    """The guest asks to be forgotten: their remembered data deleted."""
    said = normalize(text)
    return bool(_FORGET.search(said)) and not _KEEP.search(said)


def usual_of(conversation: Conversation) -> UsualStay | None:
    """The usual stay the explore prompt shows for a returning guest; None for a new guest."""
    value = conversation.label(USUAL_STAY)
    try:
        data = json.loads(value) if value else None
    except json.JSONDecodeError:
        return None
    return UsualStay.from_json(data) if isinstance(data, dict) else None


def offer(usual: UsualStay) -> str:
    """The offer made in place of the room-type question."""
    return (
        f"Last time you chose {usual.describe()} {OFFER_MARK} (yes, or tell me the room type "
        "you'd like: one bed, two beds or a suite)"
    )


def accepts(text: str, offered: bool) -> bool:
    """Whether ``text`` takes the usual stay: said outright, or a yes to the offer."""
    said = normalize(text)
    if _SAME_ELSE.search(said) and not _ABOUT_THE_ROOM.search(said):
        return False
    if _ACCEPT.search(said):
        return True
    approved = is_affirmative(text) or bool(_APPROVAL.search(said))
    return offered and approved and not _DECLINE.search(said)


def declines(text: str) -> bool:
    """A no to the offer that names nothing else ("no thanks", "something else this time")."""
    return is_negative(text) or bool(_DECLINE.search(normalize(text)))
