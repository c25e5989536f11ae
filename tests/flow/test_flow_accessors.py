"""PicoFlow's flow accessors: `get_executing_step`, `get_tool`/`require_tool`, `get_session_doc`.

(pico-demo-flows reference 2.6 and 2.7; SPEC section 12 "the rest of PicoFlow's surface".)
"""

from __future__ import annotations

from typing import Any

import pytest

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

seen: list[tuple[str, str]] = []


class ChildStep(Step):
    def get_prompt(self) -> str:
        seen.append(("child prompt", self.flow.get_executing_step().name))
        return "Say something."


class ParentStep(Step):
    def get_prompt(self) -> str:
        seen.append(("parent prompt", self.flow.get_executing_step().name))
        return "Call ask_child."

    @tool
    async def ask_child(self, topic: str) -> str:
        """Ask the child step about a topic."""
        seen.append(("tool", self.flow.get_executing_step().name))
        doc = self.flow.get_session_doc()
        seen.append(("doc", f"{doc['flow']}:{sorted(doc['memory'])}"))
        return str(await self.run_step(ChildStep))


def _script() -> ScriptedChatModel:
    return ScriptedChatModel(
        script={
            "ParentStep": [tool_call("ask_child", topic="x"), "done"] * 4,
            "ChildStep": ["child says hi"] * 4,
        }
    )


class AccessFlow(Flow):
    model = _script()  # built once: config_model() runs every turn (F4)

    def config_model(self) -> Any:
        return self.model

    def define_steps(self) -> list[Step]:
        return [ParentStep(self), ChildStep(self)]


async def test_get_executing_step_is_the_nested_child_inside_run_step() -> None:
    AccessFlow.model = _script()
    seen.clear()
    engine = FlowEngine([AccessFlow], store=MemoryStore())
    result = await engine.run("AccessFlow", "hi")
    assert result.message == "done"
    assert [entry for entry in seen if entry[0] != "doc"] == [
        ("parent prompt", "ParentStep"),
        ("tool", "ParentStep"),
        ("child prompt", "ChildStep"),
        ("parent prompt", "ParentStep"),
    ]


async def test_get_session_doc_is_a_copy_of_the_document_as_the_turn_loaded_it() -> None:
    seen.clear()
    AccessFlow.model = _script()
    engine = FlowEngine([AccessFlow], store=MemoryStore())
    first = await engine.run("AccessFlow", "hi")
    await engine.run("AccessFlow", "more", session_id=first.session_id)
    assert [value for kind, value in seen if kind == "doc"] == [
        "AccessFlow:[]",  # a new session: the document being created
        "AccessFlow:['ChildStep', 'ParentStep']",  # the first turn, as saved
    ]


def test_get_session_doc_outside_a_turn_says_where_to_call_it() -> None:
    with pytest.raises(FlowDefinitionError) as caught:
        AccessFlow().get_session_doc()
    assert str(caught.value) == (
        "AccessFlow.get_session_doc() was called outside a turn. Call it from a tool, a hook or "
        "init() while the engine runs the flow."
    )


def test_get_tool_and_require_tool_find_a_declared_tool() -> None:
    flow = AccessFlow()
    spec = flow.require_tool("ask_child")
    assert (spec.name, spec.description) == ("ask_child", "Ask the child step about a topic.")
    assert spec.schema["function"]["parameters"]["required"] == ["topic"]
    assert flow.get_tool("ask_child", ChildStep) is None
    assert flow.get_tool("nope") is None


def test_require_tool_names_the_tools_there_are() -> None:
    flow = AccessFlow()
    with pytest.raises(FlowDefinitionError) as caught:
        flow.require_tool("ask_parent")
    assert str(caught.value) == (
        "Tool 'ask_parent' is not defined in flow 'AccessFlow' (its tools: ask_child). Declare "
        "it with @tool on a step method, or check the spelling."
    )
    with pytest.raises(FlowDefinitionError) as caught:
        flow.require_tool("ask_child", ChildStep)
    assert str(caught.value) == (
        "Tool 'ask_child' is not defined in step 'ChildStep' (its tools: none). Declare it "
        "with @tool on a step method, or check the spelling."
    )
