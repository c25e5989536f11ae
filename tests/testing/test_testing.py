"""ScriptedChatModel: scripts, policies, the request record, ids, usage and streaming."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.tools import tool
from pydantic import BaseModel

from picoflow import testing
from picoflow.testing import ScriptedChatModel, ScriptedRequest, text, tool_call, tool_calls


@tool
def search_hotels(city: str) -> str:
    """Search hotels in a city."""
    return city


@tool
def book_hotel(hotel_id: str, nights: int) -> str:
    """Book a hotel."""
    return hotel_id


def reply_config(step: str, purpose: str = "reply") -> dict:
    metadata = {
        "picoflow_step": step,
        "picoflow_namespace": "main",
        "picoflow_session_id": "s1",
        "picoflow_purpose": purpose,
    }
    return {"metadata": metadata, "tags": ["picoflow"]}


async def aggregate(chunks) -> AIMessageChunk:
    total = None
    async for chunk in chunks:
        total = chunk if total is None else total + chunk
    return total


def call(name: str, args: dict, id: str) -> dict:
    return {"name": name, "args": args, "id": id, "type": "tool_call"}


# -- the public surface ---------------------------------------------------------------------


def test_public_names_and_pytest_opt_out():
    assert testing.__all__ == [
        "ScriptedChatModel",
        "ScriptedRequest",
        "text",
        "tool_call",
        "tool_calls",
        "structured",  # V4
        "transient_error",  # V9
        "run_scenario",  # X4
        "KeywordEmbeddings",  # L4
        "ScriptedDecisionProvider",  # D2
    ]
    assert ScriptedChatModel.__test__ is False
    model = ScriptedChatModel(script=[])
    assert isinstance(model, BaseChatModel)
    assert model._llm_type == "scripted"


def test_reply_builders_make_plain_messages():
    assert text("Hi") == AIMessage(content="Hi")
    assert tool_call("search_hotels", {"city": "Paris"}).tool_calls == [
        call("search_hotels", {"city": "Paris"}, None)
    ]
    merged = tool_call("book_hotel", {"hotel_id": "h1"}, nights=2, name="x")
    assert merged.tool_calls[0]["args"] == {"hotel_id": "h1", "nights": 2, "name": "x"}
    assert tool_call("end").tool_calls == [call("end", {}, None)]
    parallel = tool_calls(("a", {"x": 1}), ("b", {}), content="Two calls.")
    assert parallel.content == "Two calls."
    assert [c["name"] for c in parallel.tool_calls] == ["a", "b"]


def test_tool_calls_builder_misuse():
    with pytest.raises(ValueError) as error:
        tool_calls()
    assert str(error.value) == (
        "tool_calls() needs at least one (name, args) pair; use text() for a reply without "
        "tool calls."
    )
    with pytest.raises(TypeError) as error:
        tool_calls("search_hotels")
    assert str(error.value) == (
        "tool_calls() takes (name, args) pairs with args a dict, got 'search_hotels'; write "
        'tool_calls(("search", {"city": "Paris"})).'
    )


# -- construction ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "which"),
    [({}, "neither"), ({"script": ["x"], "policy": lambda m, t: "x"}, "both")],
)
def test_needs_exactly_one_of_script_and_policy(kwargs, which):
    with pytest.raises(ValueError) as error:
        ScriptedChatModel(**kwargs)
    assert str(error.value) == (
        f"ScriptedChatModel takes exactly one of script= and policy=, got {which}. Pass "
        "script=[...] with the replies in call order, or policy=fn to compute each reply."
    )


def test_rejects_bad_script_items_and_policies():
    with pytest.raises(TypeError) as error:
        ScriptedChatModel(script=["ok", 42])
    assert str(error.value) == (
        "ScriptedChatModel script[1] is 42; use a str, an AIMessage (text(), tool_call(), "
        "tool_calls()) or an exception instance to raise."
    )
    with pytest.raises(TypeError) as error:
        ScriptedChatModel(script={"ExploreStep": [ValueError]})
    assert str(error.value) == (
        "ScriptedChatModel script['ExploreStep'][0] is <class 'ValueError'>; use a str, an "
        "AIMessage (text(), tool_call(), tool_calls()) or an exception instance to raise."
    )
    with pytest.raises(TypeError) as error:
        ScriptedChatModel(script="Hello")
    assert str(error.value) == (
        "ScriptedChatModel script must be a list of replies, got str; wrap a single reply in "
        "a list."
    )
    with pytest.raises(TypeError) as error:
        ScriptedChatModel(policy="Hello")
    assert str(error.value) == (
        "ScriptedChatModel policy must be a function (messages, tool_names) -> reply, got str."
    )


def test_repr_shows_progress():
    model = ScriptedChatModel(script=["a", "b"])
    model.invoke("hi")
    assert repr(model) == "ScriptedChatModel(script=1/2 used, requests=1)"
    keyed = ScriptedChatModel(script={"ExploreStep": ["a"], "summary": []})
    assert repr(keyed) == (
        "ScriptedChatModel(script='ExploreStep': 0/1 used, 'summary': 0/0 used, requests=0)"
    )

    def my_policy(messages, tool_names):
        return "x"

    assert repr(ScriptedChatModel(policy=my_policy)) == (
        "ScriptedChatModel(policy=test_repr_shows_progress.<locals>.my_policy, requests=0)"
    )


# -- scripts --------------------------------------------------------------------------------


async def test_script_replies_in_order():
    scripted = AIMessage(content="As is.", id="msg-7")
    model = ScriptedChatModel(script=["First.", text("Second."), scripted])
    replies = [await model.ainvoke(f"turn {n}") for n in range(3)]
    assert [r.content for r in replies] == ["First.", "Second.", "As is."]
    assert replies[2].id == "msg-7"
    assert [r.messages for r in model.requests] == [
        [HumanMessage(content="turn 0")],
        [HumanMessage(content="turn 1")],
        [HumanMessage(content="turn 2")],
    ]


async def test_concurrent_calls_take_distinct_replies():
    model = ScriptedChatModel(script=[tool_call("a"), tool_call("b"), tool_call("c")])
    replies = await asyncio.gather(*(model.ainvoke(str(n)) for n in range(3)))
    assert sorted((r.tool_calls[0]["name"], r.tool_calls[0]["id"]) for r in replies) == [
        ("a", "call_1"),
        ("b", "call_2"),
        ("c", "call_3"),
    ]


async def test_exception_item_is_raised_at_its_call_and_the_script_goes_on():
    model = ScriptedChatModel(script=[TimeoutError("provider timed out"), "Recovered."])
    with pytest.raises(TimeoutError, match="provider timed out"):
        await model.ainvoke("hi")
    assert (await model.ainvoke("again")).content == "Recovered."
    assert len(model.requests) == 2


async def test_dict_script_picks_purpose_then_step_then_fallback():
    model = ScriptedChatModel(
        script={
            "ExploreStep": ["Exploring."],
            "PresentStep": ["Presenting."],
            "summary": ["A summary."],
            "*": ["Fallback."],
        }
    )
    explore = await model.ainvoke("a", config=reply_config("ExploreStep"))
    summary = await model.ainvoke("b", config=reply_config("ExploreStep", purpose="summary"))
    present = await model.ainvoke("c", config=reply_config("PresentStep"))
    other = await model.ainvoke("d", config=reply_config("BookStep"))
    assert [m.content for m in (explore, summary, present, other)] == [
        "Exploring.",
        "A summary.",
        "Presenting.",
        "Fallback.",
    ]


async def test_dict_script_without_a_matching_key():
    model = ScriptedChatModel(script={"ExploreStep": ["x"], "summary": []})
    with pytest.raises(RuntimeError) as error:
        await model.ainvoke("hi", config=reply_config("BookStep"))
    assert str(error.value) == (
        "ScriptedChatModel has no replies for step 'BookStep' (purpose 'reply'); the script's "
        "keys are 'ExploreStep', 'summary'. Add a list under 'BookStep' or a '*' fallback."
    )


async def test_running_out_names_the_key_the_call_and_the_last_human_message():
    model = ScriptedChatModel(script={"ExploreStep": ["One.", "Two."]})
    config = reply_config("ExploreStep")
    await model.ainvoke("hi", config=config)
    await model.ainvoke("more", config=config)
    messages = [HumanMessage("find a hotel"), AIMessage("Found."), HumanMessage("book it")]
    with pytest.raises(RuntimeError) as error:
        await model.ainvoke(messages, config=config)
    assert str(error.value) == (
        "ScriptedChatModel ran out of replies for 'ExploreStep': 2 were scripted and call 3 "
        "has none left. Last human message: 'book it'. Add a reply to the script."
    )


async def test_running_out_of_a_list_script_names_the_step():
    model = ScriptedChatModel(script=["Only."])
    await model.ainvoke("hi")
    with pytest.raises(RuntimeError) as error:
        await model.ainvoke("again", config=reply_config("PresentStep"))
    assert str(error.value) == (
        "ScriptedChatModel ran out of replies in step 'PresentStep': 1 was scripted and call 2 "
        "has none left. Last human message: 'again'. Add a reply to the script."
    )
    with pytest.raises(RuntimeError) as error:
        await ScriptedChatModel(script={"*": []}).ainvoke(
            [SystemMessage("Summarise.")], config=reply_config("ExploreStep", "summary")
        )
    assert str(error.value) == (
        "ScriptedChatModel ran out of replies for '*' (step 'ExploreStep'): 0 were scripted "
        "and call 1 has none left. No human message was sent. Add a reply to the script."
    )


# -- policies -------------------------------------------------------------------------------


async def test_sync_policy_sees_messages_and_tool_names():
    def policy(messages: list[BaseMessage], tool_names: list[str]) -> str | AIMessage:
        if isinstance(messages[-1], ToolMessage):
            return f"Result: {messages[-1].content}"
        if "search_hotels" in tool_names:
            return tool_call("search_hotels", city=messages[-1].text)
        return "No tools."

    model = ScriptedChatModel(policy=policy)
    assert (await model.ainvoke("Paris")).content == "No tools."
    bound = model.bind_tools([search_hotels])
    first = await bound.ainvoke("Paris")
    assert first.tool_calls == [call("search_hotels", {"city": "Paris"}, "call_1")]
    result = ToolMessage("3 hotels", tool_call_id="call_1")
    done = await bound.ainvoke([HumanMessage("Paris"), first, result])
    assert done.content == "Result: 3 hotels"


async def test_async_policy_can_read_the_current_request():
    async def policy(messages, tool_names):
        return f"step {model.requests[-1].metadata['picoflow_step']}"

    model = ScriptedChatModel(policy=policy)
    reply = await model.ainvoke("hi", config=reply_config("ExploreStep"))
    assert reply.content == "step ExploreStep"


async def test_policy_returning_something_else():
    model = ScriptedChatModel(policy=lambda messages, tool_names: 42)
    with pytest.raises(TypeError) as error:
        await model.ainvoke("hi")
    assert str(error.value) == (
        "ScriptedChatModel policy returned int; return a str or an AIMessage (see text(), "
        "tool_call() and tool_calls())."
    )


def test_async_policy_called_synchronously():
    async def policy(messages, tool_names):
        return "never"

    with pytest.raises(TypeError) as error:
        ScriptedChatModel(policy=policy).invoke("hi")
    assert str(error.value) == (
        "ScriptedChatModel has an async policy but was called synchronously; call it with "
        "ainvoke()/astream(), or pass a sync function as policy."
    )


# -- the record, tools and ids --------------------------------------------------------------


async def test_bind_tools_copies_share_the_record_script_and_ids():
    model = ScriptedChatModel(
        script=[
            tool_call("search_hotels", city="Paris"),
            tool_calls(("book_hotel", {"hotel_id": "h1", "nights": 2}), ("search_hotels", {})),
            "Done.",
        ]
    )
    explore = model.bind_tools([search_hotels])
    book = model.bind_tools([search_hotels, book_hotel], tool_choice="auto")
    first = await explore.ainvoke("Paris")
    second = await book.ainvoke("Book h1")
    third = await model.ainvoke("Thanks")
    assert first.tool_calls == [call("search_hotels", {"city": "Paris"}, "call_1")]
    assert second.tool_calls == [
        call("book_hotel", {"hotel_id": "h1", "nights": 2}, "call_2"),
        call("search_hotels", {}, "call_3"),
    ]
    assert third.content == "Done."
    assert [r.tool_names for r in model.requests] == [
        ["search_hotels"],
        ["search_hotels", "book_hotel"],
        [],
    ]
    assert explore.requests is model.requests


async def test_existing_tool_call_ids_are_kept_and_still_counted():
    given_id = AIMessage("", tool_calls=[call("search_hotels", {}, "mine")])
    model = ScriptedChatModel(script=[given_id, tool_call("search_hotels")])
    assert (await model.ainvoke("a")).tool_calls[0]["id"] == "mine"
    assert (await model.ainvoke("b")).tool_calls[0]["id"] == "call_2"


async def test_bind_tools_accepts_every_tool_form_as_openai_schemas():
    class Weather(BaseModel):
        """Weather in a city."""

        city: str

    def forecast(city: str, days: int = 1) -> str:
        """Forecast the weather."""
        return city

    raw = {
        "type": "function",
        "function": {"name": "ping", "description": "Ping.", "parameters": {"type": "object"}},
    }
    model = ScriptedChatModel(script=["ok"])
    await model.bind_tools([search_hotels, raw, Weather, forecast]).ainvoke("hi")
    (request,) = model.requests
    assert request.tool_names == ["search_hotels", "ping", "Weather", "forecast"]
    assert request.tools[0] == {
        "type": "function",
        "function": {
            "name": "search_hotels",
            "description": "Search hotels in a city.",
            "parameters": {
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
                "type": "object",
            },
        },
    }
    assert request.tools[1] == raw


async def test_request_records_metadata_tags_and_copies_of_messages():
    model = ScriptedChatModel(script=["a", "b"])
    messages = [SystemMessage("You help."), HumanMessage("hi")]
    await model.bind_tools([search_hotels]).ainvoke(messages, config=reply_config("ExploreStep"))
    messages[1].content = "changed later"
    assert model.requests[0] == ScriptedRequest(
        messages=[SystemMessage("You help."), HumanMessage("hi")],
        tool_names=["search_hotels"],
        tools=model.requests[0].tools,
        metadata=reply_config("ExploreStep")["metadata"],
        tags=["picoflow"],
    )
    await model.ainvoke("no config")
    assert (model.requests[1].metadata, model.requests[1].tags) == ({}, [])
    with pytest.raises(AttributeError):
        model.requests[0].tags = []


async def test_requests_stay_snapshots_when_the_history_changes_in_place():
    """Unchanged messages are copied once; a message changed since its copy is copied anew."""
    model = ScriptedChatModel(policy=lambda messages, tools: "ok")
    history: list[BaseMessage] = [SystemMessage("You help."), HumanMessage("hi")]
    await model.ainvoke(history)
    history.append(AIMessage("ok"))
    history.append(HumanMessage("again"))
    await model.ainvoke(history)
    history[1].content = "edited"
    history[3].additional_kwargs["note"] = "added in place"
    await model.ainvoke(history)

    first, second, third = (request.messages for request in model.requests)
    assert first == [SystemMessage("You help."), HumanMessage("hi")]
    assert second[1] == HumanMessage("hi") and second[3] == HumanMessage("again")
    assert third[1] == HumanMessage("edited")
    assert third[3] == HumanMessage("again", additional_kwargs={"note": "added in place"})
    assert second[0] is first[0] and third[0] is first[0]  # sent unchanged: one copy
    assert all(copy is not sent for copy, sent in zip(third, history, strict=True))


async def test_a_long_conversation_is_not_copied_again_on_every_call():
    """Each message is copied once, not on every call: the cost must not grow with the history."""
    model = ScriptedChatModel(policy=lambda messages, tools: "ok")
    history: list[BaseMessage] = [SystemMessage("You help.")]
    deep_copies = 0
    model_copy = BaseMessage.model_copy

    def counting_copy(self: BaseMessage, *args: Any, **kwargs: Any) -> BaseMessage:
        nonlocal deep_copies
        deep_copies += bool(kwargs.get("deep"))
        return model_copy(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(BaseMessage, "model_copy", counting_copy)
        for turn in range(30):
            history.append(HumanMessage(f"message {turn}"))
            history.append(await model.ainvoke(history))
    assert deep_copies == len(history) - 1  # the last reply was never sent
    assert [len(request.messages) for request in model.requests] == list(range(2, 61, 2))


async def test_past_its_limit_the_copy_cache_keeps_only_the_latest_call():
    """A long-lived model holds at most `limit` remembered copies; results stay the same."""
    model = ScriptedChatModel(policy=lambda messages, tools: "ok")
    model._record.snapshots = testing._Snapshots(limit=2)
    first = [SystemMessage("You help."), HumanMessage("one")]
    second = [HumanMessage("two"), HumanMessage("three")]
    for sent in (first, second, first):
        reply = await model.ainvoke(sent)
        assert reply.usage_metadata is not None
        assert reply.usage_metadata["input_tokens"] == count_tokens_approximately(sent)
    assert [request.messages for request in model.requests] == [first, second, first]
    assert len(model._record.snapshots._seen) == 2
    assert model.requests[2].messages[0] is not model.requests[0].messages[0]  # forgotten


@pytest.mark.parametrize("way", ["invoke", "stream", "ainvoke", "astream", "astream_events"])
async def test_metadata_is_recorded_on_every_path(way):
    model = ScriptedChatModel(script=[tool_call("search_hotels", city="Rome")])
    bound = model.bind_tools([search_hotels])
    config = reply_config("ExploreStep", "reply")
    if way == "invoke":
        bound.invoke("hi", config=config)
    elif way == "stream":
        list(bound.stream("hi", config=config))
    elif way == "ainvoke":
        await bound.ainvoke("hi", config=config)
    elif way == "astream":
        await aggregate(bound.astream("hi", config=config))
    else:
        [e async for e in bound.astream_events("hi", config=config, version="v2")]
    assert model.requests[0].metadata == config["metadata"]
    assert model.requests[0].tags == ["picoflow"]


async def test_direct_agenerate_without_a_run_manager():
    model = ScriptedChatModel(script=["Direct."])
    result = await model._agenerate([HumanMessage("hi")])
    assert result.generations[0].message.content == "Direct."
    assert model.requests[0].metadata == {}


# -- usage ----------------------------------------------------------------------------------


async def test_usage_is_the_approximate_token_count():
    model = ScriptedChatModel(script=["Three words here.", tool_call("search_hotels", city="X")])
    sent = [SystemMessage("Be brief."), HumanMessage("hello")]
    for _ in range(2):
        reply = await model.ainvoke(sent)
        without_usage = reply.model_copy(update={"usage_metadata": None, "id": None})
        inputs = count_tokens_approximately(sent)
        outputs = count_tokens_approximately([without_usage])
        assert reply.usage_metadata == {
            "input_tokens": inputs,
            "output_tokens": outputs,
            "total_tokens": inputs + outputs,
        }


# -- streaming ------------------------------------------------------------------------------

REPLIES = [
    text("Three hotels match your search."),
    tool_call("search_hotels", city="Paris"),
    tool_calls(("search_hotels", {"city": "Rome"}), ("book_hotel", {"hotel_id": "h", "nights": 3})),
    tool_calls(("book_hotel", {"hotel_id": "h2", "nights": 1}), content="Booking now. "),
]


@pytest.mark.parametrize("reply", REPLIES, ids=["text", "call", "parallel", "text+call"])
async def test_streaming_aggregates_to_the_invoked_reply(reply):
    invoked = await ScriptedChatModel(script=[reply]).bind_tools([search_hotels]).ainvoke("hi")
    streamer = ScriptedChatModel(script=[reply]).bind_tools([search_hotels])
    chunks = [chunk async for chunk in streamer.astream("hi")]
    streamed = await aggregate(_replay(chunks))
    assert streamed.content == invoked.content
    assert streamed.tool_calls == invoked.tool_calls
    assert streamed.usage_metadata == invoked.usage_metadata
    assert [c.usage_metadata is not None for c in chunks] == [False] * (len(chunks) - 1) + [True]


async def _replay(chunks):
    for chunk in chunks:
        yield chunk


async def test_stream_cuts_text_into_words_and_arguments_into_pieces():
    reply = tool_calls(("search_hotels", {"city": "Paris"}), content="Let me look.")
    chunks = [c async for c in ScriptedChatModel(script=[reply]).astream("hi")]
    assert [c.content for c in chunks] == ["Let ", "me ", "look.", "", "", ""]
    pieces = [p for c in chunks for p in c.tool_call_chunks]
    assert pieces == [
        {
            "name": "search_hotels",
            "args": '{"city":',
            "id": "call_1",
            "index": 0,
            "type": "tool_call_chunk",
        },
        {"name": None, "args": ' "Paris"}', "id": None, "index": 0, "type": "tool_call_chunk"},
    ]
    assert chunks[-1].chunk_position == "last"


async def test_astream_events_carry_tool_calls():
    model = ScriptedChatModel(script=[tool_call("search_hotels", city="Oslo")])
    events = [
        event
        async for event in model.bind_tools([search_hotels]).astream_events("hi", version="v2")
    ]
    kinds = [event["event"] for event in events]
    assert kinds[0] == "on_chat_model_start"
    assert kinds[-1] == "on_chat_model_end"
    assert kinds.count("on_chat_model_stream") == 3
    output = events[-1]["data"]["output"]
    assert output.tool_calls == [call("search_hotels", {"city": "Oslo"}, "call_1")]


@given(
    content=st.text(max_size=40),
    args=st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=3),
)
def test_sync_stream_always_rebuilds_the_reply(content, args):
    reply = tool_calls(("search_hotels", args), content=content)
    invoked = ScriptedChatModel(script=[reply]).invoke("hi")
    chunks = list(ScriptedChatModel(script=[reply]).stream("hi"))
    streamed = chunks[0]
    for chunk in chunks[1:]:
        streamed = streamed + chunk
    assert streamed.content == invoked.content == content
    assert streamed.tool_calls == invoked.tool_calls
    assert streamed.usage_metadata == invoked.usage_metadata
