"""The offline models of DecisionHotelFlow: ``offline:decision_hotel`` and ``...-decide``.

``offline:decision_hotel`` plays the chat model of every chat step, from what an LLM is sent:
the step's prompt, the ``intake`` (or ``present``) messages and the bound tools. A collector
captures its own criterion from the guest's newest words (keeping what it captured before where
a revision names only part of it), asks when the words are unclear, withdrawn or invalid, and
hands anything else back with ``reroute_request``; PresentStep's model drafts the list, books
only an explicit pick, and sends revisions back. ``offline:decision_hotel-decide`` answers the
decision steps' structured-output call (`demo.decision_hotel.offline_decide`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.decision_hotel.amenities import read_amenities
from demo.decision_hotel.collectors import AMENITY_QUESTION
from demo.decision_hotel.conversation import (
    earlier_calls,
    last_reply,
    latest_request,
    stated_date,
    tool_feedback,
)
from demo.decision_hotel.offline_decide import decide
from demo.decision_hotel.offline_present import present
from demo.decision_hotel.reading import (
    Said,
    bare_budget,
    bare_miles,
    both_places,
    nights_after,
    no_budget,
    no_distance,
    off_topic,
    read,
    wants_exit,
    wants_review,
    wants_search,
    without_inquiries,
)
from demo.hotel.offline._criteria import parse_budget
from picoflow import ModelSpec
from picoflow.decisions import LangChainDecisionProvider
from picoflow.testing import ScriptedChatModel, tool_call

CHAT_MODEL = "decision_hotel"
DECIDE_MODEL = "decision_hotel-decide"
DATES_QUESTION = "What are your check-in and checkout dates?"
BUDGET_QUESTION = (
    "What nightly budget should I search with? Give a maximum, a minimum or both, or say you "
    "have no budget limit."
)
ROOM_QUESTION = "Which room type would you like: one bed, two beds, or a suite?"
DISTANCE_QUESTION = (
    "Do you have a distance limit? Tell me the most miles from the Portland airport and from "
    "the city center, or say distance does not matter."
)
NOTHING_SAVED = "No problem, I haven't saved that."
Reply = AIMessage | str
FIELD_OF_TOOL = {
    "capture_date_range": "dates",
    "capture_budget": "budget",
    "capture_room_type": "room_type",
    "capture_amenities": "amenities",
    "capture_distance": "distance",
}


def respond(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """The chat model's reply to `messages` for a step offering `tools`."""
    if "chosen_hotel" in tools:
        return present(messages, tools)
    tool = next((name for name in tools if name in FIELD_OF_TOOL), None)
    if tool is None:
        return "Thanks for considering Hilton hotels in Portland."
    return COLLECTORS[tool](messages, tools)


def _turn(
    messages: list[BaseMessage], tools: list[str], question: str
) -> tuple[str | None, Reply | None]:
    """The guest's words a collector must read, or the reply it gives without reading any."""
    feedback = tool_feedback(messages, tools)
    if feedback is not None:  # the capture tool refused the value: say why, ask again
        return None, f"{feedback} {question}"
    said = latest_request(messages)
    if said is None or not said.strip():
        return None, question
    return said, None


def _elsewhere(said: Said, own: str, text: str) -> bool:
    """Whether the words belong to the router: another criterion, search, review, an exit."""
    others = [name for name in said.touches() if name != own]
    intent = wants_search(text) or wants_review(text) or wants_exit(text)
    return bool(others or intent)


def _reroute_or(said: Said, own: str, text: str, question: str) -> Reply:
    if said.withdrawn:
        return f"{NOTHING_SAVED} {question}"
    if _elsewhere(said, own, text) or off_topic(text):
        return tool_call("reroute_request")
    return question


# -- dates ----------------------------------------------------------------------------------


