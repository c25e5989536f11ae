"""BasicFlow, ported from PicoFlow's demo point by point (research/pico-demo-flows.md section 1).

A tour of runner features rather than a business flow::

    WeatherStep ─(get_weather NYC + LA)─▶ FooLogicStep ─▶ GooLogicStep ─▶ FavoritesStep
        ─(its reply parses as JSON)─▶ NameStep (nested InContextStep, structured reply)
        ─▶ DOBStep (prompt reads NameStep's state) ─▶ AddressStep ─(valid address)─▶ EndStep

A new session starts at WeatherStep, or at PresidentStep when the run's config says
``{"isPresident": true}`` (the workers of the batch mode). The model is chosen once:
``BasicFlow.using(model, mini=...)``; PicoFlow runs Weather, Name, DOB, Address and End on
``gpt-4o-mini`` and the rest on the flow's ``gpt-4o``. Plain ``BasicFlow`` uses the offline demo
model (``"offline:basic"``, see ``demo/basic/offline.py``) for all of them. The prompts are the
files in ``prompt/`` next to this module.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any, ClassVar

from langchain_core.messages import BaseMessage, HumanMessage
from pydantic import BaseModel, Field

from demo.basic.validators import validate_address
from picoflow import (
    EndStep,
    Flow,
    LogicStep,
    ModelLike,
    Prompt,
    Step,
    go,
    parse_json,
    stay,
    tool,
    turn_window,
)

logger = logging.getLogger(__name__)

OFFLINE_MODEL = "offline:basic"
CITIES = ("NYC", "LA")  # exactly these, case-sensitive, no aliases: the model learns it from
ONLY_TWO_CITIES = "Only LA and NYC cities are allowed"  # this feedback, not from the prompt
NOT_JOHN_DOE = "Cannot accept John Doe, please choose a different name."
INVALID_ADDRESS = "Invalid address"
FOLLOW_SYSTEM_PROMPT = "Follow system prompt"
ORDINALS = ("10th", "11th", "12th", "13th", "14th", "15th", "16th")  # the batch items (1.7)
BATCH_SIZE = 3


def _prompt(name: str) -> str:
    return Prompt.file(f"prompt/{name}").strip()


TRAVEL_ROLE = _prompt("role.md")  # DemoPrompt.TravelRole
ABRUPT_END = _prompt("abrupt_end.md")  # DemoPrompt.AbruptEnd: the prompt of every exit
FROM_ADDRESS_END = _prompt("from_address_end.md")  # DemoPrompt.FromAddressEnd: unused upstream
FAVORITES_SCHEMA = Prompt.file("prompt/favorites.json")


class WeatherStep(Step):
    """A two-city gate: both NYC and LA must be asked for (in one message or over several)."""

    def get_prompt(self) -> str:
        return f"{TRAVEL_ROLE}\n\n{_prompt('weather.md')}"

    @tool
    def get_weather(
        self,
        cityName: Annotated[str, Field(description="name of city")],  # noqa: N803
    ) -> Any:
        """Capture the weather of one city."""
        if cityName not in CITIES:
            return stay(ONLY_TWO_CITIES)
        self.save_state({f"cityName_{cityName}": True})
        if self.get_state("cityName_LA") and self.get_state("cityName_NYC"):
            return go(FooLogicStep)
        return stay()  # the model asks for the other city


class FooLogicStep(LogicStep):
    async def run_logic(self) -> Any:
        return go(GooLogicStep).with_state({"fooData": "fooValue"})  # saved on GooLogicStep


class GooLogicStep(LogicStep):
    async def run_logic(self) -> Any:
        return go(FavoritesStep).with_state({"gooData": "gooValue"})  # saved on FavoritesStep


class FavoritesStep(Step):
    """No tools: the model asks three questions, then answers with JSON, which moves on."""

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        return HumanMessage("Hi")  # whatever was forwarded is dropped

    def get_prompt(self) -> str:
        return Prompt.replace(_prompt("favorites.md"), {"QUESTION_SCHEMA": FAVORITES_SCHEMA})

    def on_response(self, reply: Any) -> Any:
        favorites = parse_json(str(reply))
        if not favorites:
            return None  # a question: it is the reply, the user answers next turn
        self.save_state({"favorites": favorites})  # not checked against the schema, as upstream
        return go(NameStep)  # the JSON is not kept; NameStep's model answers in this turn


class MovieIdea(BaseModel):
    """InContextStep's structured reply (`structOutputSchema`)."""

    title: str = Field(description="movie title")
    genre: str = Field(description="main genre")
    releaseYear: int = Field(description="release year")  # noqa: N815
    rating: float = Field(ge=0, le=10, description="rating from 0 to 10")
    summary: str = Field(description="short plot summary")


class InContextStep(Step):
    """Reached only nested, from `user_name`: a structured reply the parent keeps."""

    output_schema = MovieIdea

    def get_prompt(self) -> str:
        return _prompt("in_context.md")

    def on_response(self, reply: Any) -> Any:
        self.save_state({"who": reply.model_dump()})
        return None  # the object is run_step's return value


