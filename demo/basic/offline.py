"""The offline model of BasicFlow: rules that answer as a good LLM would, from what it is sent.

It is a `ScriptedChatModel` with a policy (a public test-kit class), so it enters the flow
through the engine's provider registry like any model: ``"offline:basic"``. It reads only the
messages and the names of the bound tools, which is all an LLM behind an API would see.
"""

from __future__ import annotations

import json
import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, structured, tool_call, tool_calls

_CITY = re.compile(r"\b(NYC|LA|[A-Z][a-z]+(?: [A-Z][a-z]+)?)\b")
_NAME = re.compile(r"(?:name is|i am|i'm|call me)\s+([A-Za-z][A-Za-z .'-]+)", re.I)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_ADDRESS = re.compile(
    r"(?P<street>\d+[^,]+),\s*(?P<city>[^,]+),\s*(?P<state>[A-Za-z]{2})\s+(?P<zip>[\d-]+)"
)
_COLOR = re.compile(r"colou?r is (\w+)", re.I)
_FOOD = re.compile(r"food is ([\w ]+?)(?:[.,!]|$| and)", re.I)
# How people name the two cities the weather tool knows, folded to the names it takes.
_ALIASES = (
    (re.compile(r"\bnew york(?: city)?\b|\bny(?:c| city)?\b", re.I), "NYC"),
    (re.compile(r"\blos angeles\b|\bl\.a\.|\bla\b(?![\w'])", re.I), "LA"),
)
_SKIP = {"What", "The", "I", "Hi", "Hello", "Weather", "Please", "How", "And", "In", "Continue"}


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    last = messages[-1]
    said = last.text if last.type == "human" else ""
    if last.type == "tool":  # a tool answered with feedback: tell the user what was wrong
        return relay(last.text)
    if tools == ["final_result"]:
        person = said.removeprefix("The person is ").rstrip(".")
        return structured({"title": "Casablanca", "who": f"{person} as Rick Blaine"})
    for name, rule in _RULES.items():
        if name in tools:
            return rule(said)
    return _favorites(said)


def relay(feedback: str) -> str:
    """A tool's feedback, told to the user: its facts, without the instructions to the model."""
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", feedback) if s.strip()]
    facts = [s for s in sentences if not s.startswith(("Ask", "Call"))]
    return "Sorry: " + " ".join(facts or sentences)


def _weather(said: str) -> AIMessage | str:
    for alias, city in _ALIASES:
        said = alias.sub(city, said)
    cities = [c for c in _CITY.findall(said) if c not in _SKIP]
    if cities:
        return tool_calls(*[("get_weather", {"city": city}) for city in cities])
    return "Which cities would you like the weather for? I can report NYC and LA."


def _name(said: str) -> AIMessage | str:
    found = _NAME.search(said)
    if found:
        return tool_call("save_name", name=found.group(1).strip().rstrip("."))
    return "Lovely! What is your full name?"


def _dob(said: str) -> AIMessage | str:
    found = _DATE.search(said)
    if found:
        return tool_call("save_dob", dob=found.group(1))
    return "When were you born? Please give the date as YYYY-MM-DD."


def _address(said: str) -> AIMessage | str:
    found = _ADDRESS.search(said)
    if found:
        parts = {k: v.strip() for k, v in found.groupdict().items()}
        return tool_call(
            "save_address",
            street=parts["street"],
            city=parts["city"],
            state=parts["state"],
            zip_code=parts["zip"],
        )
    return "What is your US mailing address (street, city, state code and ZIP)?"


def _favorites(said: str) -> str:
    color, food = _COLOR.search(said), _FOOD.search(said)
    if color and food:
        return json.dumps({"color": color.group(1), "food": food.group(1).strip()})
    return "Tell me your favourite colour and your favourite food."


_RULES: dict[str, Any] = {
    "get_weather": _weather,
    "save_name": _name,
    "save_dob": _dob,
    "save_address": _address,
}


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:basic"``."""
    if spec.name != "basic":
        raise ValueError(
            f"The BasicFlow offline provider has one model, 'offline:basic'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
