"""TravelFlow's packages and bookings in a travel agent's words (issue 35 item 5).

PicoFlow's tables give ids, times and bare numbers; a traveller reads an offer: the airline and
the times out and back, the nights at a hotel with its stars and area, the activities, and the
total with its currency ("$1,285 in total"), never "flights R2+D2" or "Total 1285.". The
closing line names what was booked: the package, the trip's dates, the travellers and the
total. The demo's prices are in US dollars (`CURRENCY`): PicoFlow's tables name no currency.
"""

from __future__ import annotations

from datetime import date
from typing import Any

CURRENCY = "$"
"""The demo's currency: PicoFlow's mock prices carry none, so the demo shows them as dollars."""


def money(amount: Any) -> str:
    """An amount as a price: ``$1,285`` (cents only when there are some)."""
    value = float(amount or 0)
    return f"{CURRENCY}{value:,.0f}" if value == int(value) else f"{CURRENCY}{value:,.2f}"


def day(value: Any) -> str:
    """A plan's ISO date as "Tue, June 10, 2025" (as given when it is no ISO date)."""
    try:
        when = date.fromisoformat(str(value)[:10])
    except ValueError:
        return str(value)
    return when.strftime("%a, %B %-d, %Y")


def travellers(plan: dict[str, Any]) -> str:
    """ "2 travellers", "1 traveller"."""
    count = int(float(plan.get("adults") or 1))
    return f"{count} traveller{'s' if count != 1 else ''}"


def trip_line(plan: dict[str, Any]) -> str:
    """The trip in one line: where, when, how many nights, who, the class and the budget."""
    where = plan.get("destination") or "your destination"
    route = f"{plan['origin']} to {where}" if plan.get("origin") else where
    nights = int(float(plan.get("duration_days") or 0))
    when = f"{day(plan.get('departure_date'))} to {day(plan.get('return_date'))}"
    parts = [route, f"{when} ({nights} night{'s' if nights != 1 else ''})", travellers(plan)]
    parts.append(f"{str(plan.get('travel_class') or 'ECONOMY').lower()} class")
    if plan.get("budget") is not None:
        parts.append(f"budget {money(plan['budget'])}")
    return ", ".join(parts)


def offer(package: dict[str, Any], plan: dict[str, Any]) -> str:
    """One package as an offer: its name and total, then one line for each thing in it."""
    lines = [f"{package['name']}: {money(package.get('total_cost'))} in total"]
    if flight := package.get("flight"):
        lines.append(f"   Flights: {_flights(flight)}")
    if hotel := package.get("hotel"):
        nights = int(float(plan.get("duration_days") or 0))
        stay = f"{nights} night{'s' if nights != 1 else ''} at " if nights else ""
        lines.append(
            f"   Hotel: {stay}{hotel['name']} ({float(hotel['rating']):g}★, "
            f"{hotel['location']}), {money(hotel.get('price_per_night'))} a night"
        )
    if activities := package.get("activities"):
        listed = ", ".join(f"{a['name']} ({money(a.get('price'))})" for a in activities)
        lines.append(f"   Activities: {listed}")
    if plan.get("budget") is not None:
        lines.append(f"   {_against_budget(float(package.get('total_cost') or 0), plan)}")
    return "\n".join(lines)


def _flights(flight: dict[str, Any]) -> str:
    """ "Pico Airways, out 07:00 → 16:00, back 06:00 → 11:00" from the folded legs."""
    leaves = str(flight.get("departure_time") or "").split(" / ")
    lands = str(flight.get("arrival_time") or "").split(" / ")
    legs = [f"{a} → {b}" for a, b in zip(leaves, lands, strict=False) if a]
    names = ("out", "back")
    said = ", ".join(f"{names[i] if i < 2 else 'leg'} {leg}" for i, leg in enumerate(legs))
    price = f" ({money(flight['price'])})" if flight.get("price") is not None else ""
    return f"{flight.get('airline', 'the airline')}{price}" + (f", {said}" if said else "")


def _against_budget(total: float, plan: dict[str, Any]) -> str:
    budget = float(plan["budget"])
    if total <= budget:
        return f"{money(budget - total)} under your budget of {money(budget)}."
    return f"{money(total - budget)} over your budget of {money(budget)}."


def closing_prompt(package: dict[str, Any], plan: dict[str, Any]) -> str:
    """EndStep's prompt once a package is chosen: what was booked, for the goodbye to say."""
    return (
        "Thank the user for using the travel planning service and tell them that their chosen "
        f"package is booked: {booked(package, plan)}"
    )


def booked(package: dict[str, Any], plan: dict[str, Any]) -> str:
    """What was booked, in one sentence: package, trip, travellers and total."""
    return (
        f"{package.get('name', 'your package')} for {trip_line_short(plan)}, "
        f"{money(package.get('total_cost'))} in total."
    )


def trip_line_short(plan: dict[str, Any]) -> str:
    """ "London to Lisbon, Tue, June 10, 2025 to Fri, June 13, 2025, 2 travellers"."""
    where = plan.get("destination") or "your destination"
    route = f"{plan['origin']} to {where}" if plan.get("origin") else where
    when = f"{day(plan.get('departure_date'))} to {day(plan.get('return_date'))}"
    return f"{route}, {when}, {travellers(plan)}"
