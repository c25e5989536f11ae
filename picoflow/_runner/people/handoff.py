"""Handoff to an operator (K6): a person answers in the step's place until they give it back.

`handoff(note)` is a transition: the exchange that led to it is stored, the session gets an
`operator` record, and from then on a user message is stored in the step's namespace and
acknowledged without a model call. The operator's replies go into the same namespace as AI
messages named "operator" (`additional_kwargs["operator"]` holds who wrote them), so once the
conversation is given back (`return_to_flow`) the model reads what the person said, marked as
theirs.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from picoflow._internal.people_records import operator_of
from picoflow._internal.state import now_iso
from picoflow.flow import Flow
from picoflow.step import Step
from picoflow.transitions import ToolResult

__all__ = [
    "DEFAULT_HANDOFF_REPLY",
    "OPERATOR_ACK",
    "begin_handoff",
    "hold_for_operator",
    "add_operator_reply",
    "give_back",
]

DEFAULT_HANDOFF_REPLY = "I've asked a person to take over; they will answer you here."
OPERATOR_ACK = "Thank you, your message was passed on. A person will answer you here."
OPERATOR_NAME = "operator"


def begin_handoff(flow: Flow, source: Step, transition: ToolResult) -> str:
    """Put the session in operator mode; return the reply the user reads now."""
    text = transition.text or DEFAULT_HANDOFF_REPLY
    flow._session.people["operator"] = {
        "since": now_iso(),
        "note": transition.note,
        "step": source.name,
        "messages": [],
    }
    source.get_messages().append(
        AIMessage(text, id=source.gen_message_id(), additional_kwargs={"direct": True})
    )
    return text


def hold_for_operator(flow: Flow, message: str) -> str:
    """A user message in operator mode: stored where the operator and the model will read it."""
    step = flow.current_step
    stored = HumanMessage(message, id=step.gen_message_id())
    step.get_messages().append(stored)
    _log(flow, "user", stored, None)
    return OPERATOR_ACK


def add_operator_reply(flow: Flow, text: str, by: str | None) -> dict[str, Any]:
    """The operator answers the user; returns the entry recorded for the operator page."""
    step = flow.current_step
    stored = _operator_message(step, text, by)
    step.get_messages().append(stored)
    return _log(flow, OPERATOR_NAME, stored, by)


async def give_back(
    flow: Flow, step: type[Step] | str | None, note: str | None, by: str | None
) -> str:
    """End operator mode, optionally on another step; return the step the flow continues at.

    The messages of the handoff go with the conversation: a destination with another namespace
    gets a copy of them, so its model reads what the person said too.
    """
    operator = operator_of(flow._session) or {}
    source = flow.current_step
    handoff_messages = _since_handoff(source, operator)
    flow._session.people["operator"] = None
    if step is not None:
        await flow.goto(step)
    destination = flow.current_step
    if destination.namespace != source.namespace:
        destination.get_messages().extend(
            m.model_copy(update={"id": destination.gen_message_id()}) for m in handoff_messages
        )
    if note:
        marked = _operator_message(destination, note, by)
        marked.additional_kwargs["operator_note"] = True
        destination.get_messages().append(marked)
    return destination.name


def _operator_message(step: Step, text: str, by: str | None) -> AIMessage:
    return AIMessage(
        text,
        name=OPERATOR_NAME,
        id=step.gen_message_id(),
        additional_kwargs={OPERATOR_NAME: by or OPERATOR_NAME},
    )


def _since_handoff(step: Step, operator: dict[str, Any]) -> list[BaseMessage]:
    """The user's and operator's messages stored since the handoff began."""
    ids = {entry.get("id") for entry in operator.get("messages") or []}
    return [m for m in step.get_messages()[1:] if m.id in ids]


def _log(flow: Flow, role: str, message: BaseMessage, by: str | None) -> dict[str, Any]:
    operator = operator_of(flow._session)
    entry = {"role": role, "text": str(message.text), "by": by, "at": now_iso(), "id": message.id}
    if operator is not None:
        operator.setdefault("messages", []).append(entry)
    return entry
