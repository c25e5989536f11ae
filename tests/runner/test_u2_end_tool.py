"""U2: the built-in end tool, `terminate_session` (alias `end_chat`), offered by use_end_tool()."""

from __future__ import annotations

from typing import Any

import pytest

from picoflow import EndStep, Flow, FlowDefinitionError, FlowEngine, FlowPrompt, Step, go, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call


class AskStep(Step):
    def get_prompt(self) -> str:
        return "Help the user. " + FlowPrompt.END_CHAT

    @tool
    def note(self, text: str) -> str:
        """Note something the user said."""
        return "noted"


def _flow(model: Any, *, end: Any = None, with_end_step: bool = True) -> type[Flow]:
    configure = end or (lambda step: step.use_end_tool())

    class EndFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            steps: list[Step] = [configure(AskStep(self))]
            if with_end_step:
                steps.append(EndStep(self).use_memory("end"))
            return steps

    return EndFlow


async def _run(flow: type[Flow], *messages: str) -> tuple[Any, dict[str, Any]]:
    engine = FlowEngine([flow], store=MemoryStore())
    session = None
    result: Any = None
    for message in messages:
        result = await engine.run(flow.name, message, session)
        assert result.success, result.message
        session = result.session_id
    doc = await engine.get_session(result.session_id)
    assert doc is not None
    return result, doc


async def test_u2_terminate_session_moves_to_end_step_with_the_models_prompt() -> None:
    model = ScriptedChatModel(
        script=[tool_call("terminate_session", prompt="Thank the user. Say goodbye."), "Bye!"]
    )
    result, doc = await _run(_flow(model), "that's all, bye")
    assert (result.step, result.completed, result.message) == ("EndStep", True, "Bye!")
    assert doc["steps"]["EndStep"]["state"]["_prompt"] == "Thank the user. Say goodbye."
    closing = model.requests[1]
    assert closing.messages[0].text == "Thank the user. Say goodbye."  # go(...).with_prompt
    assert closing.tool_names == []


async def test_u2_the_end_tool_follows_the_steps_own_tools_with_a_prompt_argument() -> None:
    model = ScriptedChatModel(script=["Hello!"])
    await _run(_flow(model), "hi")
    request = model.requests[0]
    assert request.tool_names == ["note", "terminate_session"]
    schema = request.tools[1]["function"]
    assert schema["parameters"]["properties"]["prompt"]["type"] == "string"
    assert "prompt" not in schema["parameters"].get("required", [])
    assert schema["description"].startswith("End the conversation.")


async def test_u2_end_chat_is_the_g2_alias() -> None:
    model = ScriptedChatModel(script=[tool_call("end_chat", prompt="Say bye."), "Bye."])
    result, _ = await _run(_flow(model, end=lambda s: s.use_end_tool("end_chat")), "bye")
    assert result.completed
    assert model.requests[0].tool_names == ["note", "end_chat"]


async def test_u2_a_fixed_prompt_wins_over_the_models() -> None:
    model = ScriptedChatModel(script=[tool_call("end_chat", prompt="Sell them a plan."), "Bye."])
    fixed = "Say the conversation ends here, nothing else."
    flow = _flow(model, end=lambda s: s.use_end_tool("end_chat", prompt=fixed))
    _, doc = await _run(flow, "bye")
    assert doc["steps"]["EndStep"]["state"]["_prompt"] == fixed


async def test_u2_without_a_prompt_end_step_uses_its_closing_prompt() -> None:
    model = ScriptedChatModel(script=[tool_call("terminate_session"), "Goodbye."])
    result, doc = await _run(_flow(model), "stop")
    assert result.completed
    assert "_prompt" not in doc["steps"]["EndStep"]["state"]
    assert model.requests[1].messages[0].text == EndStep.CLOSING_PROMPT


async def test_u2_a_step_without_use_end_tool_offers_no_end_tool() -> None:
    model = ScriptedChatModel(script=["Hello!"])
    await _run(_flow(model, end=lambda step: step), "hi")
    assert model.requests[0].tool_names == ["note"]


def test_u2_use_end_tool_is_chainable() -> None:
    flow = _flow(ScriptedChatModel(script=["unused"]))()
    step = AskStep(flow)
    assert step.use_end_tool().use_memory("ask") is step


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (
            ("stop_chat",),
            {},
            "AskStep.use_end_tool('stop_chat'): the end tool is called 'terminate_session' or, "
            "as in second-generation PicoFlow apps, 'end_chat'. Pass one of those, or write "
            "your own @tool returning go(EndStep).",
        ),
        (
            (),
            {"prompt": "  "},
            "AskStep.use_end_tool(prompt='  '): the fixed closing prompt must be a non-empty "
            "string; omit it to let the model's prompt argument say how to close.",
        ),
        (
            (),
            {"prompt": 3},
            "AskStep.use_end_tool(prompt=3): the fixed closing prompt must be a non-empty "
            "string; omit it to let the model's prompt argument say how to close.",
        ),
    ],
)
def test_u2_use_end_tool_refuses_bad_arguments(args: Any, kwargs: Any, message: str) -> None:
    step = AskStep(_flow(ScriptedChatModel(script=["unused"]))())
    with pytest.raises(ValueError) as caught:
        step.use_end_tool(*args, **kwargs)
    assert str(caught.value) == message


def test_u2_the_end_tool_needs_an_end_step_registered() -> None:
    flow = _flow(ScriptedChatModel(script=["unused"]), with_end_step=False)
    with pytest.raises(FlowDefinitionError) as caught:
        FlowEngine([flow], store=MemoryStore())
    assert str(caught.value) == (
        "EndFlow.AskStep offers the end tool 'terminate_session', but EndFlow registers no "
        "EndStep to end in. Add EndStep(self) (or a subclass) to define_steps()."
    )


def test_u2_the_end_tool_name_must_not_clash_with_a_step_tool() -> None:
    class ClashStep(Step):
        @tool
        def end_chat(self) -> Any:
            """End."""
            return go(EndStep)

    class ClashFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=["unused"])

        def define_steps(self) -> list[Step]:
            return [ClashStep(self).use_end_tool("end_chat"), EndStep(self)]

    with pytest.raises(FlowDefinitionError) as caught:
        FlowEngine([ClashFlow], store=MemoryStore())
    assert "offers more than one tool named 'end_chat'" in str(caught.value)


def test_u2_the_graph_draws_the_end_tool_move() -> None:
    graph = _flow(
        ScriptedChatModel(script=["unused"]), end=lambda s: s.use_end_tool("end_chat")
    )().graph()
    assert "AskStep -->|end_chat| EndStep" in graph
