"""TravelFlow, ported from PicoFlow's demo: a planner runs the searches as nested steps.

    PlannerStep ──submit_plan──▶ (nested: FlightStep, HotelStep, ActivityStep) ──▶ SynthesizerStep
    SynthesizerStep ──generate_packages (stay)──▶ presents up to three packages
    SynthesizerStep ──choose_package──▶ finish()

`submit_plan(plan: TravelPlan)` runs the children the plan's intent needs, inside the tool:
`run_steps` when several, `run_step` for one. Each child calls its own search tool over
``demo.travel.data``, keeps the results in its state, and ends its run with `direct(...)`. All
steps share the namespace ``travelPlan``, as in the original, so the children run one after
another there (picoflow never interleaves two runs in one history).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from demo.travel.data import ACTIVITIES, FLIGHTS, HOTELS
from picoflow import Flow, ModelLike, ModelSpec, Step, direct, finish, go, stay, tool

OFFLINE_MODEL = ModelSpec("offline", "travel")
MEMORY = "travelPlan"


class TravelPlan(BaseModel):
    """What the traveller asked for."""

    intent: Literal["full_plan", "flights_only", "hotels_only", "activities_only"]
    origin: str = Field(description="city of departure")
    destination: str = Field(description="city to visit")
    depart: str = Field(description="departure date, YYYY-MM-DD")
    nights: int = Field(ge=1, le=30)
    adults: int = Field(default=1, ge=1, le=9)
    cabin: Literal["economy", "business"] = "economy"
    budget: int | None = Field(default=None, description="total budget in EUR, if any")


class PlannerStep(Step):
    # submit_plan picks its children from the plan's intent; the graph cannot read that
    nested_steps = ("FlightStep", "HotelStep", "ActivityStep")

    def get_prompt(self) -> str:
        return (
            "You plan trips. Collect origin, destination, departure date, nights and the number "
            "of adults, then call submit_plan. Say whether the traveller wants everything or "
            f"only flights, hotels or activities. Destinations: {', '.join(FLIGHTS)}."
        )

    @tool
    async def submit_plan(self, plan: TravelPlan) -> Any:
        """Search what the traveller's plan asks for."""
        if plan.destination not in FLIGHTS:
            return stay(f"We have no offers for {plan.destination}; we cover {', '.join(FLIGHTS)}.")
        self.save_state({"plan": plan.model_dump()})
        children = _CHILDREN[plan.intent]
        if len(children) == 1:
            found = [await self.run_step(children[0], f"Search for {plan.destination}.")]
        else:
            found = await self.run_steps(children)
        return go(SynthesizerStep).with_tool_feedback(" ".join(found))


class _SearchStep(Step):
    """A child of PlannerStep: reads the plan, searches, ends its run with a summary."""

    def plan(self) -> TravelPlan:
        return TravelPlan.model_validate(self.flow.get_step_state(PlannerStep, "plan"))


class FlightStep(_SearchStep):
    def get_prompt(self) -> str:
        plan = self.plan()
        return (
            f"Search {plan.cabin} flights from {plan.origin} to {plan.destination} on "
            f"{plan.depart}."
        )

    @tool
    def search_flights(self, destination: str, cabin: Literal["economy", "business"]) -> Any:
        """Search flights to the destination in a cabin class."""
        found = [f for f in FLIGHTS.get(destination, []) if f["cabin"] == cabin]
        self.save_state({"flights": found})
        return direct(f"{len(found)} flights.")


class HotelStep(_SearchStep):
    def get_prompt(self) -> str:
        plan = self.plan()
        return f"Search hotels in {plan.destination} for {plan.nights} nights."

    @tool
    def search_hotels(self, destination: str) -> Any:
        """Search hotels in the destination."""
        found = HOTELS.get(destination, [])
        self.save_state({"hotels": found})
        return direct(f"{len(found)} hotels.")


class ActivityStep(_SearchStep):
    def get_prompt(self) -> str:
        return f"Search activities in {self.plan().destination}."

    @tool
    def search_activities(self, destination: str) -> Any:
        """Search activities in the destination."""
        found = ACTIVITIES.get(destination, [])
        self.save_state({"activities": found})
        return direct(f"{len(found)} activities.")


_CHILDREN: dict[str, list[type[Step]]] = {
    "full_plan": [FlightStep, HotelStep, ActivityStep],
    "flights_only": [FlightStep],
    "hotels_only": [HotelStep],
    "activities_only": [ActivityStep],
}


class SynthesizerStep(Step):
    def get_prompt(self) -> str:
        flow = self.flow
        found = {
            "flights": flow.get_step_state(FlightStep, "flights"),
            "hotels": flow.get_step_state(HotelStep, "hotels"),
            "activities": flow.get_step_state(ActivityStep, "activities"),
        }
        return (
            f"Search results: {found}. Call generate_packages, present the packages it returns, "
            "and call choose_package when the traveller picks one."
        )

    @tool
    def generate_packages(self) -> Any:
        """Build up to three packages from the search results."""
        packages = build_packages(self.flow)
        self.save_state({"packages": packages})
        lines = [f"{i}. {p['summary']} — {p['total']} EUR" for i, p in enumerate(packages, 1)]
        return stay("Packages:\n" + "\n".join(lines) if lines else "No package fits.")

    @tool
    def choose_package(self, number: int) -> Any:
        """Book the package the traveller chose (1, 2 or 3)."""
        packages = self.get_state("packages") or []
        if not 1 <= number <= len(packages):
            return stay(f"There is no package {number}; choose 1 to {len(packages)}.")
        chosen = packages[number - 1]
        self.save_state({"chosen": chosen})
        return finish(f"Booked: {chosen['summary']}, {chosen['total']} EUR in total. Bon voyage!")


def build_packages(flow: Flow) -> list[dict[str, Any]]:
    """Up to three packages, cheapest first: a flight, a hotel for the nights, an activity."""
    plan = TravelPlan.model_validate(flow.get_step_state(PlannerStep, "plan"))
    flights = flow.get_step_state(FlightStep, "flights") or [None]
    hotels = flow.get_step_state(HotelStep, "hotels") or [None]
    activity = min(
        flow.get_step_state(ActivityStep, "activities") or [{}],
        key=lambda a: a.get("price", 0),
    )
    packages = []
    for flight in flights:
        for hotel in hotels:
            total = plan.adults * ((flight or {}).get("price", 0) + activity.get("price", 0))
            total += plan.nights * (hotel or {}).get("per_night", 0)
            parts = [
                flight and f"flight {flight['flight']}",
                hotel and f"{plan.nights} nights at {hotel['hotel']}",
                activity.get("activity"),
            ]
            summary = ", ".join(p for p in parts if p)
            if plan.budget is None or total <= plan.budget:
                packages.append({"summary": summary, "total": total})
    return sorted(packages, key=lambda p: p["total"])[:3]


class TravelFlow(Flow):
    """A trip planner: one planner, three nested searches, packages, a choice."""

    chat_model: ClassVar[ModelLike | None] = None
    max_tool_rounds = 8

    @classmethod
    def using(cls, model: ModelLike) -> type[TravelFlow]:
        """This flow bound to ``model``; it keeps the persisted flow name "TravelFlow"."""
        return type(cls.name, (cls,), {"name": cls.name, "chat_model": model})

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def define_steps(self) -> list[Step]:
        steps = [
            PlannerStep(self),
            FlightStep(self),
            HotelStep(self),
            ActivityStep(self),
            SynthesizerStep(self),
        ]
        return [step.use_memory(MEMORY) for step in steps]
