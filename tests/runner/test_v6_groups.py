"""V6: a @tool_group handler takes over a response whose calls all name its tools."""

from __future__ import annotations

from typing import Any

import pytest
from support.vkit import STORES, engine_of, flow_of, make_store, messages

from picoflow import FlowDefinitionError, Step, ToolCall, go, stay, tool, tool_group
from picoflow.testing import ScriptedChatModel, text, tool_call, tool_calls

received: list[list[ToolCall]] = []


class WeatherStep(Step):
    @tool
    def get_weather(self, city: str) -> Any:
        """Get the weather of one city."""
        return f"single call for {city}"

    @tool
    def get_time(self, city: str) -> str:
        """Get the local time of a city."""
        return "12:00"

    @tool
    def unrelated(self) -> str:
        """Something else."""
        return "unrelated"

    @tool_group("get_weather", "get_time")
    async def weather_and_time(self, calls: list[ToolCall]) -> Any:
        received.append(calls)
        cities = sorted(call.args["city"] for call in calls)
        if cities != ["LA", "NYC"]:
            return stay("I need the weather of NYC and LA, in one reply.")
        self.save_state({"cities": cities})
        return go(DoneStep).with_tool_feedback("NYC: sunny; LA: cloudy")


class DoneStep(Step):
    pass


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v6_group_handler_gets_every_call_once_and_each_call_a_result(store: Any) -> None:
    received.clear()
    model = ScriptedChatModel(
        script=[
            tool_calls(("get_weather", {"city": "NYC"}), ("get_weather", {"city": "LA"})),
            text("Done."),
        ]
    )
    engine = engine_of(flow_of(lambda f: [WeatherStep(f), DoneStep(f)], model), store=store)
    result = await engine.run("VFlow", "weather in NYC and LA")
    assert (result.success, result.step, result.message) == (True, "DoneStep", "Done.")
    assert received == [
        [
            ToolCall("get_weather", {"city": "NYC"}, "call_1"),
            ToolCall("get_weather", {"city": "LA"}, "call_2"),
        ]
    ]
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "WeatherStep")[1:] == [
        ("ai", "call get_weather,get_weather"),
        ("tool", "NYC: sunny; LA: cloudy"),
        ("tool", "NYC: sunny; LA: cloudy"),
    ]
    assert doc["steps"]["WeatherStep"]["state"]["cities"] == ["LA", "NYC"]
    await engine.aclose()


async def test_v6_a_response_outside_the_group_goes_to_the_single_handlers() -> None:
    received.clear()
    model = ScriptedChatModel(
        script=[tool_calls(("get_weather", {"city": "NYC"}), ("unrelated", {})), text("Hm.")]
    )
    engine = engine_of(flow_of(lambda f: [WeatherStep(f), DoneStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert result.message == "Hm." and received == []
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "WeatherStep")[2:] == [
        ("tool", "single call for NYC"),
        ("tool", "unrelated"),
        ("ai", "Hm."),
    ]
    await engine.aclose()


async def test_v6_invalid_arguments_are_answered_and_the_group_is_not_called() -> None:
    received.clear()
    model = ScriptedChatModel(
        script=[
            tool_calls(("get_weather", {"city": "NYC"}), ("get_time", {})),
            tool_call("get_weather", city="NYC"),
            text("ok"),
        ]
    )
    engine = engine_of(flow_of(lambda f: [WeatherStep(f), DoneStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert result.success and len(received) == 1  # only the second, valid response
    tool_results = [m for m in model.requests[1].messages if m.type == "tool"]
    assert tool_results[0].text == (
        "Not run: another call of this reply had invalid arguments. Call get_weather again "
        "together with the corrected call."
    )
    assert tool_results[1].text.startswith("Error: invalid arguments for tool 'get_time'")
    assert [m.status for m in tool_results] == ["error", "error"]
    stayed = [m for m in model.requests[2].messages if m.type == "tool"][-1]
    assert stayed.text == "I need the weather of NYC and LA, in one reply."


def test_v6_a_group_must_name_tools_of_the_step() -> None:
    class Typo(Step):
        @tool
        def get_weather(self, city: str) -> str:
            """Get the weather."""
            return "sunny"

        @tool_group("get_wether")
        def both(self, calls: list[ToolCall]) -> Any:
            return None

    with pytest.raises(FlowDefinitionError) as caught:
        engine_of(flow_of(lambda f: [Typo(f)], ScriptedChatModel(script=[])))
    assert str(caught.value) == (
        "Typo.both is a @tool_group for 'get_wether', but Typo has no @tool of that name and "
        "gets none from use_tools(). Define the tool (its schema is what the model sees) or fix "
        "the name."
    )


def test_v6_tool_group_needs_names() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        tool_group()
    assert str(caught.value) == (
        "@tool_group(): name the tools the group handles, each a non-empty string, e.g. "
        '@tool_group("get_weather").'
    )


class Fragile(Step):
    @tool
    def ping(self) -> str:
        """Ping."""
        return "pong"

    @tool_group("ping")
    def pings(self, calls: list[ToolCall]) -> Any:
        raise ConnectionError("backend down")


async def test_v6_a_group_that_raises_answers_every_call_with_the_error() -> None:
    model = ScriptedChatModel(script=[tool_calls(("ping", {}), ("ping", {})), text("Sorry.")])
    engine = engine_of(flow_of(lambda f: [Fragile(f)], model))
    result = await engine.run("VFlow", "hi")
    assert result.message == "Sorry."
    results = [m for m in model.requests[1].messages if m.type == "tool"]
    assert [(m.text, m.status) for m in results] == [
        ("Error: tool 'pings' failed: ConnectionError: backend down", "error")
    ] * 2
