"""A scripted hotel guest: the offline user model of HotelFlow's simulated-user scenarios (X6).

The persona is plain text, one ``key: value`` line per fact (a real user model reads the same
text as a description of who it plays)::

    opening: Hi! I need a hotel in Portland.
    dates: July 1 to July 6
    budget: under $250
    room: two beds
    amenities: wifi and parking
    distance: no preference
    compare: compare 1 and 2 on price
    choice: book number 1

The guest answers whatever the assistant just asked from those lines, so a scenario runs without
a key: ``"userModel": "offline:guest"`` in the scenario, or ``--user offline:guest``
(HotelFlow's ``offline`` provider builds it).
"""

from __future__ import annotations

import re

from langchain_core.messages import AIMessage, BaseMessage

from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel

# What the assistant's message is about, looked for in this order: the summary, a booking
# question, a table and a list first, since their text repeats words of the criteria questions.
QUESTIONS: list[tuple[str, str]] = [
    (r"^Here is your search", "search now"),
    (r"Shall I book", "yes"),
    (r"^\| ", "choice"),
    (r"I found \d+ hotels?", "list"),
    (r"Portland, Oregon area\?", "yes"),
    (r"check in and check out|which dates|what dates", "dates"),
    (r"room type", "room"),
    (r"amenities", "amenities"),
    (r"distance", "distance"),
    (r"budget", "budget"),
]


def facts_of(persona: str) -> dict[str, str]:
    """The ``key: value`` lines of a persona."""
    facts = {}
    for line in persona.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().isidentifier():
            facts[key.strip().lower()] = value.strip()
    return facts


def guest_reply(messages: list[BaseMessage], tool_names: list[str]) -> str:
    """The guest's next message: an answer from the persona to the assistant's last question."""
    facts = facts_of(str(messages[0].content))
    said = [str(m.content) for m in messages if isinstance(m, AIMessage)]
    if len(messages) <= 2:
        return facts.get("opening", "Hi! I need a hotel in Portland.")
    last = str(messages[-1].content)
    for pattern, answer in QUESTIONS:
        if re.search(pattern, last, re.IGNORECASE | re.MULTILINE):
            return _answer(answer, facts, said)
    return facts.get("otherwise", "search now")


def _answer(answer: str, facts: dict[str, str], said: list[str]) -> str:
    if answer == "list":
        compare = facts.get("compare")
        return compare if compare and compare not in said else facts.get("choice", "book 1")
    if answer == "choice":
        return facts.get("choice", "book 1")
    if answer in ("yes", "search now"):
        return answer
    return facts.get(answer, "no preference")


def guest_provider(spec: ModelSpec | None = None) -> ScriptedChatModel:
    """The scripted guest (what ``"offline:guest"`` builds)."""
    return ScriptedChatModel(policy=guest_reply)
