"""V2 and V3: nested runs of child steps inside the current turn, one or several at once."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from support.vkit import STORES, engine_of, flow_of, make_store, messages

from picoflow import FlowDefinitionError, Step, ToolLoopError, direct, finish, go, tool
from picoflow.testing import ScriptedChatModel, text, tool_call

hooks: list[str] = []


class PlannerStep(Step):
    @tool
    async def plan(self, destination: str) -> Any:
        """Plan a trip."""
        found = await self.run_step(FlightStep, f"Flights to {destination}")
        return f"Flights: {found}"

    @tool
    async def plan_all(self) -> Any:
        """Plan flights and hotels at once."""
        flights, hotels = await self.run_steps([FlightStep, (HotelStep, "Hotels please")])
        return f"{flights} / {hotels}"

    @tool
    async def plan_twice(self) -> Any:
        """A mistake: the same child twice."""
        return await self.run_steps([FlightStep, FlightStep])

    @tool
    async def plan_rogue(self) -> Any:
        """Run a child that tries to move the cursor."""
        return await self.run_step(RogueStep, "go")

    @tool
    async def plan_deep(self) -> Any:
        """Nest too deep."""
        return await self.run_step(DeepStep, "down")


class FlightStep(Step):
    def on_enter(self) -> None:
        hooks.append("enter Flight")

    def on_exit(self) -> None:
        hooks.append("exit Flight")

    @tool
    def search_flights(self, destination: str) -> Any:
        """Search flights."""
        self.save_state({"flights": [f"PF1 to {destination}"]})
        return direct("PF1")


class HotelStep(Step):
    def on_exit(self) -> None:
        hooks.append("exit Hotel")


class RogueStep(Step):
    @tool
    def move(self) -> Any:
        """Move the cursor."""
        return go(HotelStep)

    @tool
    def end(self) -> Any:
        """End the session."""
        return finish("bye")


class DeepStep(Step):
    async def on_enter(self) -> None:
        await self.run_step(DeepStep2)


class DeepStep2(Step):
    async def on_enter(self) -> None:
        await self.run_step(DeepStep3)


class DeepStep3(Step):
    async def on_enter(self) -> None:
        await self.run_step(DeepStep4)


class DeepStep4(Step):
    pass


def steps(f: Any) -> list[Step]:
    return [
        PlannerStep(f),
        FlightStep(f),
        HotelStep(f),
        RogueStep(f),
        DeepStep(f),
        DeepStep2(f),
        DeepStep3(f),
        DeepStep4(f),
    ]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v2_run_step_runs_the_child_in_its_own_namespace_and_returns_its_reply(
    store: Any,
) -> None:
    hooks.clear()
    model = ScriptedChatModel(
        script={
            "PlannerStep": [tool_call("plan", destination="Rome"), text("Found PF1.")],
            "FlightStep": [tool_call("search_flights", destination="Rome")],
        }
    )
    engine = engine_of(flow_of(steps, model), store=store)
    result = await engine.run("VFlow", "Trip to Rome")
    assert (result.success, result.step, result.message) == (True, "PlannerStep", "Found PF1.")
    assert hooks == ["enter Flight", "exit Flight"]
    doc = await engine.get_session(result.session_id)
    assert doc["current_step"] == "PlannerStep"
    assert doc["sequence"] == ["PlannerStep", "FlightStep", "PlannerStep"]  # V2: as PicoFlow
    assert doc["sequence_levels"] == [1, 2, 1]
    assert doc["steps"]["FlightStep"]["state"]["flights"] == ["PF1 to Rome"]
    assert messages(doc, "FlightStep") == [
        ("human", "Flights to Rome"),
        ("ai", "call search_flights"),
        ("tool", "ok"),
        ("ai", "PF1"),
    ]
    assert messages(doc, "PlannerStep")[1:3] == [("ai", "call plan"), ("tool", "Flights: PF1")]
    child_call = model.requests[1]
    assert child_call.tool_names == ["search_flights"]
    assert child_call.metadata["picoflow_step"] == "FlightStep"
    assert child_call.metadata["picoflow_parent_step"] == "PlannerStep"
    assert "picoflow:parent:PlannerStep" in child_call.tags
    assert "picoflow_parent_step" not in model.requests[0].metadata
    await engine.aclose()


@pytest.mark.parametrize(
    ("call", "what"),
    [("move", "go(HotelStep)"), ("end", "finish()")],
)
async def test_v2_a_child_that_moves_the_cursor_fails_the_turn_naming_the_step(
    call: str, what: str
) -> None:
    model = ScriptedChatModel(
        script={"PlannerStep": [tool_call("plan_rogue")], "RogueStep": [tool_call(call)]}
    )
    engine = engine_of(flow_of(steps, model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.completed, result.error) == (
        False,
        False,
        "FlowDefinitionError",
    )
    assert result.message == (
        f"RogueStep returned {what} while running nested inside PlannerStep "
        "(run_step/run_steps), but a nested step cannot move the cursor or end the session. "
        "Return direct(text) to end RogueStep's run with a result, and let PlannerStep decide "
        "where to go once run_step() returns."
    )


async def test_v2_nesting_depth_is_capped() -> None:
    model = ScriptedChatModel(script={"PlannerStep": [tool_call("plan_deep")]})
    engine = engine_of(flow_of(steps, model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message == (
        "DeepStep3.run_step(DeepStep4) would nest 4 runs deep; VFlow allows 3 (max_step_depth). "
        "Check for a step that runs itself through its children, or raise max_step_depth on "
        "the flow."
    )


async def test_v2_a_failing_child_still_exits_and_fails_the_turn() -> None:
    hooks.clear()
    model = ScriptedChatModel(
        script={"PlannerStep": [tool_call("plan", destination="Oslo")], "FlightStep": []}
    )
    engine = engine_of(flow_of(steps, model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.error) == (False, "RuntimeError")
    assert result.message.startswith(
        "The turn failed and the session was not changed: RuntimeError: ScriptedChatModel ran "
        "out of replies for 'FlightStep'"
    )
    assert hooks == ["enter Flight", "exit Flight"]


async def test_v2_a_child_runs_within_its_own_round_limit() -> None:
    looping = [tool_call("nothing")] * 3  # an unknown tool, again and again
    model = ScriptedChatModel(
        script={"PlannerStep": [tool_call("plan", destination="X")], "FlightStep": looping}
    )
    flow = flow_of(steps, model, max_tool_rounds=3)
    result = await engine_of(flow).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "ToolLoopError")
    assert result.message == str(ToolLoopError("VFlow", "FlightStep", 3))


async def test_v2_run_step_outside_a_turn_is_refused() -> None:
    flow = flow_of(steps, ScriptedChatModel(script=[]))()
    with pytest.raises(FlowDefinitionError) as caught:
        await flow.steps["PlannerStep"].run_step(FlightStep)
    assert str(caught.value) == (
        "PlannerStep.run_step() was called outside a turn. Call it from a tool, a hook or "
        "on_response while the engine runs the flow."
    )


async def test_v3_run_steps_runs_children_concurrently_and_returns_replies_in_order(
    store: Any,
) -> None:
    both_asked = asyncio.Event()
    asked: list[str] = []

    async def policy(sent: list[Any], tools: list[str]) -> Any:
        step = model.requests[-1].metadata["picoflow_step"]
        if step == "PlannerStep":
            return tool_call("plan_all") if len(asked) == 0 else text("Planned.")
        asked.append(step)
        if len(asked) == 2:
            both_asked.set()
        await both_asked.wait()  # neither child answers before both were asked: concurrency
        return tool_call("search_flights", destination="Rome") if step == "FlightStep" else "H1"

    model = ScriptedChatModel(policy=policy)
    engine = engine_of(flow_of(steps, model), store=store)
    result = await engine.run("VFlow", "plan it all")
    assert (result.success, result.message) == (True, "Planned.")
    assert sorted(asked) == ["FlightStep", "HotelStep"]
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "PlannerStep")[1:3] == [("ai", "call plan_all"), ("tool", "PF1 / H1")]
    assert messages(doc, "HotelStep") == [("human", "Hotels please"), ("ai", "H1")]
    await engine.aclose()


async def test_v3_the_same_class_twice_is_a_value_error() -> None:
    model = ScriptedChatModel(script={"PlannerStep": [tool_call("plan_twice")]})
    result = await engine_of(flow_of(steps, model)).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "ValueError")
    assert result.message == (
        "The turn failed and the session was not changed: ValueError: PlannerStep.run_steps() "
        "was given FlightStep twice; a step has one state and one history, so two runs of it "
        "at once would overwrite each other. Run it once, or call run_step(FlightStep) again "
        "after the first run returns."
    )


async def test_v3_a_failing_child_fails_the_turn_and_cancels_the_others() -> None:
    cancelled = asyncio.Event()

    async def policy(sent: list[Any], tools: list[str]) -> Any:
        step = model.requests[-1].metadata["picoflow_step"]
        if step == "PlannerStep":
            return tool_call("plan_all")
        if step == "HotelStep":
            raise LookupError("hotel catalogue offline")
        try:
            await asyncio.Event().wait()  # the flight search never answers by itself
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "unreachable"

    model = ScriptedChatModel(policy=policy)
    result = await engine_of(flow_of(steps, model)).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "LookupError")
    assert result.message == (
        "The turn failed and the session was not changed: LookupError: hotel catalogue offline"
    )
    assert cancelled.is_set()


async def test_v3_children_sharing_a_namespace_run_one_after_another() -> None:
    order: list[str] = []

    def shared_steps(f: Any) -> list[Step]:
        return [
            PlannerStep(f).use_memory("trip"),
            FlightStep(f).use_memory("trip"),
            HotelStep(f).use_memory("trip"),
        ]

    def policy(sent: list[Any], tools: list[str]) -> Any:
        step = model.requests[-1].metadata["picoflow_step"]
        order.append(step)
        if step == "PlannerStep":
            return text("Done.") if len(order) > 1 else tool_call("plan_all")
        if step == "FlightStep" and not tools_called:
            tools_called.append(1)
            return tool_call("search_flights", destination="Rome")
        return "H1"

    tools_called: list[int] = []
    model = ScriptedChatModel(policy=policy)
    engine = engine_of(flow_of(shared_steps, model))
    result = await engine.run("VFlow", "plan")
    assert result.success and order == ["PlannerStep", "FlightStep", "HotelStep", "PlannerStep"]
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "trip") == [
        ("human", "plan"),
        ("ai", "call search_flights"),
        ("tool", "ok"),
        ("ai", "PF1"),
        ("human", "Hotels please"),
        ("ai", "H1"),
        ("ai", "call plan_all"),
        ("tool", "PF1 / H1"),
        ("ai", "Done."),
    ]
    await engine.aclose()


async def test_v2_stream_reports_nested_runs() -> None:
    model = ScriptedChatModel(
        script={
            "PlannerStep": [tool_call("plan", destination="Rome"), text("Found PF1.")],
            "FlightStep": [tool_call("search_flights", destination="Rome")],
        }
    )
    engine = engine_of(flow_of(steps, model))
    events = [e async for e in engine.stream("VFlow", "Trip")]
    nested = [(e.kind, e.data) for e in events if e.kind.startswith("nested")]
    assert nested == [
        ("nested_start", {"step": "FlightStep", "parent": "PlannerStep", "depth": 1}),
        ("nested_end", {"step": "FlightStep", "parent": "PlannerStep", "depth": 1}),
    ]
    tool_calls = [e.data["step"] for e in events if e.kind == "tool_call"]
    assert tool_calls == ["PlannerStep", "FlightStep"]
    await engine.aclose()


class AskHotelStep(Step):
    @tool
    async def ask(self) -> Any:
        """Ask the hotel helper."""
        return await self.run_step(HotelStep, "Any hotel?")


async def test_v2_stream_tokens_are_the_turns_reply_not_a_childs() -> None:
    model = ScriptedChatModel(
        script={
            "AskHotelStep": [tool_call("ask"), text("The helper suggests Roma.")],
            "HotelStep": [text("Hotel Roma")],
        }
    )
    engine = engine_of(flow_of(lambda f: [AskHotelStep(f), HotelStep(f)], model))
    events = [e async for e in engine.stream("VFlow", "a hotel?")]
    tokens = "".join(e.data["text"] for e in events if e.kind == "token")
    assert tokens == "The helper suggests Roma."
    assert events[-1].result is not None and events[-1].result.message == tokens
    await engine.aclose()


class BadCallsStep(Step):
    @tool
    async def bad(self, which: str) -> Any:
        """Call run_step/run_steps wrongly."""
        if which == "message":
            return await self.run_step(FlightStep, 42)  # type: ignore[arg-type]
        if which == "not a list":
            return await self.run_steps(FlightStep)  # type: ignore[arg-type]
        if which == "not a step":
            return await self.run_steps([dict])  # type: ignore[list-item]
        if which == "unregistered":
            return await self.run_step(DeepStep4)
        return str(await self.run_steps([]))


@pytest.mark.parametrize(
    ("which", "error", "message"),
    [
        (
            "message",
            "TypeError",
            "BadCallsStep.run_step(FlightStep, message=...) takes the message as a str (or None), "
            "got int.",
        ),
        (
            "not a list",
            "TypeError",
            "BadCallsStep.run_steps() takes a list of step classes or (StepClass, message) "
            "pairs, got type.",
        ),
        (
            "not a step",
            "TypeError",
            "BadCallsStep.run_steps() takes step classes or (StepClass, message) pairs with a "
            "str message, got <class 'dict'>.",
        ),
        (
            "unregistered",
            "FlowDefinitionError",
            "Step 'DeepStep4' is not registered in flow 'VFlow'. Add it to define_steps() "
            "(registered: BadCallsStep, FlightStep).",
        ),
    ],
)
async def test_v2_v3_bad_calls_fail_the_turn_with_a_clear_error(
    which: str, error: str, message: str
) -> None:
    model = ScriptedChatModel(script=[tool_call("bad", which=which)])
    engine = engine_of(flow_of(lambda f: [BadCallsStep(f), FlightStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.error) == (False, error)
    if error != "FlowDefinitionError":
        message = f"The turn failed and the session was not changed: {error}: {message}"
    assert result.message == message


async def test_v3_run_steps_of_nothing_is_an_empty_list() -> None:
    model = ScriptedChatModel(script=[tool_call("bad", which="empty"), text("Nothing to do.")])
    engine = engine_of(flow_of(lambda f: [BadCallsStep(f), FlightStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert result.message == "Nothing to do."
    assert [m.text for m in model.requests[1].messages if m.type == "tool"] == ["[]"]
