"""V4 structured replies and V5 on_response."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from support.vkit import STORES, engine_of, flow_of, make_store, messages, request_texts

from picoflow import FlowDefinitionError, Step, direct, finish, go, stay, tool
from picoflow.testing import ScriptedChatModel, structured, tool_call, tool_calls


class Movie(BaseModel):
    title: str
    year: int


class MovieStep(Step):
    output_schema = Movie

    @tool
    def search(self, query: str) -> str:
        """Search the film catalogue."""
        return "Alien (1979)"


class NextStep(Step):
    pass


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v4_structured_reply_through_the_final_tool(store: Any) -> None:
    model = ScriptedChatModel(script=[structured(Movie(title="Alien", year=1979))])
    engine = engine_of(flow_of(lambda f: [MovieStep(f)], model), store=store)
    result = await engine.run("VFlow", "a scary film")
    assert (result.success, result.message) == (True, '{"title":"Alien","year":1979}')
    assert model.requests[0].tool_names == ["search", "final_result"]
    final = model.requests[0].tools[1]["function"]
    assert final["parameters"]["required"] == ["title", "year"]
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "MovieStep") == [
        ("human", "a scary film"),
        ("ai", '{"title":"Alien","year":1979}'),
    ]
    await engine.aclose()


async def test_v4_structured_reply_after_tools_and_as_fenced_json_text() -> None:
    model = ScriptedChatModel(
        script=[
            tool_call("search", query="scary"),
            '```json\n{"title": "Alien", "year": 1979}\n```',
        ]
    )
    result = await engine_of(flow_of(lambda f: [MovieStep(f)], model)).run("VFlow", "film")
    assert result.message == '```json\n{"title": "Alien", "year": 1979}\n```'
    assert request_texts(model, 1)[-2:] == [("ai", "call search"), ("tool", "Alien (1979)")]


async def test_v4_an_invalid_reply_is_fed_back_and_never_stored(store: Any) -> None:
    model = ScriptedChatModel(
        script=[
            structured({"title": "Alien", "year": "long ago"}),
            "Alien, 1979",
            structured(Movie(title="Alien", year=1979)),
        ]
    )
    engine = engine_of(flow_of(lambda f: [MovieStep(f)], model), store=store)
    result = await engine.run("VFlow", "a film")
    assert result.success and result.message == '{"title":"Alien","year":1979}'
    second = model.requests[1].messages
    assert second[-1].type == "tool" and second[-1].status == "error"
    assert second[-1].text.startswith(
        "Your answer is not a valid Movie: 1 validation error for Movie\nyear\n"
    )
    assert second[-1].text.endswith("Call the final_result tool again with corrected arguments.")
    third = request_texts(model, 2)
    assert third[-2:] == [
        ("ai", "Alien, 1979"),
        (
            "human",
            "Your answer is not a valid Movie: the reply is not JSON\nCall the final_result "
            "tool again with corrected arguments.",
        ),
    ]
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "MovieStep") == [
        ("human", "a film"),
        ("ai", '{"title":"Alien","year":1979}'),
    ]
    await engine.aclose()


async def test_v4_a_reply_that_never_validates_is_a_tool_loop_error() -> None:
    model = ScriptedChatModel(script=["not json"] * 3)
    flow = flow_of(lambda f: [MovieStep(f)], model, max_tool_rounds=3)
    result = await engine_of(flow).run("VFlow", "a film")
    assert (result.success, result.error, result.session_id) == (False, "ToolLoopError", None)


async def test_v4_final_result_mixed_with_other_calls_is_answered_with_an_error() -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls(("search", {"query": "x"}), ("final_result", {"title": "A", "year": 1})),
            structured(Movie(title="Alien", year=1979)),
        ]
    )
    result = await engine_of(flow_of(lambda f: [MovieStep(f)], model)).run("VFlow", "film")
    assert result.message == '{"title":"Alien","year":1979}'
    assert request_texts(model, 1)[-2:] == [
        ("tool", "Alien (1979)"),
        (
            "tool",
            "Not accepted: call final_result on its own, in a reply without other tool calls, "
            "now that the other tools have answered.",
        ),
    ]


def test_v4_output_schema_must_be_a_pydantic_model() -> None:
    class Broken(Step):
        output_schema = dict  # type: ignore[assignment]

    model = ScriptedChatModel(script=[])
    with pytest.raises(FlowDefinitionError) as caught:
        engine_of(flow_of(lambda f: [Broken(f)], model))
    assert str(caught.value) == (
        "VFlow.Broken.output_schema must be a pydantic model class (a BaseModel subclass), got "
        "<class 'dict'>. Define e.g. `class Movie(BaseModel): title: str` and set "
        "`output_schema = Movie` on the step."
    )


class Idea(BaseModel):
    who: str


class InContextStep(Step):
    output_schema = Idea

    def on_response(self, reply: Any) -> Any:
        self.save_state({"who": reply.who})
        return None


class NameStep(Step):
    @tool
    async def save_name(self, name: str) -> Any:
        """Save the user's name."""
        idea = await self.run_step(InContextStep, f"Suggest a movie role for {name}")
        return go(NextStep).with_state({"role": idea.who})


