"""BasicFlow, ported from PicoFlow's demo: one step per runner feature.

    WeatherStep ─(two get_weather calls, one group handler)─▶ FooLogicStep ─▶ GooLogicStep
        ─▶ FavoritesStep (reply parsed by on_response) ─▶ NameStep (nested InContextStep,
        structured reply) ─▶ DOBStep (reads NameStep's state) ─▶ AddressStep ─▶ finish()

A new session starts at WeatherStep, or at FavoritesStep when the run's config says
``{"skip_weather": true}``. The model is chosen once: ``BasicFlow.using(model)``; plain
``BasicFlow`` uses the offline demo model (``"offline:basic"``, see ``demo/basic/offline.py``).
"""

from __future__ import annotations

import json
import re
from datetime import date
from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, Field

from picoflow import (
    Flow,
    LogicStep,
    ModelLike,
    Step,
    ToolCall,
    finish,
    go,
    stay,
    tool,
    tool_group,
)

OFFLINE_MODEL = "offline:basic"
CITIES = ("NYC", "LA")
FORECAST = {"NYC": "sunny, 24°C", "LA": "cloudy, 19°C"}
PLACEHOLDER_NAMES = {"john doe", "jane doe"}
US_STATES = frozenset(
    "AL AK AZ AR CA CO CT DE FL GA HI ID IL IN IA KS KY LA ME MD MA MI MN MS MO MT NE NV NH NJ "
    "NM NY NC ND OH OK OR PA RI SC SD TN TX UT VT VA WA WV WI WY DC".split()
)
_ZIP = re.compile(r"^\d{5}(-\d{4})?$")


class WeatherStep(Step):
    """Needs the weather of NYC and LA, asked for in one response of two tool calls."""

    def get_prompt(self) -> str:
        return (
            "You are a weather assistant. Call get_weather once for NYC and once for LA, both "
            "in the same reply, then nothing else."
        )

    @tool
    def get_weather(self, city: Annotated[str, Field(description="City code, e.g. NYC")]) -> Any:
        """Get today's weather for a city."""
        # Never called: every response of get_weather calls goes to weather_of_both below.
        # The method gives the model the tool's schema.
        return None

    @tool_group("get_weather")
    def weather_of_both(self, calls: list[ToolCall]) -> Any:
        cities = sorted(str(call.args["city"]).upper() for call in calls)
        if cities != sorted(CITIES):
            return stay(
                f"I can only report NYC and LA together; you asked for {', '.join(cities)}. "
                "Call get_weather for NYC and for LA in one reply."
            )
        weather = {city: FORECAST[city] for city in CITIES}
        return (
            go(FooLogicStep)
            .with_state({"weather": weather})
            .with_tool_feedback("; ".join(f"{c}: {w}" for c, w in weather.items()))
        )


class FooLogicStep(LogicStep):
    """A logic step: passes the weather on, adding its own mark (no model call)."""

    async def run_logic(self) -> Any:
        return go(GooLogicStep).with_state({"weather": self.get_state("weather"), "via": ["Foo"]})


class GooLogicStep(LogicStep):
    """A second logic step in the same turn: hands over to FavoritesStep."""

    async def run_logic(self) -> Any:
        via = [*(self.get_state("via") or []), "Goo"]
        return go(FavoritesStep).with_state({"weather": self.get_state("weather"), "via": via})


class Favorites(BaseModel):
    color: str
    food: str


class FavoritesStep(Step):
    """No tools: the model answers with a JSON object, which on_response parses."""

    def get_prompt(self) -> str:
        weather = self.get_state("weather")
        note = f" Today's weather: {json.dumps(weather)}." if weather else ""
        schema = json.dumps(Favorites.model_json_schema()["properties"])
        return (
            "Ask the user for their favourite colour and food." + note + " Once you know both, "
            f"answer with only a JSON object with these properties: {schema}."
        )

    def on_response(self, reply: str) -> Any:
        favorites = _parse_json(reply, Favorites)
        if favorites is None:
            return None  # a question or a remark: it stands, the user answers next turn
        self.save_state({"favorites": favorites.model_dump()})
        return go(NameStep)


