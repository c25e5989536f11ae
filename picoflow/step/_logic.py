"""LogicStep: a step without a model, run the moment the cursor enters it (V1).

A logic step decides in code where the conversation goes next: it reads state and context,
saves state, and returns `go(...)`, `direct(text)` or `finish(...)`. The turn loop runs it in
the same turn right after its `on_enter`/`on_crossing`, and goes on to the next step, so a
chain of logic steps costs no model call. Each logic step run counts as one round of
`max_tool_rounds`, which is what stops a cycle of logic steps.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage

from picoflow.errors import FlowDefinitionError
from picoflow.step import Step
from picoflow.transitions import ToolResult

__all__ = ["LogicStep", "check_logic_result"]


class LogicStep(Step):
    """A model-free step: override `run_logic()` to route in code (V1).

    The message that reached the step (the user's text when the turn starts here, or what the
    previous step forwarded) is `self.incoming_message` while `run_logic()` runs; a `go(...)`
    without `.with_message(...)` forwards it to the destination. A logic step stores nothing in
    memory unless it answers with `direct`/`finish`.
    """

    incoming_message: BaseMessage | None = None

    async def run_logic(self) -> ToolResult:
        """Decide where to go: return `go(Step)`, `direct(text)` or `finish(text)`."""
        raise FlowDefinitionError(
            f"{self.name} is a LogicStep but does not override run_logic(). Define "
            "`async def run_logic(self) -> ToolResult` returning go(...), direct(...) or "
            "finish(...)."
        )

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """Pass the forwarded message on; a logic step needs no opener (it has no model)."""
        return message


def check_logic_result(step: LogicStep, result: Any) -> ToolResult:
    """The transition a logic step returned, or a FlowDefinitionError saying what to return."""
    if isinstance(result, ToolResult) and result.kind != "stay":
        if result.kind == "finish" and result.text is None:
            raise FlowDefinitionError(
                f"{step.name}.run_logic() returned finish() without a text; a logic step has "
                "no model to say a closing line. Pass the reply: finish('Thank you, goodbye.')."
            )
        return result
    if isinstance(result, ToolResult):
        raise FlowDefinitionError(
            f"{step.name}.run_logic() returned stay(); a logic step has no model to ask again. "
            "Return go(NextStep), direct(text) or finish(text)."
        )
    raise FlowDefinitionError(
        f"{step.name}.run_logic() returned {result!r}, which is not a transition. Return "
        "go(NextStep), direct(text) or finish(text)."
    )