async def test_v4_a_nested_child_returns_the_validated_object(store: Any) -> None:
    model = ScriptedChatModel(
        script={
            "NameStep": [tool_call("save_name", name="Ada")],
            "InContextStep": [structured({"who": "Ripley"})],
            "NextStep": ["Hello, Ripley."],
        }
    )
    engine = engine_of(
        flow_of(lambda f: [NameStep(f), InContextStep(f), NextStep(f)], model), store=store
    )
    result = await engine.run("VFlow", "I am Ada")
    assert (result.step, result.message) == ("NextStep", "Hello, Ripley.")
    doc = await engine.get_session(result.session_id)
    assert doc["steps"]["NextStep"]["state"]["role"] == "Ripley"
    assert doc["steps"]["InContextStep"]["state"]["who"] == "Ripley"
    await engine.aclose()


class Favorites(BaseModel):
    color: str


class FavoritesStep(Step):
    """PicoFlow's BasicFlow: a valid JSON object moves on; anything else stays."""

    def on_response(self, reply: str) -> Any:
        try:
            favorites = Favorites.model_validate_json(reply)
        except ValueError:
            return None
        self.save_state({"favorites": favorites.model_dump()})
        return go(NextStep).with_prompt("Greet the user by favourite colour.")


async def test_v5_on_response_none_stands_and_go_moves_within_the_turn(store: Any) -> None:
    model = ScriptedChatModel(
        script=["What is your favourite colour?", '{"color": "blue"}', "Blue!"]
    )
    flow = flow_of(lambda f: [FavoritesStep(f), NextStep(f)], model)
    engine = engine_of(flow, store=store)
    first = await engine.run("VFlow", "hi")
    assert (first.step, first.message) == ("FavoritesStep", "What is your favourite colour?")
    second = await engine.run("VFlow", "blue", session_id=first.session_id)
    assert (second.step, second.message) == ("NextStep", "Blue!")
    doc = await engine.get_session(first.session_id)
    assert doc["steps"]["FavoritesStep"]["state"]["favorites"] == {"color": "blue"}
    assert messages(doc, "FavoritesStep") == [
        ("human", "hi"),
        ("ai", "What is your favourite colour?"),
        ("human", "blue"),
    ]  # the JSON answer that moved on is not kept
    await engine.aclose()


class CheckedStep(Step):
    async def on_response(self, reply: str) -> Any:
        if reply == "retry me":
            return stay("Say it in French.")
        if reply == "replace me":
            return "Replaced."
        if reply == "direct":
            return direct("Directly.")
        if reply == "finish":
            return finish()
        if reply == "finish with text":
            return finish("Closed.")
        if reply == "bad":
            return 42
        return None


@pytest.mark.parametrize(
    ("script", "reply", "completed", "stored"),
    [
        (["retry me", "Bonjour"], "Bonjour", False, [("ai", "Bonjour")]),
        (["replace me"], "Replaced.", False, [("ai", "Replaced.")]),
        (["direct"], "Directly.", False, [("ai", "Directly.")]),
        (["finish"], "finish", True, [("ai", "finish")]),
        (["finish with text"], "Closed.", True, [("ai", "Closed.")]),
    ],
)
async def test_v5_on_response_outcomes(
    script: list[str], reply: str, completed: bool, stored: list[tuple[str, str]]
) -> None:
    model = ScriptedChatModel(script=script)
    engine = engine_of(flow_of(lambda f: [CheckedStep(f)], model))
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.message, result.completed) == (True, reply, completed)
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "CheckedStep") == [("human", "hi"), *stored]
    if script[0] == "retry me":
        assert request_texts(model, 1)[-2:] == [("ai", "retry me"), ("human", "Say it in French.")]
    await engine.aclose()


