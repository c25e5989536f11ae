"""TerminateSessionStep's offline model: the closing line its terminal prompt asks for.

Every terminal prompt ends with PicoFlow's reminder (no coverage bound, no payment taken); the
sentences before it say what to confirm or provide, and the closing says exactly that.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from langchain_core.messages import BaseMessage

REMINDER = "No coverage has been bound and no payment has been taken."
_LINES = [
    (
        r"Thank the customer for considering (?P<carrier>.+?)\.",
        "Thank you for considering {carrier}.",
    ),
    (
        r"close the unfinished preliminary quote",
        "Thank you for your time: I've closed this unfinished preliminary quote.",
    ),
    (
        r"close the reviewed preliminary quote without rating it",
        "Thank you: I've closed your reviewed preliminary quote without rating it.",
    ),
    (
        r"provide quote reference (?P<quote>EHI-[\w-]+), valid through (?P<date>[\d-]+)",
        "Thank you! Your quote reference is {quote}, valid through {date}.",
    ),
    (
        r"Confirm that no contact details were retained and provide quote reference "
        r"(?P<quote>EHI-[\w-]+)",
        "No contact details were kept. Your quote reference is {quote}.",
    ),
    (
        r"Confirm that an agent follow-up was requested for (?P<name>.+?) at "
        r"(?P<email>\S+@\S+?)\.(?:\s|$)",
        "Done: an agent follow-up was requested for {name} at {email}.",
    ),
    (
        r"Confirm that no agent follow-up details were retained",
        "No agent follow-up details were kept.",
    ),
    (
        r"Provide quote (?P<quote>EHI-[\w-]+) and selected (?P<option>.+?\)), valid through "
        r"(?P<date>[\d-]+)",
        "Your quote is {quote}, with {option} selected, valid through {date}.",
    ),
    (
        r"explain that an agent would need to review",
        "Thank you for your patience. An agent would need to review your application before "
        "any quote could be offered.",
    ),
]


def respond(messages: Sequence[BaseMessage]) -> str:
    """The closing line for the terminal prompt in `messages[0]`."""
    prompt = str(messages[0].text) if messages else ""
    said: list[str] = []
    for pattern, line in _LINES:
        match = re.search(pattern, prompt)
        if match is not None:
            said.append(line.format(**match.groupdict()))
    return " ".join([*(said or ["Thank you."]), REMINDER])
