"""V1: logic steps run without a model, in the same turn, and chain."""

from __future__ import annotations

from typing import Any

import pytest
from support.vkit import STORES, engine_of, flow_of, make_store, messages

from picoflow import FlowDefinitionError, LogicStep, Step, direct, finish, go, stay, tool
from picoflow.testing import ScriptedChatModel, text, tool_call

entered: list[str] = []


class WeatherStep(Step):
    @tool
    def get_weather(self, city: str) -> Any:
        """Get the weather of a city."""
        return go(FooLogicStep).with_state({"city": city})


class FooLogicStep(LogicStep):
    def on_enter(self) -> None:
        entered.append(self.name)

    async def run_logic(self) -> Any:
        return go(GooLogicStep).with_state({"from_foo": self.get_state("city")})


class GooLogicStep(LogicStep):
    async def run_logic(self) -> Any:
        city = self.get_state("from_foo")
        return go(FavoritesStep).with_prompt(f"Ask about favourites in {city}.")


class FavoritesStep(Step):
    pass


class RouterStep(LogicStep):
    async def run_logic(self) -> Any:
        said = self.incoming_message.text if self.incoming_message else ""
        self.save_state({"heard": said})
        if self.get_context("config.vip"):
            return go(VipStep)
        return go(FavoritesStep)


class VipStep(Step):
    pass


class StayLogicStep(LogicStep):
    async def run_logic(self) -> Any:
        return stay("again")


class PingStep(LogicStep):
    async def run_logic(self) -> Any:
        return go(PongStep)


class PongStep(LogicStep):
    async def run_logic(self) -> Any:
        return go(PingStep)


class AnswerStep(LogicStep):
    async def run_logic(self) -> Any:
        said = self.incoming_message.text if self.incoming_message else ""
        if said == "bye":
            return finish("Goodbye.")
        return direct(f"You said {said!r}.")


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def chain_flow(model: Any) -> Any:
    return flow_of(
        lambda f: [WeatherStep(f), FooLogicStep(f), GooLogicStep(f), FavoritesStep(f)], model
    )


async def test_v1_logic_steps_chain_in_the_same_turn_without_a_model(store: Any) -> None:
    entered.clear()
    model = ScriptedChatModel(script=[tool_call("get_weather", city="NYC"), text("Favourites?")])
    engine = engine_of(chain_flow(model), store=store)
    result = await engine.run("VFlow", "weather in NYC")
    assert (result.success, result.step, result.message) == (True, "FavoritesStep", "Favourites?")
    assert len(model.requests) == 2 and entered == ["FooLogicStep"]
    assert model.requests[1].messages[0].text == "Ask about favourites in NYC."
    doc = await engine.get_session(result.session_id)
    assert doc["sequence"] == ["WeatherStep", "FooLogicStep", "GooLogicStep", "FavoritesStep"]
    assert doc["steps"]["GooLogicStep"]["state"]["from_foo"] == "NYC"
    assert set(doc["memory"]) == {"WeatherStep", "FavoritesStep"}  # logic steps store nothing
    assert messages(doc, "FavoritesStep") == [("human", "Continue."), ("ai", "Favourites?")]
    await engine.aclose()


async def test_v1_initial_logic_step_routes_a_new_session_and_forwards_the_message(
    store: Any,
) -> None:
    model = ScriptedChatModel(script=[text("Welcome, VIP."), text("Hello.")])
    flow = flow_of(lambda f: [RouterStep(f), FavoritesStep(f), VipStep(f)], model)
    engine = engine_of(flow, store=store)
    vip = await engine.run("VFlow", "hi there", config={"vip": True})
    assert (vip.step, vip.message) == ("VipStep", "Welcome, VIP.")
    doc = await engine.get_session(vip.session_id)
    assert doc["steps"]["RouterStep"]["state"]["heard"] == "hi there"
    assert messages(doc, "VipStep") == [("human", "hi there"), ("ai", "Welcome, VIP.")]
    plain = await engine.run("VFlow", "hello")
    assert plain.step == "FavoritesStep"
    await engine.aclose()