async def test_v5_on_response_returning_something_else_fails_the_turn() -> None:
    model = ScriptedChatModel(script=["bad"])
    result = await engine_of(flow_of(lambda f: [CheckedStep(f)], model)).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message == (
        "CheckedStep.on_response() returned 42. Return None (the reply stands), a str (the reply "
        "to send instead), go(Step), stay(feedback), direct(text) or finish()."
    )


async def test_v5_a_stay_retry_loop_is_capped() -> None:
    model = ScriptedChatModel(script=["retry me"] * 2)
    flow = flow_of(lambda f: [CheckedStep(f)], model, max_tool_rounds=2)
    result = await engine_of(flow).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "ToolLoopError")


class Review(BaseModel):
    stars: int


class DynamicStep(Step):
    """output_schema as a property: structured only once the state asks for it."""

    @property
    def output_schema(self) -> Any:  # type: ignore[override]
        return Review if self.get_state("rate") else None

    @tool
    def rate(self) -> Any:
        """Switch to rating."""
        self.save_state({"rate": True})
        return "Now answer with a Review."


async def test_v4_output_schema_may_be_a_property() -> None:
    model = ScriptedChatModel(script=["Hello.", tool_call("rate"), structured(Review(stars=5))])
    engine = engine_of(flow_of(lambda f: [DynamicStep(f)], model))
    first = await engine.run("VFlow", "hi")
    assert first.message == "Hello." and model.requests[0].tool_names == ["rate"]
    second = await engine.run("VFlow", "rate it", session_id=first.session_id)
    assert second.message == '{"stars":5}'
    assert model.requests[2].tool_names == ["rate", "final_result"]
    await engine.aclose()


class JudgeStep(Step):
    async def on_response(self, reply: str) -> Any:
        verdict = await self.run_step(MovieStep, f"Pick a film like {reply}")
        return f"{reply} -> {verdict.title} ({verdict.year})"


async def test_v5_on_response_may_run_a_nested_step() -> None:
    model = ScriptedChatModel(
        script={
            "JudgeStep": ["Alien"],
            "MovieStep": [structured(Movie(title="Aliens", year=1986))],
        }
    )
    engine = engine_of(flow_of(lambda f: [JudgeStep(f), MovieStep(f)], model))
    result = await engine.run("VFlow", "a film?")
    assert (result.step, result.message) == ("JudgeStep", "Alien -> Aliens (1986)")
    assert model.requests[1].metadata["picoflow_parent_step"] == "JudgeStep"


class RoutingChild(Step):
    def on_response(self, reply: str) -> Any:
        return go(NextStep)


class CallsChild(Step):
    @tool
    async def consult(self) -> Any:
        """Consult the child."""
        return await self.run_step(RoutingChild, "hello")


async def test_v5_on_response_go_inside_a_nested_run_fails_the_turn() -> None:
    model = ScriptedChatModel(
        script={"CallsChild": [tool_call("consult")], "RoutingChild": ["anything"]}
    )
    steps = lambda f: [CallsChild(f), RoutingChild(f), NextStep(f)]  # noqa: E731
    result = await engine_of(flow_of(steps, model)).run("VFlow", "hi")
    assert (result.success, result.error) == (False, "FlowDefinitionError")
    assert result.message.startswith(
        "RoutingChild returned go(NextStep) while running nested inside CallsChild"
    )


def test_v4_a_tool_named_like_the_final_tool_is_refused() -> None:
    class Clash(Step):
        output_schema = Movie

        @tool
        def final_result(self) -> str:
            """My own final result."""
            return "mine"

    with pytest.raises(FlowDefinitionError) as caught:
        engine_of(flow_of(lambda f: [Clash(f)], ScriptedChatModel(script=[])))
    assert str(caught.value) == (
        "VFlow.Clash has an output_schema and a tool named 'final_result', the name of the tool "
        'its structured reply is given through. Rename the tool (e.g. @tool("submit")).'
    )
