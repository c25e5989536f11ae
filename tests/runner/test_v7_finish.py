"""V7: finish() ends the session from any step; Flow.complete() does the same from code."""

from __future__ import annotations

from typing import Any

import pytest
from support.vkit import STORES, engine_of, flow_of, make_store, messages

from picoflow import Step, finish, tool
from picoflow.testing import ScriptedChatModel, text, tool_call


class BookStep(Step):
    @tool
    def book(self, slot: str) -> Any:
        """Book the chosen slot."""
        self.save_state({"booked": slot})
        return finish(f"Booked {slot}. Goodbye!")

    @tool
    def done(self) -> Any:
        """The user is done."""
        return finish()

    @tool
    def close_quietly(self) -> str:
        """Close the session from code."""
        self.flow.complete()
        return "closed"


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v7_finish_with_text_completes_and_replies_without_a_model_call(store: Any) -> None:
    model = ScriptedChatModel(script=[tool_call("book", slot="9:00"), text("Hi again.")])
    engine = engine_of(flow_of(lambda f: [BookStep(f)], model), store=store)
    result = await engine.run("VFlow", "9 please")
    assert (result.success, result.completed, result.message) == (
        True,
        True,
        "Booked 9:00. Goodbye!",
    )
    assert result.step == "BookStep" and len(model.requests) == 1  # no closing call
    doc = await engine.get_session(result.session_id)
    assert doc["run_status"] == "completed" and doc["current_step"] == "BookStep"
    assert doc["steps"]["BookStep"]["state"]["booked"] == "9:00"
    assert messages(doc, "BookStep") == [
        ("human", "9 please"),
        ("ai", "call book"),
        ("tool", "ok"),
        ("ai", "Booked 9:00. Goodbye!"),
    ]
    again = await engine.run("VFlow", "hello?", session_id=result.session_id)
    assert again.session_id != result.session_id  # P5: a completed id starts a new session
    await engine.aclose()


async def test_v7_finish_without_text_lets_the_model_say_the_closing_line(store: Any) -> None:
    model = ScriptedChatModel(script=[tool_call("done"), text("Thanks, bye!")])
    engine = engine_of(flow_of(lambda f: [BookStep(f)], model), store=store)
    result = await engine.run("VFlow", "that's all")
    assert (result.completed, result.message) == (True, "Thanks, bye!")
    assert [m.type for m in model.requests[1].messages][-2:] == ["ai", "tool"]
    doc = await engine.get_session(result.session_id)
    assert doc["run_status"] == "completed"
    await engine.aclose()


async def test_v7_flow_complete_from_code_ends_the_session(store: Any) -> None:
    model = ScriptedChatModel(script=[tool_call("close_quietly"), text("All set.")])
    engine = engine_of(flow_of(lambda f: [BookStep(f)], model), store=store)
    result = await engine.run("VFlow", "close it")
    assert (result.success, result.completed, result.message) == (True, True, "All set.")
    assert (await engine.get_session(result.session_id))["run_status"] == "completed"
    await engine.aclose()


def test_v7_finish_takes_only_text() -> None:
    with pytest.raises(TypeError) as caught:
        finish({"a": 1})  # type: ignore[arg-type]
    assert str(caught.value) == "finish() takes the closing reply as a str (or nothing), got dict."
