"""The rules behind the offline demo model, one module per step.

``respond(messages, tool_names)`` is the whole interface: it reads the request like an LLM
(prompt, memory, exchange, bound tools) and returns the reply or the tool calls. The bound tools
tell it which step is asking; no tools means the closing line, or a summary request.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from demo.hotel.offline import closing, compare, explore, present
from demo.hotel.offline.conversation import Conversation
from demo.hotel.offline.reply import call, say
from demo.hotel.offline.summary import is_summary_request, summarize
from demo.hotel.offline.usual import wants_to_be_forgotten

__all__ = ["respond"]

_STEPS = (
    ("capture_choices", explore.decide),
    ("generate_comparison", compare.decide),
    ("go_compare", present.decide),
)


def respond(messages: Sequence[BaseMessage], tool_names: Sequence[str]) -> AIMessage:
    """The offline model's answer to one request."""
    if is_summary_request(messages, tool_names):
        return say(summarize(messages))
    conversation = Conversation.read(messages, tool_names)
    if not tool_names:
        return closing.decide(conversation)
    if _asks_to_be_forgotten(conversation):
        return call("forget_guest")
    for marker, decide in _STEPS:
        if marker in conversation.tools:
            return decide(conversation)
    return say("Sorry, I can't help with that here.")


def _asks_to_be_forgotten(conversation: Conversation) -> bool:
    """The guest's new message asks to be forgotten, in any step that can forget them."""
    last = conversation.messages[-1] if conversation.messages else None
    return (
        "forget_guest" in conversation.tools
        and isinstance(last, HumanMessage)
        and wants_to_be_forgotten(conversation.guest_text())
    )
