"""What a step hears when the cursor arrives: `on_crossing`'s answer, checked (T3).

The hook may return a message, a plain str (heard as the user's message, as a forwarded str
is), or None. Anything else is a mistake in the flow's code, reported with what to return
instead of failing later on an attribute of the wrong object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from langchain_core.messages import BaseMessage, HumanMessage

from picoflow.errors import FlowDefinitionError

if TYPE_CHECKING:
    from picoflow.flow import Flow
    from picoflow.step import Step

__all__ = ["crossing_message"]


async def crossing_message(
    flow: Flow, step: Step, message: BaseMessage | None, prior_step: str | None
) -> BaseMessage | None:
    """Call `step.on_crossing(message, prior_step)` and return the message it decided on."""
    heard = await flow._call_hook(step.on_crossing, message, prior_step)
    if heard is None or isinstance(heard, BaseMessage):
        return heard
    if isinstance(heard, str):
        return HumanMessage(heard)
    raise FlowDefinitionError(
        f"{step.name}.on_crossing() returned a {type(heard).__name__}. Return a message (a str "
        "is sent as the user's), the forwarded message unchanged, or None to add nothing."
    )
