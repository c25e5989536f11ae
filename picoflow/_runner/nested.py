"""Nested runs (V2, V3): a step runs another step to completion inside the current turn.

`run_step(Child)` enters the child (`on_enter`), runs its own step loop in its own namespace
with its own tools, and leaves it (`on_exit`, always); the child's reply (text, or its V4
object) is the return value, and a `direct(text)` ends the child's run with that text. The
cursor never moves: a child that returns `go` or `finish` fails the turn, as does any other
failure inside a child, even when `run_step` was called from a tool handler (the R6 boundary
lets it through). `run_steps` runs several children concurrently; children that would write to
the same history (a shared namespace) run one after another instead, in the order given, so
their messages never interleave.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Sequence
from functools import partial
from typing import Any

from langchain_core.messages import HumanMessage

from picoflow._internal.abort import fail_turn
from picoflow._runner.loop import FRAME, run_loop
from picoflow._runner.turn import RunFrame, TurnContext, append_message
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.step import Step
from picoflow.step._logic import LogicStep
from picoflow.step._run import run_part

__all__ = ["NestedRuns", "FAILURE_POLICIES"]

FAILURE_POLICIES = ("atomic", "retain-successes")

Child = type[Step] | tuple[type[Step], str | None]


class NestedRuns:
    """What `Step.run_step`/`run_steps` call: the engine gives each turn's flow one of these."""

    def __init__(self, ctx: TurnContext) -> None:
        self._ctx = ctx

    async def call_tool(self, step: Step, name: str, args: dict[str, Any]) -> str:
        """Run one of `step`'s LangChain or MCP tools by name (see `Step.call_tool`)."""
        entries = self._ctx.extra_tools(step) if self._ctx.extra_tools is not None else []
        handlers = {spec.name: handler for spec, handler in entries}
        if name not in handlers:
            known = ", ".join(handlers) or "none"
            raise ValueError(
                f"{step.name} has no tool named {name!r} from use_tools(); it has: {known}. "
                "Call the step's own @tool methods directly."
            )
        result = handlers[name](**args)
        if inspect.isawaitable(result):
            result = await result
        return str(result)

    async def run_step(self, parent: Step, child: type[Step], message: str | None) -> Any:
        """Run `child` nested in the current turn; its reply is the result (V2)."""
        if message is not None and not isinstance(message, str):
            raise fail_turn(
                TypeError(
                    f"{parent.name}.run_step({getattr(child, '__name__', child)!s}, message=...) "
                    f"takes the message as a str (or None), got {type(message).__name__}."
                )
            )
        frame = _prepare(parent, [child])[0]
        return await _run_child(parent, frame, message, self._ctx)

    async def run_steps(
        self,
        parent: Step,
        children: Sequence[Child],
        max_concurrency: int | None = None,
        failure_policy: str = "atomic",
    ) -> list[Any]:
        """Run several children nested in the current turn; their replies, in order (V3)."""
        limit = _limit(parent, max_concurrency)
        if failure_policy not in FAILURE_POLICIES:
            raise fail_turn(
                ValueError(
                    f"{parent.name}.run_steps(failure_policy={failure_policy!r}): the policy is "
                    "'atomic' (a failing child fails the turn) or 'retain-successes' (its "
                    "exception takes its place in the results)."
                )
            )
        keep = failure_policy == "retain-successes"
        return await _run_steps(parent, children, self._ctx, limit, keep)


def _limit(parent: Step, value: Any) -> asyncio.Semaphore | None:
    """The semaphore of `run_steps(max_concurrency=...)`, checked at the call."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise fail_turn(
            ValueError(
                f"{parent.name}.run_steps(max_concurrency={value!r}): the cap is how many "
                "children run at once, an int of 1 or more (or None for no cap)."
            )
        )
    return asyncio.Semaphore(value)


async def _run_steps(
    parent: Step,
    children: Sequence[Child],
    ctx: TurnContext,
    limit: asyncio.Semaphore | None = None,
    keep: bool = False,
) -> list[Any]:
    if isinstance(children, (str, bytes)) or not isinstance(children, Sequence):
        raise fail_turn(
            TypeError(
                f"{parent.name}.run_steps() takes a list of step classes or (StepClass, "
                f"message) pairs, got {type(children).__name__}."
            )
        )
    pairs = [_pair(parent, item) for item in children]
    if not pairs:
        return []
    _refuse_repeats(parent, [cls for cls, _ in pairs])
    frames = _prepare(parent, [cls for cls, _ in pairs])
    runs = [(frame, message, ctx) for frame, (_, message) in zip(frames, pairs, strict=True)]
    if _share_history(parent, [frame.step for frame, _, _ in runs]):
        return [await _child(parent, frame, message, ctx, keep) for frame, message, ctx in runs]
    return await _concurrently(parent, runs, limit, keep)


async def _child(
    parent: Step,
    frame: RunFrame,
    message: str | None,
    ctx: TurnContext,
    keep: bool,
    *,
    record: bool = True,
) -> Any:
    """One child; with `keep` (retain-successes) its failure is its result, not the turn's."""
    if not keep:
        return await _run_child(parent, frame, message, ctx, record=record)
    try:
        return await _run_child(parent, frame, message, ctx, record=record)
    except Exception as exc:
        return exc


