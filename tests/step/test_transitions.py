"""R2-R5, R7, R8: what tool handlers return and how the turn loop applies it."""

from __future__ import annotations

from typing import Any

import pytest
from support.failed_turns import apart_from_error
from support.flows import PresentStep, engine_for, transcript, two_step_flow

from picoflow import EndStep, Flow, Step, direct, go, stay, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls


async def test_r4_go_moves_and_calls_destination_model_in_same_turn() -> None:
    model = ScriptedChatModel(
        script=[tool_call("capture_choices", city="Portland", nights=2), "Three hotels match."]
    )
    engine = engine_for(two_step_flow(model))
    result = await engine.run("HotelFlow", "Portland, 2 nights")
    assert (result.success, result.message, result.step) == (
        True,
        "Three hotels match.",
        "PresentStep",
    )
    doc = await engine.get_session(result.session_id)
    assert doc["sequence"] == ["ExploreStep", "PresentStep"]
    assert transcript(doc, "ExploreStep") == [
        ("human", "Portland, 2 nights"),
        ("ai", "call capture_choices"),
        ("tool", "ok"),
    ]
    # The destination had nothing to answer, so the default on_crossing opened for it (T3).
    assert transcript(doc, "PresentStep") == [("human", "Continue."), ("ai", "Three hotels match.")]
    assert doc["steps"]["PresentStep"]["state"]["_prompt"] == "Present the results."
    assert model.requests[1].messages[0].content == "Present the results."


class StayStep(Step):
    @tool
    def check(self, value: int) -> Any:
        """Validate a number."""
        if value < 0:
            return stay("The value must be positive; ask again.")
        return f"accepted {value}"


def single_step_flow(model: ScriptedChatModel, *steps: type[Step]) -> type[Flow]:
    classes = steps or (StayStep,)

    class OneFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [cls(self) for cls in classes]

    return OneFlow


async def test_r3_stay_feeds_back_and_calls_same_model_again() -> None:
    model = ScriptedChatModel(
        script=[tool_call("check", value=-1), "Please give a positive number."]
    )
    engine = engine_for(single_step_flow(model))
    result = await engine.run("OneFlow", "-1")
    assert result.message == "Please give a positive number."
    second = model.requests[1].messages
    assert second[-1].type == "tool"
    assert second[-1].content == "The value must be positive; ask again."
    assert second[-1].tool_call_id == "call_1"


async def test_r2_plain_string_and_none_results_stay() -> None:
    model = ScriptedChatModel(script=[tool_call("check", value=3), "Done."])
    engine = engine_for(single_step_flow(model))
    result = await engine.run("OneFlow", "3")
    assert result.message == "Done."
    assert model.requests[1].messages[-1].content == "accepted 3"


class DirectStep(Step):
    @tool
    def table(self) -> Any:
        """Show the comparison table."""
        return direct("| a | b |").with_content_type("text/markdown")


async def test_r5_direct_is_the_reply_and_ends_the_turn() -> None:
    model = ScriptedChatModel(script=[tool_call("table")])
    engine = engine_for(single_step_flow(model, DirectStep))
    result = await engine.run("OneFlow", "compare")
    assert (result.message, result.content_type) == ("| a | b |", "text/markdown")
    assert len(model.requests) == 1
    doc = await engine.get_session(result.session_id)
    last = doc["memory"]["DirectStep"]["messages"][-1]["data"]
    assert (last["type"], last["content"], last["additional_kwargs"]) == (
        "ai",
        "| a | b |",
        {"direct": True},
    )


class Loopy(Step):
    @tool
    def again(self) -> Any:
        """Try again."""
        return stay("try again")


async def test_r7_tool_loop_past_the_cap_fails_and_writes_nothing() -> None:
    model = ScriptedChatModel(policy=lambda messages, tools: tool_call("again"))
    flow = single_step_flow(model, Loopy)
    flow.max_tool_rounds = 3
    store = MemoryStore()
    engine = engine_for(flow, store=store)
    first = await engine.run("OneFlow", "")  # a new session needs a first turn; it loops too
    assert first.success is False and first.session_id is None
    assert first.error == "ToolLoopError"
    assert first.message == (
        "OneFlow made 3 model calls in one turn (step 'Loopy') without producing a reply, the "
        "limit is max_tool_rounds. The session was left as it was before the turn; check the "
        "step's tools for a stay() loop or raise max_tool_rounds on the flow."
    )
    assert len(model.requests) == 3


async def test_r7_failed_turn_leaves_existing_session_unchanged() -> None:
    replies: list[Any] = ["Hello."]
    model = ScriptedChatModel(
        policy=lambda messages, tools: replies.pop(0) if replies else tool_call("again")
    )
    engine = engine_for(single_step_flow(model, Loopy))
    first = await engine.run("OneFlow", "hi")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("OneFlow", "loop please", session_id=first.session_id)
    assert failed.success is False and failed.completed is False
    assert failed.session_id == first.session_id
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # P3; U5 writes the error alone


class Picker(Step):
    @tool
    def first(self) -> Any:
        """First tool."""
        return go(OtherStep).with_state({"picked": "first"})

    @tool
    def second(self) -> Any:
        """Second tool."""
        return go(ThirdStep).with_state({"picked": "second"})


class OtherStep(Step):
    pass


class ThirdStep(Step):
    pass


