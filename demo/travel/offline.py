"""The offline model of TravelFlow: rules that answer from the messages and bound tools only.

It plays every model of the flow, as an LLM behind an API would, from what each step sends:
the planner reads the traveller's messages (`demo.travel.reading`) and calls `submit_plan`
once the trip is complete, asking for what is missing otherwise; the search children read the
plan from their prompt and call their tool (FlightStep both searches in one response); the
synthesiser builds packages from the plan and options in its prompt, presents them, and books
the one the traveller picks by name, number or description (`demo.travel.choosing`).
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from demo.reading import corrections, goes_back, way_back
from demo.travel.choosing import answer, asks, choose
from demo.travel.offer import offer, trip_line
from demo.travel.reading import Trip, read_trip
from picoflow import ModelSpec
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

_TODAY = re.compile(r"today were (\d{4}-\d{2}-\d{2})")
FIRST_QUESTION = (
    "I'd love to help plan your trip! Please tell me:\n"
    "1. What you need: a full plan, or only flights, hotels or activities.\n"
    "2. Where you are leaving from and where you are going, your departure and return dates "
    "(or how many nights), and how many adults are travelling.\n"
    "3. Your preferred travel class and your total budget, if you have one."
)
CLOSING = (
    "Thank you for using our travel planning service! Your package is booked. Enjoy your trip!"
)


def respond(messages: list[BaseMessage], tools: list[str]) -> AIMessage | str:
    """The reply to `messages` for a step offering `tools`."""
    system = str(messages[0].content)
    if "generate_packages" in tools:
        return _synthesize(messages, system)
    if messages[-1].type == "tool" and not _back_from_packages(messages):
        return _relay(messages[-1].text)
    if "search_flights" in tools:
        plan = _json_after(system, "The travel plan is ") or {}
        out = {"origin": plan.get("origin") or "", "destination": plan.get("destination", "")}
        back = {"origin": out["destination"], "destination": out["origin"]}
        return tool_calls(
            ("search_flights", {**out, "date": plan.get("departure_date", ""), "isReturn": False}),
            ("search_flights", {**back, "date": plan.get("return_date", ""), "isReturn": True}),
        )
    for name in ("search_hotels", "search_activities"):
        if name in tools:
            plan = _json_after(system, "The travel plan is ") or {}
            return tool_call(name, location=plan.get("destination", ""))
    if "submit_plan" in tools:
        return _plan(messages, system)
    return closing(system) if "travel planning service" in system else "Goodbye!"


def closing(system: str) -> str:
    """The goodbye, naming what was booked when EndStep's prompt says it (issue 35 item 5)."""
    _, marker, booked = system.partition("package is booked: ")
    if not marker:
        return CLOSING
    return (
        f"Thank you for using our travel planning service! Your package is booked: "
        f"{booked.strip()} Enjoy your trip!"
    )


def _back_from_packages(messages: list[BaseMessage]) -> bool:
    """Whether the last tool result is `change_plan`'s: the planner goes on with the trip."""
    called = _called(messages, getattr(messages[-1], "tool_call_id", ""))
    return called is not None and called["name"] == "change_plan"


def _relay(feedback: str) -> str:
    return f"Sorry, that did not work: {feedback}"


def _json_after(text: str, marker: str) -> Any:
    """The JSON value that follows `marker` in `text` (None when absent or `undefined`)."""
    at = text.find(marker)
    if at < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, at + len(marker))
    except json.JSONDecodeError:
        return None
    return value


def _plan(messages: list[BaseMessage], system: str) -> AIMessage | str:
    found = _TODAY.search(system)
    today = date.fromisoformat(found.group(1)) if found else date.today()
    said = [m.text for m in messages if m.type == "human"]
    current = _json_after(system, "current plan: ")
    if current:  # back from the packages: the plan so far, then what was said
        said = [_in_words(current), *said]
    trip = read_trip(corrections.expand(said), today)
    gaps = trip.missing()
    if trip.depart is not None and trip.depart < today:
        return (
            f"{trip.depart.strftime('%B %-d, %Y')} is in the past: today is "
            f"{today.strftime('%B %-d, %Y')}. When would you like to leave?"
        )
    if current and (gaps or _same_plan(trip.plan(), current)):
        return _what_to_change(current)
    if not gaps:
        return tool_call("submit_plan", trip.plan())
    if len(gaps) >= 4 or not trip.said:
        opener = _about() if trip.asked else ""
        return opener + FIRST_QUESTION
    opener = _about() if trip.asked else ""
    return f"{opener}{_known(trip)}To plan it I still need {_join(gaps)}."


