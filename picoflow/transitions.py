"""What a tool handler returns: stay, go to another step, answer directly or finish (R2-R5, V7).

A transition is a *value*, not a call: the handler returns it and the turn loop applies it after
every tool call of the model response has its result (pipecat-flows' habit), so a handler can
never leave a tool call unanswered or move the cursor half-way through a response.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.messages import AIMessage, BaseMessage

from picoflow.models import ModelLike, ModelSpec, parse_model

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from picoflow.step import Step

__all__ = [
    "ToolResult",
    "go",
    "stay",
    "direct",
    "direct_to",
    "finish",
    "handoff",
    "RetryWithModel",
    "retry_with_model",
]

TransitionKind = Literal["stay", "go", "direct", "finish", "handoff"]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """An immutable transition; each `with_*` builder returns a new one.

    Build it with `go`, `stay`, `direct` or `finish` rather than directly.
    """

    kind: TransitionKind
    target: type[Step] | str | None = None
    feedback: str | None = None
    state: dict[str, Any] | None = None
    prompt: str | None = None
    message: BaseMessage | str | None = None
    content_type: str | None = None
    text: str | None = None
    note: str | None = None  # K6: what a `handoff` tells the operator

    def with_state(self, state: dict[str, Any]) -> ToolResult:
        """Save `state` on the destination (S2 rules) after it is entered."""
        return replace(self, state=dict(state))

    def with_prompt(self, prompt: str) -> ToolResult:
        """Store `prompt` as the destination's `_prompt` (what `Step.get_prompt()` returns)."""
        return replace(self, prompt=prompt)

    def with_message(self, message: BaseMessage | str) -> ToolResult:
        """Forward a message (text becomes a human message) to the destination's on_crossing."""
        return replace(self, message=message)

    def with_tool_feedback(self, feedback: str) -> ToolResult:
        """The tool-result text the model reads instead of "ok"."""
        return replace(self, feedback=feedback)

    def with_content_type(self, content_type: str) -> ToolResult:
        """The MIME type of the turn's reply (default text/plain)."""
        return replace(self, content_type=content_type)


def go(target: type[Step] | str) -> ToolResult:
    """Move to another step; its model answers in the same turn (R4)."""
    if isinstance(target, str):
        if not target.strip():
            raise ValueError("go() needs a Step class or a non-empty step name.")
        return ToolResult("go", target=target.strip())
    if not isinstance(target, type):
        raise TypeError(f"go() needs a Step class or a step name, got {target!r}.")
    return ToolResult("go", target=target)


def stay(feedback: str | None = None) -> ToolResult:
    """Stay in the step; its model is called again with `feedback` as the tool result (R3)."""
    return ToolResult("stay", feedback=feedback)


def direct(text: str) -> ToolResult:
    """Answer the user with `text` verbatim; no further model call this turn (R5)."""
    if not isinstance(text, str):
        raise TypeError(f"direct() needs the reply text as a str, got {type(text).__name__}.")
    return ToolResult("direct", text=text)


def direct_to(target: type[Step] | str, text: str) -> ToolResult:
    """Move to `target` and answer the user with `text` verbatim, with no model call (D4).

    The move is an ordinary `go` (`on_exit`, `on_enter` and a sequence entry when the cursor
    really moves; nothing when `target` is current); `text` is stored in the destination's
    namespace as a direct reply, and `target` takes the user's next message. PicoFlow's
    `directTo(Step, text)`; the same as `go(target).with_message(AIMessage(text, direct))`.
    """
    if not isinstance(text, str):
        raise TypeError(f"direct_to() needs the reply text as a str, got {type(text).__name__}.")
    return go(target).with_message(AIMessage(text, additional_kwargs={"direct": True}))


@dataclass(frozen=True, slots=True)
class RetryWithModel:
    """What `on_llm_error` returns to try the same step once more on another model (D4).

    Build it with `retry_with_model(spec)`.
    """

    model: ModelSpec | BaseChatModel


def retry_with_model(model: ModelLike) -> RetryWithModel:
    """From `on_llm_error`: carry on the failed step on `model`, for this turn only (D4).

    The step keeps its prompt, memory, tools and output schema; each of its model calls this
    turn (a tool follow-up too) makes one attempt on `model`, without retries. Later turns use
    the configured model again. A fallback that fails goes to `on_llm_error` once more, which
    may answer but not fall back a second time.

    Raises:
        FlowDefinitionError: `model` is not a model name, a `ModelSpec` or a chat model.
    """
    return RetryWithModel(parse_model(model, "retry_with_model"))


def finish(text: str | None = None) -> ToolResult:
    """End the session from this step: the turn's reply is `text`, and the session is completed.

    Without `text`, the step's model is called once more (with the tool results) and its answer
    is the closing reply. No `EndStep` is needed (V7); the cursor stays where it is.
    """
    if text is not None and not isinstance(text, str):
        raise TypeError(
            f"finish() takes the closing reply as a str (or nothing), got {type(text).__name__}."
        )
    return ToolResult("finish", text=text)


def handoff(note: str | None = None, *, reply: str | None = None) -> ToolResult:
    """Hand the conversation to a person (K6): no model answers until it is given back.

    `note` tells the operator why (shown where they pick up waiting sessions); `reply` is what
    the user reads now (default: that a person will answer here). The user's next messages are
    stored and acknowledged without a model call, until `engine.return_to_flow(...)`.
    """
    for label, value in (("note", note), ("reply", reply)):
        if value is not None and not isinstance(value, str):
            shown = type(value).__name__
            raise TypeError(f"handoff({label}=...) takes a str or None, got {shown}.")
    return ToolResult("handoff", note=note, text=reply)