async def test_v1_a_flow_of_logic_steps_needs_no_model(store: Any) -> None:
    engine = engine_of(flow_of(lambda f: [AnswerStep(f)]), store=store)
    first = await engine.run("VFlow", "hello")
    assert (first.success, first.message, first.step, first.completed) == (
        True,
        "You said 'hello'.",
        "AnswerStep",
        False,
    )
    last = await engine.run("VFlow", "bye", session_id=first.session_id)
    assert (last.message, last.completed) == ("Goodbye.", True)
    doc = await engine.get_session(first.session_id)
    assert messages(doc, "AnswerStep") == [
        ("ai", "You said 'hello'."),
        ("ai", "Goodbye."),
    ]
    await engine.aclose()


def test_v1_a_model_step_still_needs_a_model() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        engine_of(flow_of(lambda f: [RouterStep(f), FavoritesStep(f), VipStep(f)]))
    assert str(caught.value) == (
        "VFlow.FavoritesStep has no model: define config_model() on the flow (e.g. return "
        "'openai:gpt-4o') or call .use_model(...) on the step."
    )


async def test_v1_a_logic_step_going_to_an_unregistered_step_fails_the_turn() -> None:
    model = ScriptedChatModel(script=[tool_call("get_weather", city="LA")])
    engine = engine_of(flow_of(lambda f: [WeatherStep(f), FooLogicStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message == (
        "Step 'GooLogicStep' is not registered in flow 'VFlow'. Add it to define_steps() "
        "(registered: WeatherStep, FooLogicStep)."
    )


async def test_v1_stay_from_a_logic_step_fails_the_turn_naming_the_step() -> None:
    engine = engine_of(flow_of(lambda f: [StayLogicStep(f)]))
    failed = await engine.run("VFlow", "hi")
    assert (failed.success, failed.completed, failed.error) == (False, False, "FlowDefinitionError")
    assert failed.message == (
        "StayLogicStep.run_logic() returned stay(); a logic step has no model to ask again. "
        "Return go(NextStep), direct(text) or finish(text)."
    )


async def test_v1_logic_cycle_is_a_tool_loop_error() -> None:
    engine = engine_of(flow_of(lambda f: [PingStep(f), PongStep(f)]))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.error, result.session_id) == (False, "ToolLoopError", None)
    assert result.message == (
        "VFlow ran 8 rounds in one turn, 8 of them logic steps, without a reply (last at "
        "'PingStep'); the limit is max_tool_rounds. The session was left as it was before the "
        "turn; check the logic steps for a cycle (A -> B -> A) or raise max_tool_rounds on the "
        "flow."
    )


class NoneStep(LogicStep):
    async def run_logic(self) -> Any:
        return None


class NoTextStep(LogicStep):
    async def run_logic(self) -> Any:
        return finish()


class ForgotStep(LogicStep):
    pass


@pytest.mark.parametrize(
    ("step", "message"),
    [
        (
            NoneStep,
            "NoneStep.run_logic() returned None, which is not a transition. Return "
            "go(NextStep), direct(text) or finish(text).",
        ),
        (
            NoTextStep,
            "NoTextStep.run_logic() returned finish() without a text; a logic step has no "
            "model to say a closing line. Pass the reply: finish('Thank you, goodbye.').",
        ),
        (
            ForgotStep,
            "ForgotStep is a LogicStep but does not override run_logic(). Define `async def "
            "run_logic(self) -> ToolResult` returning go(...), direct(...) or finish(...).",
        ),
    ],
)
async def test_v1_a_logic_step_must_return_a_transition(step: type[Step], message: str) -> None:
    engine = engine_of(flow_of(lambda f: [step(f)]))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.message) == (False, message)


async def test_v1_stream_reports_logic_steps() -> None:
    model = ScriptedChatModel(script=[tool_call("get_weather", city="NYC"), text("Favourites?")])
    engine = engine_of(chain_flow(model))
    events = [e async for e in engine.stream("VFlow", "weather")]
    seen = [(e.kind, e.data.get("step") or e.data.get("to")) for e in events if e.kind != "token"]
    assert seen == [
        ("tool_call", "WeatherStep"),
        ("step_changed", "FooLogicStep"),
        ("logic_step", "FooLogicStep"),
        ("step_changed", "GooLogicStep"),
        ("logic_step", "GooLogicStep"),
        ("step_changed", "FavoritesStep"),
        ("done", None),
    ]
    await engine.aclose()