class MovieIdea(BaseModel):
    title: str
    who: str = Field(description="the role the user would play")


class InContextStep(Step):
    """A nested child with a structured reply: suggests a film role for a name."""

    output_schema = MovieIdea

    def get_prompt(self) -> str:
        return "Suggest one classic film and the role the named person would play in it."

    def on_response(self, reply: MovieIdea) -> Any:
        self.save_state({"who": reply.who, "title": reply.title})
        return None


class NameStep(Step):
    def get_prompt(self) -> str:
        favorites = self.flow.get_step_state(FavoritesStep, "favorites") or {}
        return (
            f"The user likes {favorites.get('color')} and {favorites.get('food')}. Ask for "
            "their full name and record it with save_name."
        )

    @tool
    async def save_name(self, name: str) -> Any:
        """Record the user's full name."""
        if name.strip().lower() in PLACEHOLDER_NAMES:
            return stay(f"'{name}' is a placeholder, not a name. Ask for the user's real name.")
        idea = await self.run_step(InContextStep, f"The person is {name}.")
        self.save_state({"name": name, "role": f"{idea.who} in {idea.title}"})
        return go(DOBStep).with_tool_feedback(f"Saved. Film idea: {idea.who} in {idea.title}.")


class DOBStep(Step):
    def get_prompt(self) -> str:
        name = self.flow.get_step_state(NameStep, "name")
        return f"Ask {name} for their date of birth (YYYY-MM-DD) and record it with save_dob."

    @tool
    def save_dob(self, dob: Annotated[date, Field(description="YYYY-MM-DD")]) -> Any:
        """Record the user's date of birth."""
        if dob >= date.today():
            return stay("A date of birth lies in the past. Ask again.")
        return go(AddressStep).with_state({"dob": dob.isoformat()})


class AddressStep(Step):
    def get_prompt(self) -> str:
        return "Ask for the user's US mailing address and record it with save_address."

    @tool
    def save_address(self, street: str, city: str, state: str, zip_code: str) -> Any:
        """Record the user's US address (two-letter state code, 5-digit ZIP)."""
        problems = []
        if state.upper() not in US_STATES:
            problems.append(f"'{state}' is not a US state code")
        if not _ZIP.match(zip_code):
            problems.append(f"'{zip_code}' is not a US ZIP code")
        if problems:
            return stay("Invalid address: " + "; ".join(problems) + ". Ask the user to fix it.")
        address = {"street": street, "city": city, "state": state.upper(), "zip": zip_code}
        self.save_state({"address": address})
        name = self.flow.get_step_state(NameStep, "name")
        return finish(f"Thank you, {name}! Everything is recorded. Goodbye.")


class BasicFlow(Flow):
    """PicoFlow's BasicFlow: weather, logic steps, favourites, name, date of birth, address."""

    chat_model: ClassVar[ModelLike | None] = None

    @classmethod
    def using(cls, model: ModelLike) -> type[BasicFlow]:
        """This flow bound to ``model``; it keeps the persisted flow name "BasicFlow"."""
        return type(cls.name, (cls,), {"name": cls.name, "chat_model": model})

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    def initial_step(self) -> type[Step] | None:
        return FavoritesStep if self.get_context("config.skip_weather") else WeatherStep

    def define_steps(self) -> list[Step]:
        return [
            WeatherStep(self),
            FooLogicStep(self),
            GooLogicStep(self),
            FavoritesStep(self),
            NameStep(self),
            InContextStep(self),
            DOBStep(self),
            AddressStep(self),
        ]


def _parse_json(text: str, schema: type[Favorites]) -> Favorites | None:
    """PicoFlow's StringUtil.parseJson, typed: strip a ```json fence, parse, validate."""
    body = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```").strip()
    try:
        return schema.model_validate_json(body)
    except ValueError:
        return None