def _in_words(plan: dict[str, Any]) -> str:
    """The current plan as a traveller would say it, read before what they say now."""
    intent = {"flights_only": "flights only, ", "hotels_only": "hotels only, "}
    words = intent.get(plan.get("user_intent"), "")
    words += "activities only, " if plan.get("user_intent") == "activities_only" else ""
    origin = f"from {plan['origin']} " if plan.get("origin") else ""
    words += f"{origin}to {plan.get('destination')}, leaving {plan.get('departure_date')}, "
    words += f"back {plan.get('return_date')}, {plan.get('adults') or 1} adults, "
    words += f"{str(plan.get('travel_class') or 'economy').lower()} class"
    return words + (f", budget {plan['budget']}" if plan.get("budget") is not None else "")


def _same_plan(plan: dict[str, Any], current: dict[str, Any]) -> bool:
    return all(current.get(key) == value for key, value in plan.items())


def _what_to_change(plan: dict[str, Any]) -> str:
    """Back from the packages with nothing changed yet: the trip so far, and what may change."""
    return (
        f"Of course. Your trip so far: {trip_line(plan)}. What would you like to change: the "
        "dates, the destination, the travellers, the class or the budget?"
    )


def _about() -> str:
    return (
        "I plan trips anywhere: flights, hotels and activities, and I can put together "
        "packages once I know your trip. "
    )


def _known(trip: Trip) -> str:
    parts = []
    if trip.destination:
        parts.append(f"a trip to {trip.destination}")
    if trip.origin:
        parts.append(f"from {trip.origin}")
    if trip.depart:
        parts.append(f"leaving {trip.depart.isoformat()}")
    if trip.back:
        parts.append(f"back {trip.back.isoformat()}")
    if trip.adults:
        parts.append(f"for {trip.adults} adult{'s' if trip.adults > 1 else ''}")
    return f"Got it: {' '.join(parts)}. " if parts else ""


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


# -- the synthesiser ----------------------------------------------------------------------


def _synthesize(messages: list[BaseMessage], system: str) -> AIMessage | str:
    last = messages[-1]
    if last.type == "tool":
        called = _called(messages, getattr(last, "tool_call_id", ""))
        if called is not None and called["name"] == "generate_packages":
            return present(called["args"].get("packages") or [], _plan_of(system))
        if called is not None and called["name"] in ("choose_package", "generate_packages"):
            return _relay(last.text)
        return tool_call("generate_packages", packages=build_packages(system))
    packages = _offered(messages)
    if not packages:
        return tool_call("generate_packages", packages=build_packages(system))
    said = corrections.expand([last.text])[-1]  # "number 3, no wait, the first one"
    if corrections.withdrawn(said):
        return (
            "No problem: I haven't booked anything. Tell me the package you'd like when you're "
            "ready."
        )
    picked = choose(said, packages)
    if picked is None and (_changes_trip(said, system) or _changes_trip(last.text, system)):
        return tool_call("change_plan")  # issue 35 item 4: back to the planner, plan kept
    if picked is None:
        return answer(last.text, packages, _plan_of(system))
    return tool_call("choose_package", chosenPackage=picked)


def _changes_trip(text: str, system: str) -> bool:
    """ "Start over", "change my dates", "go back", or a new fact of the trip said as a wish
    ("same trip but 5 nights instead", "make it 3 adults"), not a question about a package."""
    if way_back(text) or goes_back(text):
        return True
    plan = _plan_of(system)
    today = date.fromisoformat(str(plan.get("departure_date") or date.today().isoformat())[:10])
    trip = read_trip([text], today)
    facts = (trip.destination, trip.origin, trip.depart, trip.back, trip.days, trip.adults)
    said = any(v is not None for v in (*facts, trip.travel_class, trip.budget, trip.intent))
    return said and not asks(text)


def _called(messages: list[BaseMessage], call_id: str) -> dict[str, Any] | None:
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call["id"] == call_id:
                return dict(call)
    return None


