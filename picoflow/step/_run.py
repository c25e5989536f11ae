"""U3: `Step.run()` wraps a step's part of a turn; the default run is the runner's own.

The engine runs a step's part of a turn in two places: the step that takes the user's message
(`run_turn`) and each nested run of a child (`run_step`, V2). Both go through `run_part`: for a
step that does not override `run()`, the runner's body runs directly; otherwise the body is
set aside for this step and its `run()` is called. The default `Step.run()` (what an override's
``await super().run(message)`` reaches) takes the body set aside and runs it, once. A step
entered by `go` within a turn continues the turn's loop: its `run()` is not called again, as in
PicoFlow (its SynthesizerStep's override fires only when a turn starts there).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from picoflow._internal.abort import fail_turn

if TYPE_CHECKING:
    from picoflow.step import Step

__all__ = ["run_part", "default_run", "overrides_run", "marks_default_run"]

Body = Callable[[str | None], Awaitable[Any]]


@dataclass(slots=True)
class _Pending:
    step: Step
    body: Body
    result: Any = None
    ran: bool = False


_PENDING: ContextVar[_Pending | None] = ContextVar("picoflow_pending_run", default=None)


_DEFAULT = "__picoflow_default_run__"
F = TypeVar("F", bound=Callable[..., Any])


def marks_default_run(method: F) -> F:
    """Mark `Step.run` itself, so an override is told apart without importing Step here."""
    setattr(method, _DEFAULT, True)
    return method


def overrides_run(step: Step) -> bool:
    """Whether the step's class (or a base between it and Step) defines its own run()."""
    return not getattr(type(step).run, _DEFAULT, False)


async def run_part(step: Step, message: str | None, body: Body) -> Any:
    """Run `step`'s part of a turn through its `run()` when it overrides it (U3)."""
    if not overrides_run(step):
        return await body(message)
    pending = _Pending(step, body)
    token = _PENDING.set(pending)
    try:
        result = await step.run(message)
    finally:
        _PENDING.reset(token)
    if result is None and pending.ran:
        return pending.result  # an override that forgot `return super().run(...)`
    if result is None:
        raise fail_turn(
            TypeError(
                f"{step.name}.run() returned None without calling `await super().run(message)`. "
                "Return what super().run(message) returns, or a reply text of your own."
            )
        )
    return result


async def default_run(step: Step, message: str | None) -> Any:
    """What `Step.run()` does: the runner's part of the turn for this step, once (U3)."""
    pending = _PENDING.get()
    if pending is None or pending.step is not step:
        raise fail_turn(
            RuntimeError(
                f"{step.name}.run() was called outside its own part of a turn. The engine calls "
                "run() when the step takes the user's message or runs nested; to run another "
                "step, use `await self.run_step(OtherStep, message)`."
            )
        )
    if pending.ran:
        raise fail_turn(
            RuntimeError(
                f"{step.name}.run() called super().run() twice in one turn; the step's part of "
                "a turn runs once. Call it once and keep its result."
            )
        )
    pending.ran = True
    pending.result = await pending.body(message)
    return pending.result
