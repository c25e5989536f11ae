"""TravelFlow, ported from PicoFlow's demo point by point (research: pico-demo-flows.md §3).

    PlannerStep ──submit_plan──▶ nested FlightStep, HotelStep, ActivityStep ──▶ SynthesizerStep
    SynthesizerStep ──generate_packages (stay)──▶ presents the packages
    SynthesizerStep ──choose_package──▶ EndStep (with_prompt: the closing line)

The planner extracts a `TravelPlan`; `submit_plan` saves it and runs the searches its intent
needs as nested children, one after another, inside the tool. Each child has one search tool
over the mock tables of ``demo.travel.data`` (the same results for any destination, as in the
original), saves what it found and ends its run with ``direct("{}")``. The five working steps
share the namespace ``travelPlan``; EndStep keeps its own. PlannerStep, FlightStep and
SynthesizerStep use the reasoning model (PicoFlow's ``gpt-5``), the others the flow's default
(``gpt-4o``); offline both are ``offline:travel``, the reasoning one with its own params.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, ClassVar

from pydantic import Field

from demo.reading import today_of
from demo.travel.data import ACTIVITIES, DEPARTURE_FLIGHTS, HOTELS, RETURN_FLIGHTS
from demo.travel.offer import closing_prompt
from demo.travel.offline import offline_provider
from demo.travel.types import TravelPackage, TravelPlan
from picoflow import EndStep, Flow, ModelLike, ModelSpec, Step, direct, go, stay, tool, turn_window

OFFLINE_MODEL = ModelSpec("offline", "travel")
OFFLINE_REASONING_MODEL = ModelSpec("offline", "travel", params={"reasoning_effort": "low"})
MEMORY = "travelPlan"
PICOFLOW_TODAY = "2025-05-01"
"""The day PicoFlow's planner prompt took as today; its ported scenarios and the corpora written
against it fix it as ``config.today``. Without one, the planner's today is the real date."""
CLOSING_PROMPT = (
    "Thank the user for using the travel planning service and tell them that their chosen "
    "package is booked."
)
"""PicoFlow's closing prompt; the port adds what was booked (`demo.travel.offer.closing_prompt`)."""


def compact(value: Any) -> str:
    """JSON.stringify: compact JSON, or ``undefined`` for a value that was never set."""
    return "undefined" if value is None else json.dumps(value, separators=(",", ":"))


class PlannerStep(Step):
    """Intake: extracts the trip request and runs the searches it needs."""

    # submit_plan picks its children from the plan's intent; the graph cannot read that
    nested_steps = ("FlightStep", "HotelStep", "ActivityStep")

    def today(self) -> Any:
        """The run's `config.today` (a test or scenario fixes it), else the real date."""
        return today_of(self.get_context("config.today"))

    def get_prompt(self) -> str:
        return (
            "You are a world-class travel analyst. Extract structured trip information from "
            "the user's request as JSON matching the provided schema, and ask the user for all "
            "three categories of information:\n"
            "1. User intent: full_plan (any combination of flights, hotels or activities), "
            "flights_only, hotels_only or activities_only.\n"
            "2. Core details: origin (may be null), destination (mandatory), departure and "
            "return dates as absolute YYYY-MM-DD dates, computing relative dates as if today "
            f"were {self.today().isoformat()}; duration_days is the number of days between "
            "departure and return; "
            "adults is the number of travellers (default 1).\n"
            "3. Budget preferences: travel_class from words such as 'business' or 'first "
            "class' (default ECONOMY), and budget as a number."
        ) + self._current_plan()

    def _current_plan(self) -> str:
        """Issue 35: back from the packages, the plan so far is kept where nothing changes."""
        plan = self.get_state("travelPlan")
        if not plan:
            return ""
        return (
            f"\nThe traveller's current plan: {compact(plan)}. Keep every field they do not "
            "change; when they change nothing yet, say what the plan is and ask what to change."
        )

    @tool(args_schema=TravelPlan)
    async def submit_plan(self, plan: TravelPlan) -> Any:
        """Submit the structured travel plan extracted from the user request."""
        today = self.today()
        if plan.departure_date < today:  # issue 35: a past date is said to be past, not planned
            return stay(
                f"The departure date {plan.departure_date.isoformat()} is in the past: today is "
                f"{today.isoformat()}. Ask the traveller for a departure date from today on."
            )
        self.save_state({"travelPlan": plan.model_dump(mode="json")})
        for child in CHILDREN[plan.user_intent]:
            await self.run_step(child)  # one after another; their replies are not used
        return go(SynthesizerStep)


class _SearchStep(Step):
    """A nested child of PlannerStep: its prompt carries the plan as compact JSON."""

    def plan_json(self) -> str:
        return compact(self.flow.get_step_state(PlannerStep, "travelPlan"))


class FlightStep(_SearchStep):
    """Searches departure and return flights."""

    def get_prompt(self) -> str:
        return (
            f"You are a flight search agent. The travel plan is {self.plan_json()}. Search for "
            "both the departure and the return flights matching the plan: call search_flights "
            "for each."
        )

    @tool
    def search_flights(
        self,
        origin: str,
        destination: str,
        date: str,
        isReturn: Annotated[bool, Field(description="whether the flight is a return flight")],
    ) -> Any:
        """Search for flight options."""
        if isReturn:
            self.save_state({"returnFlights": RETURN_FLIGHTS})
        else:
            self.save_state({"departureFlights": DEPARTURE_FLIGHTS})
        return direct("{}")


class HotelStep(_SearchStep):
    """Searches hotels in the destination."""

    def get_prompt(self) -> str:
        return (
            f"You are a hotel search agent. The travel plan is {self.plan_json()}. Search for "
            "hotels in the destination."
        )

    @tool
    def search_hotels(self, location: str) -> Any:
        """Search for hotel options."""
        self.save_state({"hotels": HOTELS})
        return direct("{}")


