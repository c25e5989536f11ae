"""The scenario tests' small flow (CityFlow, on a scripted policy) and its scenario."""

from __future__ import annotations

from typing import Any

from picoflow import EndStep, Flow, Step, direct, go, tool
from picoflow.testing import ScriptedChatModel, tool_call


class AskStep(Step):
    def get_prompt(self) -> str:
        return "Ask for the city."

    @tool
    def save_city(self, city: str) -> Any:
        """Record the city the user wants."""
        self.save_state({"city": city, "nights": 2, "tags": ["quiet"]})
        return go(DoneStep)


class DoneStep(Step):
    @tool
    def end_chat(self) -> Any:
        """End the conversation."""
        return go(EndStep)

    @tool
    def say_hello(self) -> Any:
        """Greet."""
        return direct("hello again")


def city_policy(messages: list[Any], tool_names: list[str]) -> Any:
    """A model that plays CityFlow: the city from 'in <city>', 'bye' ends."""
    last = str(messages[-1].content)
    if "save_city" in tool_names:
        if " in " in last:
            return tool_call("save_city", city=last.rsplit(" in ", 1)[1].strip(" ."))
        return "Which city?"
    if "end_chat" in tool_names:
        return tool_call("end_chat") if "bye" in last.lower() else "Saved. Anything else?"
    return "Goodbye!"


CITY_MODEL = ScriptedChatModel(policy=city_policy)


class CityFlow(Flow):
    def config_model(self) -> Any:
        return CITY_MODEL

    def define_steps(self) -> list[Step]:
        return [AskStep(self), DoneStep(self), EndStep(self).use_memory("end")]


CITY_SCENARIO: dict[str, Any] = {
    "flowName": "CityFlow",
    "turns": [
        {"label": "asks", "input": "hi", "completed": False, "expect": {"step": "AskStep"}},
        {
            "label": "saves the city",
            "input": "a room in Lisbon",
            "completed": False,
            "expect": {
                "step": "DoneStep",
                "tools": ["save_city"],
                "reply": "Saved",
                "state": {"AskStep.city": "Lisbon", "AskStep.nights": {"min": 1, "max": 3}},
            },
        },
        {"label": "ends", "input": "bye", "completed": True, "expect": {"tools": ["end_chat"]}},
    ],
}