def _offered(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    for message in reversed(messages):
        for call in getattr(message, "tool_calls", None) or []:
            if call["name"] == "generate_packages":
                return list(call["args"].get("packages") or [])
    return []


def _plan_of(system: str) -> dict[str, Any]:
    return _json_after(system, "CLIENT'S PLAN:\n") or {}


def _options(system: str, name: str) -> list[dict[str, Any]]:
    return sorted(_json_after(system, f"{name}: ") or [], key=lambda o: _price(o))


def _price(option: dict[str, Any]) -> float:
    return float(option.get("price", option.get("price_per_night", 0)))


_TIERS = (("Budget", "Saver", 0, 1), ("Balanced", "Getaway", 1, 2), ("Premium", "Indulgence", 2, 3))


def build_packages(system: str) -> list[dict[str, Any]]:
    """Budget, Balanced and Premium packages (only Budget when even that is over budget)."""
    plan = _plan_of(system)
    intent = plan.get("user_intent", "full_plan")
    out, back = _options(system, "Departure Flights"), _options(system, "Return Flights")
    hotels, activities = _options(system, "Hotels"), _options(system, "Activities")
    packages = []
    for label, noun, tier, count in _TIERS:
        package: dict[str, Any] = {"name": f"{label} {plan.get('destination', 'Trip')} {noun}"}
        if intent in ("full_plan", "flights_only") and (out or back):
            package["flight"] = _fold(_tier(out, tier), _tier(back, tier))
        if intent in ("full_plan", "hotels_only") and hotels:
            package["hotel"] = _tier(hotels, tier)
        if intent in ("full_plan", "activities_only"):
            package["activities"] = activities[:count]
        package["total_cost"] = _total(package, plan.get("duration_days") or 1)
        package["budget_comment"] = _comment(package["total_cost"], plan.get("budget"))
        packages.append(package)
    budget = plan.get("budget")
    if budget is not None and packages[0]["total_cost"] > budget:
        return packages[:1]
    return packages


def _tier(options: list[dict[str, Any]], tier: int) -> dict[str, Any] | None:
    if not options:
        return None
    return options[min(len(options) - 1, tier * (len(options) - 1) // 2)]


def _fold(out: dict[str, Any] | None, back: dict[str, Any] | None) -> dict[str, Any]:
    """One flight object for the trip there and back, as the recorded model made it."""
    legs = [leg for leg in (out, back) if leg is not None]
    airlines = list(dict.fromkeys(leg["airline"] for leg in legs))
    return {
        "id": "+".join(leg["id"] for leg in legs),
        "airline": " / ".join(airlines),
        "price": sum(leg["price"] for leg in legs),
        "departure_time": " / ".join(leg["departure_time"] for leg in legs),
        "arrival_time": " / ".join(leg["arrival_time"] for leg in legs),
    }


def _total(package: dict[str, Any], days: float) -> float:
    total = (package.get("flight") or {}).get("price", 0)
    total += (package.get("hotel") or {}).get("price_per_night", 0) * days
    total += sum(a["price"] for a in package.get("activities") or [])
    return int(total) if total == int(total) else total


def _comment(total: float, budget: float | None) -> str:
    if budget is None:
        return "No budget was given."
    if total <= budget:
        return f"{budget - total:g} under your budget of {budget:g}."
    return f"{total - budget:g} over your budget of {budget:g}."


def present(packages: list[dict[str, Any]], plan: dict[str, Any]) -> str:
    """The packages in prose, numbered, with a request to choose."""
    if not packages:
        return "I could not put a package together from these options."
    where = plan.get("destination") or "your trip"
    lines = [f"Here are your packages for {where} ({trip_line(plan)}):"]
    for number, package in enumerate(packages, 1):
        lines.append(f"{number}. {offer(package, plan)}")
    lines.append("Which package would you like? Tell me its name or number.")
    return "\n".join(lines)


def offline_provider(spec: ModelSpec) -> ScriptedChatModel:
    """The provider factory behind ``"offline:travel"`` (with or without params)."""
    if spec.name != "travel":
        raise ValueError(
            f"The TravelFlow offline provider has one model, 'offline:travel'; got "
            f"'offline:{spec.name}'."
        )
    return ScriptedChatModel(policy=respond)
