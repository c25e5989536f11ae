"""V8: the model's mistakes are answered and recorded, and never break a session.

A call whose arguments are not valid JSON (LangChain's `invalid_tool_calls`) and a call to a
tool the step does not offer each get an error tool result (R6) and a session warning. No stored
history and no request ever holds a tool call without its result, whatever the model sends:
a property test drives the real engine with random replies, invalid calls included, and checks
every stored document and every request, in LangChain's form and in OpenAI's wire form.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    convert_to_openai_messages,
    messages_from_dict,
)
from langchain_core.messages.tool import invalid_tool_call
from support.flows import engine_for
from support.openai_server import OpenAIServer
from test_compaction_properties import pairing_problems

from picoflow import Flow, FlowEngine, Step, tool
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call, tool_calls

BAD_ARGS = '{"city": Paris}'  # unquoted value: no JSON parser, lenient or not, accepts it
JSON_WARNING = (
    "The model called tool 'search' in Desk with arguments that are not valid JSON; it was sent "
    "an error result and asked to call the tool again."
)
JSON_ERROR = (
    "Error: the arguments of your call to tool 'search' are not valid JSON: "
    "'{\"city\": Paris}'. Call it again with the arguments as one JSON object."
)


class Desk(Step):
    """One step with one tool, enough to watch what happens to a call."""

    def get_prompt(self) -> str:
        return "Help the user find a hotel."

    @tool
    def search(self, city: str) -> str:
        """Search hotels in a city."""
        self.save_state({"searched": [*(self.get_state("searched") or []), city]})
        return f"3 hotels in {city}"


def desk_flow(model: Any) -> type[Flow]:
    class DeskFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Desk(self).use_memory("desk")]

    return DeskFlow


def malformed(args: str | None = BAD_ARGS, name: str | None = "search", id_: Any = None) -> Any:
    return AIMessage("", invalid_tool_calls=[invalid_tool_call(name=name, args=args, id=id_)])


def stored(doc: dict[str, Any]) -> list[BaseMessage]:
    return messages_from_dict(doc["memory"]["desk"]["messages"])


def wire_problems(messages: list[BaseMessage]) -> list[str]:
    """What a provider would refuse in the OpenAI form of `messages`: an assistant tool call
    not answered by the tool messages right after it, or arguments that are not JSON."""
    problems: list[str] = []
    wire = convert_to_openai_messages(messages)
    for index, message in enumerate(wire):
        calls = message.get("tool_calls") or []
        for call in calls:
            try:
                json.loads(call["function"]["arguments"])
            except ValueError:
                problems.append(f"call {call['id']} at {index} sends arguments that are not JSON")
        answers = [m.get("tool_call_id") for m in wire[index + 1 : index + 1 + len(calls)]]
        if sorted(answers, key=str) != sorted((c["id"] for c in calls), key=str):
            problems.append(f"calls at {index} answered by {answers}")
    return problems


async def test_v8_invalid_json_arguments_get_an_error_result_and_a_warning() -> None:
    model = ScriptedChatModel(script=[malformed(), "Which city did you mean?"])
    engine = engine_for(desk_flow(model))
    result = await engine.run("DeskFlow", "hotels please")
    assert result.success and result.message == "Which city did you mean?"
    assert result.warnings == [JSON_WARNING]
    call, answer = model.requests[1].messages[-2:]
    assert isinstance(call, AIMessage) and isinstance(answer, ToolMessage)
    assert call.tool_calls == [{"name": "search", "args": {}, "id": "call_1", "type": "tool_call"}]
    assert call.invalid_tool_calls == []
    assert (answer.tool_call_id, answer.status, answer.content) == ("call_1", "error", JSON_ERROR)
    doc = await engine.get_session(result.session_id)
    assert pairing_problems(stored(doc)) == [] and wire_problems(stored(doc)) == []
    assert [w["message"] for w in doc["warnings"]] == [JSON_WARNING]


async def test_v8_session_goes_on_after_a_malformed_call() -> None:
    """The turn after a malformed call is an ordinary turn: the model can call again."""
    model = ScriptedChatModel(
        script=[malformed(), "Which city?", tool_call("search", city="Bend"), "Found 3."]
    )
    engine = engine_for(desk_flow(model))
    first = await engine.run("DeskFlow", "hotels please")
    second = await engine.run("DeskFlow", "Bend", session_id=first.session_id)
    assert second.success and second.message == "Found 3." and second.warnings == []
    doc = await engine.get_session(first.session_id)
    assert doc["steps"]["Desk"]["state"]["searched"] == ["Bend"]
    for request in model.requests:
        assert pairing_problems(request.messages) == []
        assert wire_problems(request.messages) == []


async def test_v8_valid_and_invalid_calls_in_one_reply_each_get_one_result() -> None:
    reply = tool_calls(("search", {"city": "Bend"}))
    reply = reply.model_copy(
        update={"invalid_tool_calls": [invalid_tool_call(name="search", args="city=Salem")]}
    )
    model = ScriptedChatModel(script=[reply, "Bend has 3; which other city?"])
    engine = engine_for(desk_flow(model))
    result = await engine.run("DeskFlow", "Bend and Salem")
    assert result.success
    answers = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.status) for m in answers] == [
        ("call_1", "success"),
        ("call_2", "error"),
    ]
    assert answers[0].content == "3 hotels in Bend"
    assert answers[1].content == (
        "Error: the arguments of your call to tool 'search' are not valid JSON: 'city=Salem'. "
        "Call it again with the arguments as one JSON object."
    )


async def test_v8_invalid_call_without_name_id_or_arguments_is_answered() -> None:
    model = ScriptedChatModel(script=[malformed(args=None, name=None, id_=None), "Sorry."])
    engine = engine_for(desk_flow(model))
    result = await engine.run("DeskFlow", "hi")
    assert result.success and result.warnings == [
        "The model called tool '' in Desk with arguments that are not valid JSON; it was sent "
        "an error result and asked to call the tool again."
    ]
    doc = await engine.get_session(result.session_id)
    assert pairing_problems(stored(doc)) == [] and wire_problems(stored(doc)) == []


async def test_v8_long_malformed_arguments_are_clipped_in_the_error() -> None:
    model = ScriptedChatModel(script=[malformed(args="x" * 5000), "Sorry."])
    engine = engine_for(desk_flow(model))
    await engine.run("DeskFlow", "hi")
    answer = model.requests[1].messages[-1]
    assert answer.content == (
        "Error: the arguments of your call to tool 'search' are not valid JSON: "
        f"'{'x' * 200}...'. Call it again with the arguments as one JSON object."
    )


async def test_v8_duplicate_call_ids_in_one_reply_are_made_unique() -> None:
    """Results are matched to calls by id, so two calls sharing one would leave one unanswered."""
    reply = AIMessage(
        "",
        tool_calls=[{"name": "search", "args": {"city": "A"}, "id": "same", "type": "tool_call"}],
        invalid_tool_calls=[invalid_tool_call(name="search", args="?", id="same")],
    )
    model = ScriptedChatModel(script=[reply, "ok"])
    engine = engine_for(desk_flow(model))
    result = await engine.run("DeskFlow", "hi")
    call = next(m for m in model.requests[1].messages if isinstance(m, AIMessage))
    ids = [c["id"] for c in call.tool_calls]
    assert ids[0] == "same" and len(set(ids)) == 2
    doc = await engine.get_session(result.session_id)
    assert pairing_problems(stored(doc)) == []


async def test_v8_unknown_tool_gets_an_error_result_and_a_warning() -> None:
    model = ScriptedChatModel(script=[tool_call("book", hotel="Ritz"), "I can only search."])
    engine = engine_for(desk_flow(model))
    result = await engine.run("DeskFlow", "book the Ritz")
    assert result.success and result.warnings == [
        "The model called tool 'book', which Desk does not offer; it was sent an error result "
        "listing the tools it has."
    ]
    answer = model.requests[1].messages[-1]
    assert answer.content == "Error: no such tool 'book'. Available tools: search."


@pytest.mark.parametrize("stream", [False, True])
async def test_v8_malformed_call_from_real_chat_openai(stream: bool) -> None:
    """The real `ChatOpenAI` client, over loopback: the provider's malformed arguments come back
    as an invalid call, and the next request the provider sees answers it (the 400 that
    "tool_calls must be followed by tool messages" would give is never provoked)."""
    brain = ScriptedChatModel(script=[malformed(), "Which city?", "Still here."])
    with OpenAIServer(brain) as server:
        engine = engine_for(desk_flow(server.chat_model()))
        if stream:
            events = [e async for e in engine.stream("DeskFlow", "hotels")]
            done = events[-1].result
            assert done is not None and done.warnings == [JSON_WARNING]
            session_id = done.session_id
        else:
            session_id = (await engine.run("DeskFlow", "hotels")).session_id
        again = await engine.run("DeskFlow", "are you there?", session_id=session_id)
    assert again.success and again.message == "Still here."
    for body in server.requests[1:]:
        wire = body["messages"]
        for index, message in enumerate(wire):
            for call in message.get("tool_calls") or []:
                assert json.loads(call["function"]["arguments"]) == {}
                assert wire[index + 1]["tool_call_id"] == call["id"]
                assert wire[index + 1]["content"] == JSON_ERROR


# -- the property: random replies, invalid calls included ----------------------------------------

REPLY_KINDS = ["text", "call", "unknown", "invalid", "mixed", "empty"]


def reply_for(kind: str, number: int) -> AIMessage | str:
    if kind == "text":
        return f"a{number}"
    if kind == "call":
        return tool_call("search", city=f"c{number}")
    if kind == "unknown":
        return tool_call("teleport", to="moon")
    if kind == "invalid":
        return malformed(args=f"{{oops {number}")
    if kind == "empty":
        return AIMessage("")
    return tool_calls(("search", {"city": "m"}), ("nope", {})).model_copy(
        update={"invalid_tool_calls": [invalid_tool_call(name="search", args="[", id=None)]}
    )


async def converse(turns: list[list[str]]) -> None:
    queue: list[AIMessage | str] = []
    model = ScriptedChatModel(policy=lambda messages, tools: queue.pop(0))
    engine = FlowEngine(flows=[desk_flow(model)], store=MemoryStore())
    session_id = None
    for number, kinds in enumerate(turns):
        queue.extend(reply_for(kind, number) for kind in kinds)
        queue.append(f"done {number}")  # every turn ends in text once the calls are answered
        result = await engine.run("DeskFlow", f"h{number}", session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
        history = stored(await engine.get_session(session_id))
        assert isinstance(history[0], SystemMessage)
        assert pairing_problems(history) == [] and wire_problems(history) == []
        assert all(not getattr(m, "invalid_tool_calls", None) for m in history)
        queue.clear()  # a reply that was text ended the turn early; drop the rest
    for request in model.requests:
        assert pairing_problems(request.messages) == []
        assert wire_problems(request.messages) == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(REPLY_KINDS), max_size=4), min_size=1, max_size=8))
def test_v8_no_stored_history_or_request_holds_an_unanswered_call(turns: list[list[str]]) -> None:
    asyncio.run(converse(turns))
