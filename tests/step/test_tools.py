"""R1 (tool exposure and schemas) and R6 (every tool call gets exactly one result)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field
from support.flows import engine_for
from test_transitions import single_step_flow

from picoflow import FlowDefinitionError, Step, tool
from picoflow.testing import ScriptedChatModel, tool_calls


class RoomType(StrEnum):
    ONE_BED = "one bed"
    SUITE = "suite"


class Criteria(BaseModel):
    city: str
    nights: int = Field(gt=0, description="Number of nights.")


class Base(Step):
    @tool
    def end_chat(self) -> Any:
        """End the conversation."""
        return "bye"


class Typed(Base):
    @tool
    def search(
        self,
        city: Annotated[str, Field(description="City to search in.")],
        rooms: list[RoomType],
        max_price: float | None = None,
    ) -> str:
        """Search hotels."""
        return f"{city} {[r.value for r in rooms]} {max_price}"

    @tool("capture", args_schema=Criteria)
    def capture_criteria(self, criteria: Criteria) -> str:
        """Record the criteria."""
        return f"{criteria.city}/{criteria.nights}"

    @tool
    def broken(self) -> Any:
        """Always fails."""
        raise RuntimeError("catalog offline")

    @tool
    def weird(self) -> Any:
        """Returns nonsense."""
        return 42


def test_r1_schema_from_type_hints_and_docstring() -> None:
    spec = {s.name: s for s in __import__("picoflow.tools").tools.collect_tools(Typed)}
    assert set(spec) == {"end_chat", "search", "capture", "broken", "weird"}
    function = spec["search"].schema["function"]
    assert function["name"] == "search" and function["description"] == "Search hotels."
    props = function["parameters"]["properties"]
    assert props["city"]["description"] == "City to search in."
    assert props["rooms"]["items"]["enum"] == ["one bed", "suite"]
    assert function["parameters"]["required"] == ["city", "rooms"]
    capture = spec["capture"].schema["function"]
    assert capture["parameters"]["properties"]["nights"]["description"] == "Number of nights."


async def test_r1_step_exposes_own_and_inherited_tools_only() -> None:
    model = ScriptedChatModel(script=["hello"])
    engine = engine_for(single_step_flow(model, Typed))
    await engine.run("OneFlow", "hi")
    assert sorted(model.requests[0].tool_names) == [
        "broken",
        "capture",
        "end_chat",
        "search",
        "weird",
    ]


async def test_r1_arguments_are_validated_and_typed() -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls(
                ("search", {"city": "Portland", "rooms": ["suite"], "max_price": "250"}),
                ("capture", {"city": "Bend", "nights": 2}),
            ),
            "ok",
        ]
    )
    engine = engine_for(single_step_flow(model, Typed))
    await engine.run("OneFlow", "hi")
    results = [m.content for m in model.requests[1].messages if m.type == "tool"]
    assert results == ["Portland ['suite'] 250.0", "Bend/2"]


async def test_r6_every_bad_call_gets_exactly_one_error_result() -> None:
    model = ScriptedChatModel(
        script=[
            tool_calls(
                ("nope", {}),
                ("search", {"city": "Portland"}),
                ("broken", {}),
                ("weird", {}),
                ("capture", {"city": "Bend", "nights": 0}),
            ),
            "Sorry about that.",
        ]
    )
    engine = engine_for(single_step_flow(model, Typed))
    result = await engine.run("OneFlow", "hi")
    assert result.success and result.message == "Sorry about that."
    tool_messages = [m for m in model.requests[1].messages if m.type == "tool"]
    assert [m.tool_call_id for m in tool_messages] == [
        "call_1",
        "call_2",
        "call_3",
        "call_4",
        "call_5",
    ]
    assert all(m.status == "error" for m in tool_messages)
    unknown, invalid, raised, weird, bad_model = (m.content for m in tool_messages)
    assert unknown == (
        "Error: no such tool 'nope'. Available tools: end_chat, search, capture, broken, weird."
    )
    assert invalid.startswith("Error: invalid arguments for tool 'search': 1 validation error")
    assert "rooms\n  Field required" in invalid
    assert invalid.endswith("Call it again with corrected arguments.")
    assert raised == "Error: tool 'broken' failed: RuntimeError: catalog offline"
    assert weird == (
        "Error: tool 'weird' returned a int, which is not a tool result. The handler must "
        "return None, a str, stay(), go(), direct() or finish()."
    )
    assert "greater than 0" in bad_model


def test_r1_tool_without_docstring_is_a_definition_error() -> None:
    with pytest.raises(FlowDefinitionError) as info:

        class Bad(Step):
            @tool
            def silent(self) -> None:
                pass

    assert str(info.value) == (
        "Tool 'silent' (test_r1_tool_without_docstring_is_a_definition_error.<locals>.Bad."
        "silent) has no docstring. The model reads the docstring to decide when to call the "
        'tool; write one as an instruction, e.g. "Record the user\'s hotel search criteria."'
    )


def test_r1_blank_alias_and_varargs_are_definition_errors() -> None:
    with pytest.raises(FlowDefinitionError, match="a tool alias must be a non-empty string"):
        tool("  ")
    with pytest.raises(FlowDefinitionError, match=r"takes \*args; tool arguments need names"):

        class Bad(Step):
            @tool
            def many(self, *args: int) -> None:
                """Many."""


def test_f5_duplicate_tool_names_within_a_step() -> None:
    class Dup(Step):
        @tool("same")
        def a(self) -> None:
            """A."""

        @tool("same")
        def b(self) -> None:
            """B."""

    model = ScriptedChatModel(script=[])
    with pytest.raises(FlowDefinitionError) as info:
        engine_for(single_step_flow(model, Dup))
    assert str(info.value) == (
        "Dup has two tools named 'same' (methods 'a' and 'b'); tool names must be unique within "
        "a step. Rename one method or give it another @tool alias."
    )


def test_r1_unresolvable_type_hint_is_a_definition_error() -> None:
    with pytest.raises(FlowDefinitionError) as info:

        class Bad(Step):
            @tool
            def lookup(self, hotel: MissingType) -> str:  # type: ignore[name-defined]  # noqa: F821
                """Look up a hotel."""
                return ""

    assert str(info.value).startswith(
        "Tool 'lookup' (test_r1_unresolvable_type_hint_is_a_definition_error.<locals>.Bad.lookup)"
        ": its type hints cannot be resolved (name 'MissingType' is not defined). Import every "
        "type the signature names at module level."
    )
