"""M1-M3 and M7: namespaces, the system slot, summary configuration, the memory block."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from support.flows import Plain, engine_for, make_flow

from picoflow import Step, SummaryConfig
from picoflow.memory import Memory, Namespace, request_messages, validate_namespace
from picoflow.testing import ScriptedChatModel


@pytest.mark.parametrize("name", ["a", "hotel-explore", "Step_2", "x" * 128])
def test_m1_valid_namespaces(name: str) -> None:
    assert validate_namespace(name) == name


@pytest.mark.parametrize("name", ["", "1abc", "-a", "a b", "a.b", "$a", "x" * 129, None, 3])
def test_m1_invalid_namespaces_raise_value_error(name: object) -> None:
    with pytest.raises(ValueError) as info:
        validate_namespace(name)
    assert str(info.value) == (
        f"Invalid memory namespace {name!r}: a namespace starts with a letter, then letters, "
        "digits, '_' or '-', at most 128 characters (e.g. 'hotel-explore')."
    )


@pytest.mark.parametrize("name", ["__proto__", "constructor", "prototype"])
def test_m1_reserved_namespaces(name: str) -> None:
    with pytest.raises(ValueError, match="are reserved"):
        Plain(make_flow(lambda f: [])()).use_memory(name)


async def test_m2_system_slot_holds_the_last_prompt_and_is_index_zero() -> None:
    model = ScriptedChatModel(script=["one", "two"])

    class Slot(Step):
        def get_prompt(self) -> str:
            return f"turn prompt {len(self.get_messages())}"

    engine = engine_for(make_flow(lambda f: [Slot(f)], model=model))
    first = await engine.run("F", "hi")
    await engine.run("F", "again", session_id=first.session_id)
    doc = await engine.get_session(first.session_id)
    messages = doc["memory"]["Slot"]["messages"]
    assert [m["type"] for m in messages] == ["system", "human", "ai", "human", "ai"]
    assert messages[0]["data"]["content"] == "turn prompt 4"


async def test_m2_slot_is_rebuilt_from_the_prompt_before_every_call_and_kept_if_unchanged() -> None:
    """M2: the stored slot always reads as the last prompt, even when a save reuses its form."""
    prompts = iter(["same", "same", "changed", "changed", "same"])
    seen: list[str] = []
    model = ScriptedChatModel(
        policy=lambda messages, tools: seen.append(messages[0].content) or "ok"
    )

    class Slot(Step):
        def get_prompt(self) -> str:
            return next(prompts)

    engine = engine_for(make_flow(lambda f: [Slot(f)], model=model))
    session_id = None
    stored_slots = []
    for text in ["a", "b", "c", "d", "e"]:
        result = await engine.run("F", text, session_id=session_id)
        session_id = result.session_id
        doc = await engine.get_session(session_id)
        stored_slots.append(doc["memory"]["Slot"]["messages"][0]["data"])
    assert seen == ["same", "same", "changed", "changed", "same"]
    assert [slot["content"] for slot in stored_slots] == seen
    ids = [slot["id"] for slot in stored_slots]
    assert ids[0] == ids[1] and ids[2] == ids[3]  # an unchanged prompt keeps its message
    assert len({ids[0], ids[2], ids[4]}) == 3  # a changed prompt is a new message
    assert all(i.startswith("Slot|") for i in ids)  # T5


def test_m3_defaults_and_chaining() -> None:
    memory = Memory()
    assert memory.summary_config == SummaryConfig(16, 8)
    same = memory.set_summary_model("openai:gpt-4o-mini").set_summary_config(
        min_messages=8, recent_messages=4
    )
    assert same is memory and memory.enable_summary("notes") is memory
    assert memory.summary_config.min_messages == 8 and memory.enabled_namespaces == ["notes"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_messages": 7}, "min_messages must be an integer of at least 8, got 7."),
        ({"min_messages": 8.5}, "min_messages must be an integer of at least 8, got 8.5."),
        ({"min_messages": True}, "min_messages must be an integer of at least 8, got True."),
        (
            {"min_messages": 10, "recent_messages": 9},
            "recent_messages must be an integer from 1 to min_messages - 2 (8), got 9.",
        ),
        (
            {"recent_messages": 0},
            "recent_messages must be an integer from 1 to min_messages - 2 (14), got 0.",
        ),
        ({"max_tokens": 0}, "max_tokens must be a positive integer, got 0."),
        ({"whole_turns": "yes"}, "whole_turns must be True or False, got 'yes'."),
    ],
)
def test_m3_invalid_config_raises_value_error_at_the_call(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError) as info:
        Memory().set_summary_config(**kwargs)
    assert str(info.value) == message


def test_m7_summary_goes_into_the_request_not_the_history() -> None:
    space = Namespace(messages=[SystemMessage(""), HumanMessage("hi"), AIMessage("hello")])
    space.summary = "User wants Portland, 2 nights."
    request = request_messages(space, SystemMessage("Prompt"))
    assert [(m.type, m.content) for m in request] == [
        ("system", "Prompt"),
        ("system", "Conversation memory for this step:\nUser wants Portland, 2 nights."),
        ("human", "hi"),
        ("ai", "hello"),
    ]
    assert len(space.messages) == 3
    space.summary = None
    assert len(request_messages(space, SystemMessage("Prompt"))) == 3
