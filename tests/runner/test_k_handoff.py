"""K6: handoff(note) gives the conversation to a person; the model reads what they said."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage
from support.approval_flows import BookStep, booking_engine, booking_policy
from support.flows import transcript

from picoflow import Flow, FlowEngine, Step, handoff
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel

ACK = "Thank you, your message was passed on. A person will answer you here."


async def test_k6_handoff_stores_user_messages_without_a_model_call() -> None:
    model = ScriptedChatModel(policy=booking_policy)
    engine = booking_engine(model=model)
    first = await engine.run("BookingFlow", "I want a person please")
    assert first.message == "I've asked a person to take over; they will answer you here."
    session_id = first.session_id or ""
    doc = await engine.get_session(session_id)
    assert doc is not None
    assert doc["operator"]["note"] == "The guest asked: I want a person please"
    calls = len(model.requests)

    held = await engine.run("BookingFlow", "hello, anyone?", session_id)

    assert held.message == ACK
    assert len(model.requests) == calls
    reply = await engine.operator_reply(session_id, "Hi, I'm Sam. How can I help?", by="sam")
    assert (reply.success, reply.message) == (True, "Hi, I'm Sam. How can I help?")
    doc = await engine.get_session(session_id)
    assert doc is not None
    assert [(m["role"], m["text"], m["by"]) for m in doc["operator"]["messages"]] == [
        ("user", "hello, anyone?", None),
        ("operator", "Hi, I'm Sam. How can I help?", "sam"),
    ]
    assert len(model.requests) == calls


async def test_k6_return_to_flow_lets_the_model_read_the_operator() -> None:
    model = ScriptedChatModel(policy=booking_policy)
    engine = booking_engine(model=model)
    first = await engine.run("BookingFlow", "a person please")
    session_id = first.session_id or ""
    await engine.run("BookingFlow", "my room is cold", session_id)
    await engine.operator_reply(session_id, "I raised the heating.", by="sam")

    back = await engine.return_to_flow(session_id, note="Heating fixed.", by="sam")
    assert (back.success, back.message) == (
        True,
        "The conversation is back with the flow, at BookStep.",
    )
    doc = await engine.get_session(session_id)
    assert doc is not None and doc["operator"] is None

    after = await engine.run("BookingFlow", "thanks", session_id)
    assert after.message == "I have read what the operator wrote."
    sent = model.requests[-1].messages
    operator = [m for m in sent if isinstance(m, AIMessage) and m.name == "operator"]
    assert [(m.content, m.additional_kwargs["operator"]) for m in operator] == [
        ("I raised the heating.", "sam"),
        ("Heating fixed.", "sam"),
    ]
    assert transcript(doc, "BookStep")[-4:] == [
        ("ai", "I've asked a person to take over; they will answer you here."),
        ("human", "my room is cold"),
        ("ai", "I raised the heating."),
        ("ai", "Heating fixed."),
    ]


async def test_k6_operator_actions_need_a_handoff() -> None:
    engine = booking_engine()
    first = await engine.run("BookingFlow", "hello")
    session_id = first.session_id or ""

    refused = await engine.operator_reply(session_id, "Hi", by="sam")
    assert (refused.success, refused.error, refused.message) == (
        False,
        "NotInHandoff",
        f"Session '{session_id}' is not handed off to an operator; a step hands it over by "
        "returning handoff(note).",
    )
    empty = await engine.operator_reply(session_id, "  ", by="sam")
    assert (empty.error, empty.message) == (
        "InvalidRequest",
        "The operator's reply is empty; send the text.",
    )
    back = await engine.return_to_flow(session_id)
    assert back.error == "NotInHandoff"


def test_k6_handoff_takes_text() -> None:
    assert handoff("why", reply="hold on").note == "why"
    with pytest.raises(TypeError) as raised:
        handoff(3)  # type: ignore[arg-type]
    assert str(raised.value) == "handoff(note=...) takes a str or None, got int."


async def test_k6_return_to_another_step_brings_the_operator_exchange_along() -> None:
    class AfterStep(Step):
        def get_prompt(self) -> str:
            return "Follow up."

    model = ScriptedChatModel(policy=booking_policy)

    class TwoStepFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [BookStep(self), AfterStep(self)]

    engine = FlowEngine(flows=[TwoStepFlow], store=MemoryStore())
    first = await engine.run("TwoStepFlow", "a person please")
    session_id = first.session_id or ""
    await engine.run("TwoStepFlow", "my room is cold", session_id)
    await engine.operator_reply(session_id, "Fixed.", by="sam")

    back = await engine.return_to_flow(session_id, step="AfterStep", note="Heating on.", by="sam")

    assert (back.success, back.step) == (True, "AfterStep")
    doc = await engine.get_session(session_id)
    assert doc is not None
    assert transcript(doc, "AfterStep") == [
        ("human", "my room is cold"),
        ("ai", "Fixed."),
        ("ai", "Heating on."),
    ]
    assert doc["sequence"] == ["BookStep", "AfterStep"]
