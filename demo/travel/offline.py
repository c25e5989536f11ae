"""The offline model of TravelFlow: rules that answer from the messages and bound tools only."""

from __future__ import annotations

import re
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.basic.offline import relay
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, tool_call

_FROM = re.compile(r"\bfrom (?P<origin>[A-Z][a-z]+)")
_TO = re.compile(r"\b(?:to|in|visit|visiting) (?P<destination>[A-Z][a-z]+)")
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_NIGHTS = re.compile(r"(\d+) nights?", re.I)
_ADULTS = re.compile(r"(\d+) (?:adults?|people|travell?ers)", re.I)
_BUDGET = re.compile(r"(?:under|budget of|max) (\d+)", re.I)
_ONLY = re.compile(r"\b(?:only|just) (flights|hotels|activities)\b", re.I)
_PICK = re.compile(r"\b(?:package|number|option) (\d)\b", re.I)
_IN = re.compile(r"(?:to|in) (?P<city>[A-Z][a-z]+)(?: on| for|\.)")
_CABIN = re.compile(r"Search (economy|business) flights")


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    last = messages[-1]
    system = str(messages[0].content)
    if "generate_packages" in tools:
        return _synthesize(messages)
    if last.type == "tool":
        return relay(last.text)
    for name in ("search_flights", "search_hotels", "search_activities"):
        if name in tools:
            return _search(name, system)
    if "submit_plan" in tools:
        return _plan([str(m.text) for m in messages if m.type == "human"])
    return "How can I help with your trip?"


def _plan(guest: list[str]) -> AIMessage | str:
    """Plan from everything the guest said so far (the latest value of each part wins), and
    name what is still missing instead of asking for everything again."""

    def latest(pattern: re.Pattern[str]) -> re.Match[str] | None:
        return next((found for text in reversed(guest) if (found := pattern.search(text))), None)

    said = " ".join(guest)
    origin, destination = latest(_FROM), latest(_TO)
    day, nights = latest(_DATE), latest(_NIGHTS)
    missing = [
        what
        for what, found in (
            ("where you leave from", origin),
            ("where you are going", destination),
            ("the day you leave (YYYY-MM-DD)", day),
            ("how many nights", nights),
        )
        if found is None
    ]
    if missing:
        if len(missing) == 4:
            return (
                "Where from and to, on which date (YYYY-MM-DD), and for how many nights? Tell "
                "me too if you only want flights, hotels or activities."
            )
        need = ", ".join(missing[:-1]) + (" and " if len(missing) > 1 else "") + missing[-1]
        return f"To plan it I still need {need}."
    assert origin and destination and day and nights  # all found: `missing` is empty
    only = _ONLY.search(said)
    plan: dict[str, Any] = {
        "intent": f"{only.group(1).lower()}_only" if only else "full_plan",
        "origin": origin.group("origin"),
        "destination": destination.group("destination"),
        "depart": day.group(1),
        "nights": int(nights.group(1)),
        "adults": int(adults.group(1)) if (adults := _ADULTS.search(said)) else 1,
        "cabin": "business" if "business" in said.lower() else "economy",
    }
    if budget := _BUDGET.search(said):
        plan["budget"] = int(budget.group(1))
    return tool_call("submit_plan", plan=plan)


def _search(name: str, system: str) -> AIMessage:
    city = _IN.search(system)
    args: dict[str, Any] = {"destination": city.group("city") if city else ""}
    if name == "search_flights":
        cabin = _CABIN.search(system)
        args["cabin"] = cabin.group(1) if cabin else "economy"
    return tool_call(name, args)


def _synthesize(messages: list[BaseMessage]) -> AIMessage | str:
    last = messages[-1]
    if last.type == "tool":
        called = getattr(messages[-2], "tool_calls", None) or [{"name": ""}]
        if called[0]["name"] == "submit_plan":  # the planner's results just arrived
            return tool_call("generate_packages")
        if last.text.startswith("Packages:"):
            return "Here are your options:\n" + last.text.removeprefix("Packages:\n")
        return relay(last.text)
    pick = _PICK.search(last.text)
    if pick:
        return tool_call("choose_package", number=int(pick.group(1)))
    return "Which package would you like: 1, 2 or 3?"


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:travel"``."""
    if spec.name != "travel":
        raise ValueError(
            f"The TravelFlow offline provider has one model, 'offline:travel'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