def collect_dates(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """DateRangeStep: both dates, or the one that is missing asked for."""
    text, reply = _turn(messages, tools, DATES_QUESTION)
    if reply is not None or text is None:
        return reply or DATES_QUESTION
    today = stated_date(str(messages[0].content))
    said = read(text, today)
    if said.withdrawn:
        return _reroute_or(said, "dates", text, DATES_QUESTION)
    if not said.dates_named:
        pending = _pending_dates(messages, text, today)
        return pending or _reroute_or(said, "dates", text, DATES_QUESTION)
    if said.date_trouble:
        return f"{said.date_trouble}. {DATES_QUESTION}"
    if said.several_ranges:
        return f"I can search one continuous stay. {DATES_QUESTION}"
    return _dates_reply(said.start, said.end, messages, text, today)


def _dates_reply(
    start: date | None, end: date | None, messages: list[BaseMessage], text: str, today: date
) -> Reply:
    known_in, known_out = _asked_about(last_reply(messages))
    if known_in is None and known_out is None:
        start, end = _kept_end(start, end, _last_call(messages, "capture_date_range"))
    if start is not None and end is None and known_out is not None:
        end = known_out  # the check-in, after the checkout was given
    elif start is not None and end is None and known_in is not None:
        named = start  # the one day this follow-up names: the checkout, if after the check-in
        start, end = known_in, nights_after(known_in, text) or (named if named > known_in else None)
    elif start is None and end is not None and known_in is not None:
        start = known_in  # "leaving on the 26th", after the check-in was given
    if start is not None and end is not None:
        return tool_call("capture_date_range", start=start.isoformat(), end=end.isoformat())
    if start is not None:
        return f"Check-in on {_day(start)}. What is your checkout date?"
    assert end is not None
    return f"Checkout on {_day(end)}. What is your check-in date?"


def _pending_dates(messages: list[BaseMessage], text: str, today: date) -> Reply | None:
    """A follow-up with no date of its own: "3 nights" after the check-in was given."""
    known_in, _ = _asked_about(last_reply(messages))
    if known_in is None:
        return None
    end = nights_after(known_in, text)  # no date of its own: only a length may complete it
    if end is None:
        return None
    return tool_call("capture_date_range", start=known_in.isoformat(), end=end.isoformat())


def _kept_end(
    start: date | None, end: date | None, before: dict[str, Any] | None
) -> tuple[date | None, date | None]:
    """A revision of one end keeps the other end captured before ("check in on the 17th
    instead"), when the stay still runs forward; with nothing captured, the other is asked."""
    if before is None or (start is None) == (end is None):
        return start, end
    try:
        old_start, old_end = (date.fromisoformat(before[k]) for k in ("start", "end"))
    except (KeyError, TypeError, ValueError):
        return start, end
    if start is not None and start < old_end:
        return start, old_end
    if end is not None and old_start < end:
        return old_start, end
    return start, end


def _asked_about(reply: str) -> tuple[date | None, date | None]:
    """The check-in or checkout the model's last question already holds."""
    for prefix, index in (("Check-in on ", 0), ("Checkout on ", 1)):
        if reply.startswith(prefix):
            try:
                day = date.fromisoformat(reply[len(prefix) : len(prefix) + 10])
            except ValueError:
                return None, None
            return (day, None) if index == 0 else (None, day)
    return None, None


def _day(day: date) -> str:
    return f"{day.isoformat()} ({day.strftime('%A, %B')} {day.day})"


# -- budget, room type, amenities, distance --------------------------------------------------


def _last_call(messages: list[BaseMessage], name: str) -> dict[str, Any] | None:
    """The arguments of the model's last call of `name` (what it captured before), or None."""
    calls = earlier_calls(messages, name)
    return calls[-1] if calls else None


def collect_budget(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """BudgetStep: the ends the guest names; a lone amount is the most they will pay."""
    text, reply = _turn(messages, tools, BUDGET_QUESTION)
    if reply is not None or text is None:
        return reply or BUDGET_QUESTION
    said = read(text, stated_date(str(messages[0].content)))
    before = _last_call(messages, "capture_budget")
    if said.budget is not None and not said.withdrawn:
        value = said.budget_after(before if len(said.budget) == 1 else None)
        return tool_call("capture_budget", min=value["min"], max=value["max"])
    if not said.withdrawn and not _elsewhere(said, "budget", text):
        answer = parse_budget(text)  # answering the budget question: no price word needed
        lone = bare_budget(text) or (answer and {"min": answer.minimum, "max": answer.maximum})
        if lone is not None:
            return tool_call("capture_budget", min=lone["min"], max=lone["max"])
        if no_budget(text):
            return tool_call("capture_budget", min=None, max=None)
    return _reroute_or(said, "budget", text, BUDGET_QUESTION)


def collect_room(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """RoomTypeStep: one of the three; "a double" or "a studio" is asked about."""
    text, reply = _turn(messages, tools, ROOM_QUESTION)
    if reply is not None or text is None:
        return reply or ROOM_QUESTION
    said = read(text, stated_date(str(messages[0].content)))
    if said.room_type is not None and not said.withdrawn:
        return tool_call("capture_room_type", roomType=said.room_type)
    if said.room_unclear and not said.withdrawn:
        return f"We have one bed, two beds, or a suite. {ROOM_QUESTION}"
    return _reroute_or(said, "room_type", text, ROOM_QUESTION)


def collect_amenities(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """AmenityStep: every required amenity; an explicit none is an empty list."""
    text, reply = _turn(messages, tools, AMENITY_QUESTION)
    if reply is not None or text is None:
        return reply or AMENITY_QUESTION
    said = read(text, stated_date(str(messages[0].content)))
    before = (_last_call(messages, "capture_amenities") or {}).get("amenities")
    if said.amenities is None and not said.withdrawn and not _elsewhere(said, "amenities", text):
        answer = read_amenities(without_inquiries(text), answering=True)
        if answer.says_something():
            said.amenities = answer
    if said.amenities is not None and not said.withdrawn:
        wanted = said.amenities.applied_to(before)
        if wanted is not None:
            return tool_call("capture_amenities", amenities=wanted)
    if said.amenity_words and not said.withdrawn:
        return f"I can't filter on {', '.join(dict.fromkeys(said.amenity_words))}."
    return _reroute_or(said, "amenities", text, AMENITY_QUESTION)


def collect_distance(messages: list[BaseMessage], tools: list[str]) -> Reply:
    """DistanceStep: the most miles per place; "near" and a place-less number are asked."""
    text, reply = _turn(messages, tools, DISTANCE_QUESTION)
    if reply is not None or text is None:
        return reply or DISTANCE_QUESTION
    said = read(text, stated_date(str(messages[0].content)))
    before = _last_call(messages, "capture_distance")
    if said.distance is not None and not said.withdrawn:
        value = said.distance_after(before if len(said.distance) == 1 else None)
        return tool_call(
            "capture_distance", airport=value["airport"], cityCenter=value["cityCenter"]
        )
    if said.withdrawn or _elsewhere(said, "distance", text):
        return _reroute_or(said, "distance", text, DISTANCE_QUESTION)
    return _distance_answer(messages, text, said)


def _distance_answer(messages: list[BaseMessage], text: str, said: Said) -> Reply:
    miles = bare_miles(text)
    if miles is not None and both_places(text):
        return tool_call("capture_distance", airport=miles, cityCenter=miles)
    if miles is not None:
        return f"{miles:g} miles from the airport, the city center, or both?"
    pending = _pending_miles(last_reply(messages))
    place = _place_answer(text)
    if pending is not None and place is not None:
        limits: dict[str, float | None] = {"airport": None, "cityCenter": None}
        limits.update({name: pending for name in place})
        return tool_call("capture_distance", **limits)
    if no_distance(text):
        return tool_call("capture_distance", airport=None, cityCenter=None)
    if said.distance_vague:
        return (
            "How many miles at most? Tell me the limit from the airport, the city center, or both."
        )
    return _reroute_or(said, "distance", text, DISTANCE_QUESTION)


def _pending_miles(reply: str) -> float | None:
    head, _, rest = reply.partition(" miles from the airport, the city center, or both?")
    return float(head) if rest == "" and head and head.replace(".", "", 1).isdigit() else None


def _place_answer(text: str) -> list[str] | None:
    lowered = text.lower()
    if both_places(text) or ("airport" in lowered and ("city" in lowered or "downtown" in lowered)):
        return ["airport", "cityCenter"]
    if "airport" in lowered:
        return ["airport"]
    if "city" in lowered or "downtown" in lowered or "center" in lowered:
        return ["cityCenter"]
    return None


COLLECTORS: dict[str, Callable[[list[BaseMessage], list[str]], Reply]] = {
    "capture_date_range": collect_dates,
    "capture_budget": collect_budget,
    "capture_room_type": collect_room,
    "capture_amenities": collect_amenities,
    "capture_distance": collect_distance,
}


def decision_provider() -> LangChainDecisionProvider:
    """The decision provider an engine registers for this flow: decisions by the step's model.

    ``FlowEngine([DecisionHotelFlow], decision_providers=[decision_provider()])``: it builds
    ``config_decision()``'s model (``offline:decision_hotel-decide``, or the one given to
    ``DecisionHotelFlow.using(..., decide=...)``) through the engine's model providers and asks
    it through structured output: what an engine built with no decision provider registers by
    itself for a flow whose decisions name a model.
    """
    return LangChainDecisionProvider(id="offline")


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:decision_hotel"`` and ``"...-decide"``."""
    policies: dict[str, Any] = {CHAT_MODEL: respond, DECIDE_MODEL: decide}
    if spec.name not in policies:
        raise ValueError(
            f"The DecisionHotelFlow offline provider has two models, 'offline:{CHAT_MODEL}' and "
            f"'offline:{DECIDE_MODEL}'; got 'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=policies[spec.name])