def _pair(parent: Step, item: Any) -> tuple[type[Step], str | None]:
    if isinstance(item, tuple) and len(item) == 2:
        cls, message = item
    else:
        cls, message = item, None
    if not (isinstance(cls, type) and issubclass(cls, Step)) or not (
        message is None or isinstance(message, str)
    ):
        raise fail_turn(
            TypeError(
                f"{parent.name}.run_steps() takes step classes or (StepClass, message) pairs "
                f"with a str message, got {item!r}."
            )
        )
    return cls, message


def _refuse_repeats(parent: Step, classes: list[type[Step]]) -> None:
    seen: set[type[Step]] = set()
    for cls in classes:
        if cls in seen:
            raise fail_turn(
                ValueError(
                    f"{parent.name}.run_steps() was given {cls.__name__} twice; a step has one "
                    "state and one history, so two runs of it at once would overwrite each "
                    f"other. Run it once, or call run_step({cls.__name__}) again after the "
                    "first run returns."
                )
            )
        seen.add(cls)


def _prepare(parent: Step, classes: list[type[Step]]) -> list[RunFrame]:
    """Check that nesting is possible here; one child frame per class."""
    flow = parent.flow
    outer = FRAME.get()
    depth = (outer.depth if outer is not None else 0) + 1
    if depth > flow.max_step_depth:
        raise fail_turn(
            FlowDefinitionError(
                f"{parent.name}.run_step({classes[0].__name__}) would nest {depth} runs deep; "
                f"{flow.name} allows {flow.max_step_depth} (max_step_depth). Check for a step "
                "that runs itself through its children, or raise max_step_depth on the flow."
            )
        )
    try:
        steps = [flow.get_step(cls) for cls in classes]
    except FlowDefinitionError as exc:
        raise fail_turn(exc) from None
    return [RunFrame(step, depth, parent.name) for step in steps]


def _share_history(parent: Step, steps: list[Step]) -> bool:
    namespaces = [step.namespace for step in steps]
    return len(set(namespaces)) < len(namespaces) or parent.namespace in namespaces


async def _run_child(
    parent: Step, frame: RunFrame, message: str | None, ctx: TurnContext, *, record: bool = True
) -> Any:
    """Enter, run and leave one child; any failure fails the turn (P3)."""
    flow, step = parent.flow, frame.step
    if record:
        _record(parent, frame)
    token = FRAME.set(frame)
    if ctx.emit is not None:
        ctx.emit("nested_start", {"step": step.name, "parent": parent.name, "depth": frame.depth})
    try:
        await flow._call_hook(step.on_enter)
        try:
            value = await run_part(step, message, partial(_child_body, flow, frame, ctx))
        finally:
            await flow._call_hook(step.on_exit)
    except BaseException as exc:
        fail_turn(exc)
        raise
    finally:
        FRAME.reset(token)
    if record:
        flow._session.record_step(parent.name, frame.depth)
    if ctx.emit is not None:
        ctx.emit("nested_end", {"step": step.name, "parent": parent.name, "depth": frame.depth})
    return value


async def _child_body(flow: Flow, frame: RunFrame, ctx: TurnContext, message: str | None) -> Any:
    """The runner's part of a nested run: the message, then the child's own loop (V2)."""
    step = frame.step
    if message and isinstance(step, LogicStep):
        step.incoming_message = HumanMessage(message)
    elif message:
        append_message(step, HumanMessage(message, id=step.gen_message_id()))
    return (await run_loop(flow, step, ctx, frame)).value


def _record(parent: Step, frame: RunFrame, *, returned: bool = False) -> None:
    """V2: a nested run is the child in `sequence` at its level, then the parent again."""
    parent.flow._session.record_step(frame.step.name, frame.depth + 1)
    if returned:
        parent.flow._session.record_step(parent.name, frame.depth)


async def _concurrently(
    parent: Step,
    runs: list[tuple[RunFrame, str | None, TurnContext]],
    limit: asyncio.Semaphore | None = None,
    keep: bool = False,
) -> list[Any]:
    """Run children as tasks; the first failure cancels the others and is raised (V3)."""

    async def capped(frame: RunFrame, message: str | None, ctx: TurnContext) -> Any:
        if limit is None:
            return await _child(parent, frame, message, ctx, keep, record=False)
        async with limit:
            return await _child(parent, frame, message, ctx, keep, record=False)

    tasks = [asyncio.ensure_future(capped(frame, message, ctx)) for frame, message, ctx in runs]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
    finally:
        pending = [task for task in tasks if not task.done()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
    failed = [task for task in tasks if not task.cancelled() and task.exception() is not None]
    if failed:
        raise failed[0].exception()  # type: ignore[misc]
    for frame, _, _ in runs:  # in the order given, whichever finished first
        _record(parent, frame, returned=True)
    return [task.result() for task in tasks]