async def test_r4_last_transition_of_a_response_wins_and_every_call_is_answered() -> None:
    model = ScriptedChatModel(script=[tool_calls(("first", {}), ("second", {})), "In third."])
    engine = engine_for(single_step_flow(model, Picker, OtherStep, ThirdStep))
    result = await engine.run("OneFlow", "go")
    assert (result.step, result.message) == ("ThirdStep", "In third.")
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["ThirdStep"]["state"]["picked"] == "second"
    assert doc["steps"]["OtherStep"]["state"] == {}
    tools = [
        m["data"]["tool_call_id"]
        for m in doc["memory"]["Picker"]["messages"]
        if m["type"] == "tool"
    ]
    assert tools == ["call_1", "call_2"]


class Forwarder(Step):
    @tool
    def hand_over(self) -> Any:
        """Hand the user's sentence to the next step."""
        return go(Receiver).with_message(self.get_last_message()).with_tool_feedback("handed over")


class Receiver(Step):
    crossings: list[tuple[str, str | None]] = []

    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        Receiver.crossings.append((message.content if message else None, prior_step))
        return message


async def test_r4_forwarded_message_goes_through_on_crossing_restamped() -> None:
    Receiver.crossings = []
    model = ScriptedChatModel(script=[tool_call("hand_over"), "Got it."])
    engine = engine_for(single_step_flow(model, Forwarder, Receiver))
    result = await engine.run("OneFlow", "two beds please")
    assert Receiver.crossings == [("two beds please", "Forwarder")]
    doc = await engine.get_session(result.session_id)
    forwarded = doc["memory"]["Receiver"]["messages"][1]["data"]
    assert forwarded["content"] == "two beds please"
    assert forwarded["id"].startswith("Receiver|")
    assert doc["memory"]["Forwarder"]["messages"][-1]["data"]["content"] == "handed over"


async def test_r8_end_step_completes_the_session_and_says_goodbye() -> None:
    model = ScriptedChatModel(script=[tool_call("end_chat"), "Goodbye!", "Welcome back."])
    flow = two_step_flow(model)

    class StartAtPresent(flow):  # type: ignore[misc, valid-type]
        name = "HotelFlow"

        def initial_step(self) -> Any:
            return PresentStep

    engine = engine_for(StartAtPresent)
    result = await engine.run("HotelFlow", "bye")
    assert (result.completed, result.step, result.message) == (True, "EndStep", "Goodbye!")
    assert model.requests[1].messages[0].content == EndStep.CLOSING_PROMPT
    doc = await engine.get_session(result.session_id)
    assert doc["run_status"] == "completed"
    # P5: a completed session's id starts a new session.
    again = await engine.run("HotelFlow", "hello again", session_id=result.session_id)
    assert again.success and again.session_id != result.session_id
    assert again.message == "Welcome back."


def test_r2_builders_are_immutable_and_validate_targets() -> None:
    base = go(PresentStep)
    built = base.with_state({"a": 1}).with_prompt("p").with_content_type("text/markdown")
    assert base.state is None and built.state == {"a": 1} and built.prompt == "p"
    with pytest.raises(TypeError, match="go\\(\\) needs a Step class or a step name, got 3."):
        go(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="go\\(\\) needs a Step class or a non-empty step name."):
        go("  ")
    with pytest.raises(TypeError, match="direct\\(\\) needs the reply text as a str, got int."):
        direct(5)  # type: ignore[arg-type]


class TextOpener(Step):
    """An `on_crossing` that returns plain text: it is heard as a human message (T3)."""

    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        return f"Arrived from {prior_step or 'nowhere'}."


class BadOpener(Step):
    def on_crossing(self, message: Any, prior_step: str | None) -> Any:
        return {"text": "hello"}


async def test_t3_on_crossing_may_return_text_on_a_move() -> None:
    model = ScriptedChatModel(script=[tool_call("hand_over"), "Got it."])

    class Handing(Forwarder):
        def hand_over(self) -> Any:
            return go(TextOpener).with_tool_feedback("handed over")

    engine = engine_for(single_step_flow(model, Handing, TextOpener))
    result = await engine.run("OneFlow", "two beds please")
    assert (result.success, result.message) == (True, "Got it."), result.message
    doc = await engine.get_session(result.session_id)
    assert transcript(doc, "TextOpener") == [("human", "Arrived from Handing."), ("ai", "Got it.")]
    assert doc["memory"]["TextOpener"]["messages"][0]["data"]["id"].startswith("TextOpener|")
    assert model.requests[1].messages[-1].content == "Arrived from Handing."


async def test_t3_on_crossing_may_return_text_when_a_session_opens_without_a_message() -> None:
    model = ScriptedChatModel(script=["Welcome!"])
    engine = engine_for(single_step_flow(model, TextOpener))
    result = await engine.run("OneFlow", "")
    assert (result.success, result.message) == (True, "Welcome!"), result.message
    doc = await engine.get_session(result.session_id)
    assert transcript(doc, "TextOpener") == [("human", "Arrived from nowhere."), ("ai", "Welcome!")]


async def test_t3_on_crossing_returning_something_else_says_what_to_return() -> None:
    model = ScriptedChatModel(script=["Welcome!"])
    result = await engine_for(single_step_flow(model, BadOpener)).run("OneFlow", "")
    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message == (
        "BadOpener.on_crossing() returned a dict. Return a message (a str is sent as the "
        "user's), the forwarded message unchanged, or None to add nothing."
    )
