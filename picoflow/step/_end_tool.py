"""The built-in end tool (U2): `terminate_session`, or `end_chat` as G2 PicoFlow apps call it.

In PicoFlow the terminal step defines the tool, and every step that offers an exit lists it and
routes it to the terminal step itself. Here a step calls `use_end_tool()` and the tool comes
with it: calling it moves to the flow's `EndStep` with the model's `prompt` (the closing
instruction EndStep's model follows), or with the fixed prompt given to `use_end_tool`, which
is what G2 handlers that always pass their own closing text do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import Field

from picoflow.errors import FlowDefinitionError
from picoflow.tools import ToolSpec, collect_tools, tool
from picoflow.transitions import ToolResult, go

if TYPE_CHECKING:
    from picoflow.step import Step

__all__ = ["END_TOOL_NAMES", "EndTool", "end_tool_entries", "check_end_tool", "end_tool_of"]

END_TOOL_NAMES = ("terminate_session", "end_chat")

_PROMPT = Annotated[
    str,
    Field(
        description="What the closing message should say, as an instruction, e.g. 'Thank the "
        "user and say goodbye.'"
    ),
]


@dataclass(frozen=True, slots=True)
class EndTool:
    """What `Step.use_end_tool` asked for: the tool's name and an optional fixed prompt."""

    name: str
    prompt: str | None


class _Tools:
    """The end tool under both its names; a step offers the one it asked for."""

    def __init__(self, step: Step, fixed: str | None) -> None:
        self._step = step
        self._fixed = fixed

    @tool
    def terminate_session(self, prompt: _PROMPT = "") -> ToolResult:
        """End the conversation. Call it only when the user clearly wants to stop."""
        return self._end(prompt)

    @tool("end_chat")
    def end_chat(self, prompt: _PROMPT = "") -> ToolResult:
        """End the conversation. Call it only when the user clearly wants to stop."""
        return self._end(prompt)

    def _end(self, prompt: str) -> ToolResult:
        terminal = go(_terminal(self._step))
        closing = self._fixed if self._fixed is not None else prompt
        return terminal.with_prompt(closing) if closing and closing.strip() else terminal


_SPECS = {spec.name: spec for spec in collect_tools(_Tools)}


def end_tool_of(step: Step, name: str, prompt: str | None) -> EndTool:
    """Check `use_end_tool`'s arguments at the call (STYLE rule 2)."""
    where = f"{step.name}.use_end_tool"
    if name not in END_TOOL_NAMES:
        raise ValueError(
            f"{where}({name!r}): the end tool is called 'terminate_session' or, as in "
            "second-generation PicoFlow apps, 'end_chat'. Pass one of those, or write your own "
            "@tool returning go(EndStep)."
        )
    if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
        raise ValueError(
            f"{where}(prompt={prompt!r}): the fixed closing prompt must be a non-empty string; "
            "omit it to let the model's prompt argument say how to close."
        )
    return EndTool(name, prompt)


def end_tool_entries(step: Step) -> list[tuple[ToolSpec, Callable[..., Any]]]:
    """The end tool a step offers (none unless it called `use_end_tool`)."""
    chosen: EndTool | None = step._end_tool
    if chosen is None:
        return []
    spec = _SPECS[chosen.name]
    return [(spec, getattr(_Tools(step, chosen.prompt), spec.method_name))]


def check_end_tool(step: Step) -> str | None:
    """The end tool's name, once the flow is known to have a terminal step (F5)."""
    chosen: EndTool | None = step._end_tool
    if chosen is None:
        return None
    _terminal(step)
    return chosen.name


def _terminal(step: Step) -> type[Step]:
    for registered in step.flow.steps.values():
        # EndStep by its place in the class tree: picoflow.step imports this module
        if any(
            c.__name__ == "EndStep" and c.__module__ == "picoflow.step"
            for c in type(registered).__mro__
        ):
            return type(registered)
    name = step._end_tool.name if step._end_tool is not None else END_TOOL_NAMES[0]
    raise FlowDefinitionError(
        f"{step.flow.name}.{step.name} offers the end tool '{name}', but {step.flow.name} "
        "registers no EndStep to end in. Add EndStep(self) (or a subclass) to define_steps()."
    )