class ActivityStep(_SearchStep):
    """Searches activities in the destination."""

    def get_prompt(self) -> str:
        return (
            f"You are an activity search agent. The travel plan is {self.plan_json()}. Search "
            "for activities in the destination."
        )

    @tool
    def search_activities(self, location: str) -> Any:
        """Search for activity options."""
        self.save_state({"activities": ACTIVITIES})
        return direct("{}")


CHILDREN: dict[str, list[type[Step]]] = {
    "full_plan": [FlightStep, HotelStep, ActivityStep],
    "flights_only": [FlightStep],
    "hotels_only": [HotelStep],
    "activities_only": [ActivityStep],
}


class SynthesizerStep(Step):
    """Builds up to three packages from the plan and the options, and books the chosen one."""

    async def run(self, message: str | None = None) -> Any:
        # U3, as PicoFlow's override: pre-save context keys (nobody sets them, so this stores
        # plan None and three empty lists, kept for a faithful final state), then run as usual
        flow = self.flow
        self.save_state(
            {
                "plan": flow.get_context("travelPlan"),
                "flights": flow.get_context("flightOptions") or [],
                "hotels": flow.get_context("hotelOptions") or [],
                "activities": flow.get_context("activityOptions") or [],
            }
        )
        return await super().run(message)

    def get_prompt(self) -> str:
        flow = self.flow
        options = {
            "Departure Flights": flow.get_step_state(FlightStep, "departureFlights"),
            "Return Flights": flow.get_step_state(FlightStep, "returnFlights"),
            "Hotels": flow.get_step_state(HotelStep, "hotels"),
            "Activities": flow.get_step_state(ActivityStep, "activities"),
        }
        listed = "\n".join(f"{name}: {compact(value)}" for name, value in options.items())
        return (
            "You are an expert travel consultant. Create up to three travel packages from the "
            "client's plan and the available options:\n"
            "1. Check whether the basic trip fits the budget.\n"
            "2. If the cheapest combination is over budget, create ONE 'Budget' package only; "
            "otherwise create THREE: Budget, Balanced and Premium.\n"
            "3. Contents by intent: flights_only: 2 flights (departure and return); "
            "hotels_only: 1 hotel; activities_only: 1 to 3 activities; full_plan: 2 flights, "
            "1 hotel and 1 to 3 activities.\n"
            "4. total_cost = flight + (hotel price_per_night x duration_days) + activities.\n"
            "5. Write budget_comment from the difference to the total budget.\n"
            "6. Give every package a creative name.\n"
            "7. Call generate_packages with the packages.\n"
            "8. Ask the user to choose a package, and call choose_package with it.\n\n"
            f"CLIENT'S PLAN:\n{compact(flow.get_step_state(PlannerStep, 'travelPlan'))}\n\n"
            f"AVAILABLE OPTIONS:\n{listed}"
        )

    @tool
    def generate_packages(self, packages: list[TravelPackage]) -> Any:
        """Submit the generated travel packages."""
        self.save_state({"packages": [p.model_dump(mode="json") for p in packages]})
        return stay()  # the model is called again and presents them

    @tool
    def change_plan(self) -> Any:
        """Go back to the planner: the traveller wants to change the trip (dates, destination,
        travellers, class or budget) or start over. The plan so far is kept."""
        return go(PlannerStep)

    @tool
    def choose_package(self, chosenPackage: TravelPackage) -> Any:
        """Choose a package."""
        chosen = chosenPackage.model_dump(mode="json")
        self.save_state({"chosenPackage": chosen})
        plan = self.flow.get_step_state(PlannerStep, "travelPlan") or {}
        return go(EndStep).with_prompt(closing_prompt(chosen, plan))  # issue 35: names it


class TravelFlow(Flow):
    """A trip planner: one planner, three nested searches, packages, a booking."""

    chat_model: ClassVar[ModelLike | None] = None
    reasoning_model: ClassVar[ModelLike | None] = None
    # the providers the flow's models need ("offline:travel"), for engines built without them
    providers: ClassVar[dict[str, Any]] = {"offline": offline_provider}

    def __init__(self) -> None:
        super().__init__()
        # Issue 25: every namespace is bounded whatever the user does. The stage's data lives in
        # state, so a user who lingers keeps the last turns of the conversation only (M11);
        # PicoFlow's own run of this flow never reaches the window.
        for namespace in ("travelPlan", "EndStep"):
            self.get_memory().set_policy(namespace, turn_window(max_turns=12, keep_turns=6))

    @classmethod
    def using(cls, model: ModelLike, reasoning: ModelLike | None = None) -> type[TravelFlow]:
        """This flow on ``model`` (``reasoning`` for the gpt-5 steps; default: ``model``).

        It keeps the persisted flow name "TravelFlow".
        """
        attrs = {"name": cls.name, "chat_model": model, "reasoning_model": reasoning or model}
        return type(cls.name, (cls,), attrs)

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def reasoning(self) -> ModelLike:
        """The model of the steps PicoFlow runs on ``gpt-5``."""
        model = self.reasoning_model
        return model if model is not None else OFFLINE_REASONING_MODEL

    def initial_step(self) -> type[Step]:
        return PlannerStep

    def define_steps(self) -> list[Step]:
        return [
            PlannerStep(self).use_memory(MEMORY).use_model(self.reasoning()),
            FlightStep(self).use_memory(MEMORY).use_model(self.reasoning()),
            HotelStep(self).use_memory(MEMORY),
            ActivityStep(self).use_memory(MEMORY),
            SynthesizerStep(self).use_memory(MEMORY).use_model(self.reasoning()),
            EndStep(self),
        ]