class NameStep(Step):
    def get_prompt(self) -> str:
        return f"{TRAVEL_ROLE}\n\n{_prompt('name.md')}"

    @tool
    async def user_name(self, name: Annotated[str, Field(description="name of user")]) -> Any:
        """Capture the user's name."""
        self.save_state({"name": name})
        self.save_state(self.get_context("myRunData") or {})  # top level: None from a request
        answer = await self.run_step(InContextStep, FOLLOW_SYSTEM_PROMPT)
        self.save_state({"inContext": answer.model_dump()})
        if name == "John Doe":  # saved and the nested step ran first, as upstream
            return stay(NOT_JOHN_DOE)
        return go(DOBStep)


class DOBStep(Step):
    def get_prompt(self) -> str:
        name = self.flow.get_step_state(NameStep, "name")
        return f"{TRAVEL_ROLE}\n\n" + Prompt.replace(_prompt("dob.md"), {"UserName": name})

    @tool
    def dob(
        self,
        year: Annotated[int, Field(description="year of dob")],
        month: Annotated[int, Field(description="month of dob")],
        day: Annotated[int, Field(description="day of dob")],
    ) -> Any:
        """Capture the date of birth of the user."""
        self.save_state({"year": year, "month": month, "day": day})  # no validation, as upstream
        return go(AddressStep)


class AddressStep(Step):
    def get_prompt(self) -> str:
        return f"{TRAVEL_ROLE}\n\n{_prompt('address.md')}"

    @tool
    def address(self, address: str) -> Any:
        """Capture the address of the user."""
        parts = validate_address(address)
        if parts is None:
            return stay(INVALID_ADDRESS)
        self.save_state({"address": parts})
        return go(EndStep).with_prompt(ABRUPT_END).with_state({"fromAddress": 5})


class PresidentStep(Step):
    """The batch worker: asks its own question on entry and completes the session at once."""

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        nth = self.get_context("config.nth")
        self.flow.complete()
        return HumanMessage(f"Who is the {nth} President of United State")  # sic

    def get_prompt(self) -> str:
        return _prompt("president.md")


class BasicFlow(Flow):
    """PicoFlow's BasicFlow: weather gate, logic steps, favourites, name, birth date, address."""

    chat_model: ClassVar[ModelLike | None] = None
    mini_model: ClassVar[ModelLike | None] = None

    def __init__(self) -> None:
        super().__init__()
        # Issue 25: every namespace is bounded whatever the user does. The stage's data lives in
        # state, so a user who lingers keeps the last turns of the conversation only (M11);
        # PicoFlow's own run of this flow never reaches the window.
        for namespace in ("default", "separate", "president", "favorite", "temp", "WeatherStep"):
            self.get_memory().set_policy(namespace, turn_window(max_turns=12, keep_turns=6))

    @classmethod
    def using(cls, model: ModelLike, mini: ModelLike | None = None) -> type[BasicFlow]:
        """This flow on `model` (and `mini` for the steps PicoFlow runs on gpt-4o-mini).

        The persisted flow name stays "BasicFlow".
        """
        attributes = {"name": cls.name, "chat_model": model, "mini_model": mini}
        return type(cls.name, (cls,), attributes)

    def config_model(self) -> ModelLike:
        return self.chat_model if self.chat_model is not None else OFFLINE_MODEL

    async def spawn_steps(self) -> str:
        """Batch mode (1.7): one PresidentStep session per ordinal, three at a time.

        Runs when the request's config has ``_concurrent: true``; each worker's answer is saved
        on this session's PresidentStep under its ordinal.
        """
        await self.goto(PresidentStep)  # PicoFlow's activate(PresidentStep)
        president = self.get_step(PresidentStep)
        await self.concurrent_steps(
            ORDINALS,
            BATCH_SIZE,
            on_config=lambda item: {"nth": item, "isPresident": True},
            on_bot_response=lambda item, result: president.save_state({item: result.message}),
        )
        finished = f"Finished concurrent flow: {self.name}"
        logger.info(finished, extra={"session_id": self.get_session_id()})
        self.complete()
        return finished

    def initial_step(self) -> type[Step]:
        return PresidentStep if self.get_context("config.isPresident") else WeatherStep

    def define_steps(self) -> list[Step]:
        mini = self.mini_model if self.mini_model is not None else self.config_model()
        # end_chat: to EndStep with AbruptEnd, whatever the model passes; AddressStep's goes
        # through EndStep's own handler upstream (callStepTool), which keeps the model's prompt.
        return [
            WeatherStep(self).use_model(mini).use_end_tool("end_chat", prompt=ABRUPT_END),
            NameStep(self)
            .use_memory("default")
            .use_model(mini)
            .use_end_tool("end_chat", prompt=ABRUPT_END),
            AddressStep(self).use_memory("default").use_model(mini).use_end_tool("end_chat"),
            DOBStep(self)
            .use_memory("default")
            .use_model(mini)
            .use_end_tool("end_chat", prompt=ABRUPT_END),
            FooLogicStep(self).use_memory("default"),
            GooLogicStep(self).use_memory("default"),
            InContextStep(self).use_memory("separate"),
            PresidentStep(self).use_memory("president"),
            FavoritesStep(self).use_memory("favorite"),
            EndStep(self).use_memory("temp").use_model(mini),
        ]
