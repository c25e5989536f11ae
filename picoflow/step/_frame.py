"""The run in progress in this task: the turn itself, or a nested run (V2).

A leaf module, so that `Flow.get_executing_step` can read it without importing the runner.
Each child task of `run_steps` has its own value; `run_step` reads it to know its depth.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoflow._runner.turn import RunFrame

__all__ = ["FRAME"]

FRAME: ContextVar[RunFrame | None] = ContextVar("picoflow_run_frame", default=None)
