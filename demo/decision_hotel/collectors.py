"""The five collectors of DecisionHotelFlow (research §3.2): one criterion each, in ``intake``.

Each has its capture tool and ``reroute_request``; a capture that passes the tool's checks
saves the owner's state and goes back to the router, which decides again in the same turn (so
a collector's success, the router's decision and the next collector's question are one turn).
A check that fails stays, with PicoFlow's message as the tool result, so the model asks again.
PicoFlow defines ``reroute_request`` once in DateRangeStep and exposes it on the others; here
the five share it from `CollectorStep`, picoflow's way of one tool on several steps.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import Field

from demo.decision_hotel.criteria import AMENITIES, strict_day
from demo.decision_hotel.shared import today_for
from picoflow import Step, direct_to, go, stay, tool

AmenityName = Literal[
    "freeWiFi", "nonSmoking", "freeBreakfast", "freeParking", "airportShuttle", "roomService",
    "fitnessCenter", "petFriendly", "digitalKey", "boutique", "onSiteRestaurant", "indoorPool",
    "businessCenter", "meetingRoom", "evCharging", "connectingRooms", "eveningReception",
    "concierge", "streaming", "kitchen", "tennis", "outdoorPool", "newHotel",
]  # fmt: skip
RoomTypeName = Literal["one bed", "two beds", "suite"]
assert get_args(AmenityName) == AMENITIES  # one vocabulary for the tool and the validation

Limit = Annotated[float | None, Field(allow_inf_nan=False)]
REROUTE = " A request about another criterion, a search or anything unrelated: call reroute_request"
AMENITY_QUESTION = (
    "Which hotel amenities do you require? For example, free WiFi, free parking, breakfast, "
    "a pool, or a fitness center."
)


class CollectorStep(Step):
    """What the five collectors share: the tool that hands a request back to the router."""

    @tool
    def reroute_request(self) -> Any:
        """Return a request that belongs to another hotel criterion to RouterStep."""
        return go("RouterStep")  # nothing is saved: the router reads the request itself

    def captured(self, state: dict[str, Any]) -> Any:
        """Save the owner's criterion and let the router decide again, in this turn."""
        self.save_state({"answered": True, **state})
        return go("RouterStep")


class DateRangeStep(CollectorStep):
    """Check-in and checkout, both after today."""

    def get_prompt(self) -> str:
        return (
            "You collect only the Portland hotel check-in and checkout dates. "
            f"CURRENT_DATE: {today_for(self).isoformat()}. When either date is missing, ask "
            "directly for both: no greeting, no 'how can I help', never ask whether the user "
            "wants to give dates. Check-in must be after CURRENT_DATE and checkout after "
            "check-in; then call capture_date_range with both dates in YYYY-MM-DD format."
            + REROUTE
            + " without answering it yourself."
        )

    @tool
    def capture_date_range(
        self,
        start: Annotated[str, Field(description="Check-in date in YYYY-MM-DD format.")],
        end: Annotated[str, Field(description="Checkout date in YYYY-MM-DD format.")],
    ) -> Any:
        """Save a complete hotel check-in and checkout date range."""
        start, end = start.strip(), end.strip()
        check_in, checkout = strict_day(start), strict_day(end)
        if check_in is None or checkout is None:
            return stay("Use valid calendar dates for both check-in and checkout.")
        if check_in <= today_for(self):
            return stay("Check-in must be after the current date.")
        if checkout <= check_in:
            return stay("Checkout must be after check-in.")
        return self.captured({"start": start, "end": end})


class BudgetStep(CollectorStep):
    """The nightly minimum and maximum; null for no limit."""

    def get_prompt(self) -> str:
        return (
            "You collect only the minimum and maximum nightly budget of a Portland hotel stay, "
            "in USD. Use null for a limit the user omits or explicitly does not have. When the "
            "budget is unclear, ask one concise clarification. Then call capture_budget."
            + REROUTE
            + "."
        )

    @tool
    def capture_budget(
        self,
        min: Annotated[Limit, Field(description="Minimum nightly budget in USD, or null.")],
        max: Annotated[Limit, Field(description="Maximum nightly budget in USD, or null.")],
    ) -> Any:
        """Save minimum and maximum nightly hotel budget. Use null for no limit."""
        if any(value is not None and value < 0 for value in (min, max)):
            return stay("Budget values cannot be negative.")
        if min is not None and max is not None and min > max:
            return stay("The minimum nightly budget cannot exceed the maximum.")
        return self.captured({"min": min, "max": max})


class RoomTypeStep(CollectorStep):
    """Exactly one of the three room types."""

    def get_prompt(self) -> str:
        return (
            "You collect exactly one room type: one bed, two beds, or suite. Normalize the "
            "user's wording (a room with two beds is two beds) and ask for clarification of an "
            "unsupported type. Then call capture_room_type." + REROUTE + "."
        )

    @tool
    def capture_room_type(
        self,
        roomType: Annotated[RoomTypeName, Field(description="One supported room type.")],
    ) -> Any:
        """Save one supported room type."""
        return self.captured({"roomType": roomType})


class AmenityStep(CollectorStep):
    """The amenities a hotel must have; an empty list for an explicit no preference."""

    def get_prompt(self) -> str:
        return (
            "You collect the hotel amenities the user requires. When the latest request gives "
            "no amenity preference, ask directly which amenities are required; never ask about "
            "other criteria or about searching. Map the user's wording to the allowed values "
            "(for example freeWiFi, freeBreakfast, freeParking, airportShuttle, fitnessCenter, "
            "petFriendly, indoorPool, outdoorPool, onSiteRestaurant) and pass every required "
            "amenity; pass an empty array only for an explicit no preference. Then call "
            "capture_amenities." + REROUTE + "."
        )

    @tool
    def capture_amenities(
        self,
        amenities: Annotated[
            list[AmenityName], Field(description="Every required amenity; [] for none.")
        ],
    ) -> Any:
        """Save required hotel amenities. Use an empty array for no preference."""
        return self.captured({"amenities": list(dict.fromkeys(amenities))})

    def on_response(self, reply: Any) -> Any:
        """Any reply of its own becomes PicoFlow's one fixed question."""
        return direct_to(AmenityStep, AMENITY_QUESTION)


class DistanceStep(CollectorStep):
    """Optional limits in miles to the airport and the city center."""

    def get_prompt(self) -> str:
        return (
            "You collect optional distance limits: the most miles from the Portland airport "
            "and from the Portland city center. Use null for a location without a limit, and "
            "null for both when distance does not matter. Then call capture_distance."
            + REROUTE
            + "."
        )

    @tool
    def capture_distance(
        self,
        airport: Annotated[Limit, Field(description="Most miles from the airport, or null.")],
        cityCenter: Annotated[
            Limit, Field(description="Most miles from the city center, or null.")
        ],
    ) -> Any:
        """Save maximum miles from the airport and city center. Use null for no limit."""
        if any(value is not None and value < 0 for value in (airport, cityCenter)):
            return stay("Distance limits cannot be negative.")
        return self.captured({"airport": airport, "cityCenter": cityCenter})
