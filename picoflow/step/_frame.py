"""The run in progress in this task: the turn itself, or a nested run (V2).

A leaf module, so that `Flow.get_executing_step` can read it without importing the runner.
Each child task of `run_steps` has its own value; `run_step` reads it to know its depth.
`RunFrame` lives here too, so the step layer names the runner's frame without importing it.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from langchain_core.messages import BaseMessage

if TYPE_CHECKING:
    from picoflow.step import Step

__all__ = ["FRAME", "RunFrame"]


@dataclass(slots=True)
class RunFrame:
    """One step loop: the turn itself (depth 0) or a nested run of a child step (V2).

    A nested run (depth > 0) must not move the cursor or end the session.

    `scratch` holds what only the next request of this step sees and the session never keeps:
    a reply that was not accepted (V4 validation, V5 `stay`) and the feedback on it.

    `fallback` is the model `on_llm_error` chose with `retry_with_model` (D4): every later call
    of this run's step makes one attempt on it, and a second fallback is refused.
    """

    step: Step
    depth: int = 0
    parent: str | None = None
    scratch: list[BaseMessage] = field(default_factory=list)
    fallback: Any = None


FRAME: ContextVar[RunFrame | None] = ContextVar("picoflow_run_frame", default=None)
