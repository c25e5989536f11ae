"""The rules behind the offline demo model, one module per step.

``respond(messages, tool_names)`` is the whole interface: it reads the request like an LLM
(prompt, memory, exchange, bound tools) and returns the reply or the tool calls. The bound tools
tell it which step is asking; no tools means the closing line, or a summary request.
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from demo.hotel.offline import closing, compare, explore, present
from demo.hotel.offline.conversation import Conversation
from demo.hotel.offline.reply import say
from demo.hotel.offline.summary import is_summary_request, summarize

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
    for marker, decide in _STEPS:
        if marker in conversation.tools:
            return decide(conversation)
    return say("Sorry, I can't help with that here.")
