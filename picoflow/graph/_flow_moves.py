"""Moves that no step's own code shows: the built-in end tool (U2) and batch mode's `goto` (U8).

`picoflow.graph._moves` reads each step class; these two come from elsewhere. A step that called
`use_end_tool()` can move to the flow's EndStep through a tool it does not define, and a flow's
`spawn_steps()` may move the cursor of the coordinator's session (`await self.goto(Step)`),
which starts at the initial step. The graph draws both.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from picoflow.graph._moves import Move, _parse

if TYPE_CHECKING:
    from picoflow.flow import Flow

__all__ = ["flow_moves"]


def flow_moves(flow: Flow, initial: str, ends: list[str]) -> tuple[list[Move], list[str]]:
    """The end-tool and batch moves of a flow object, and notes on what could not be read.

    `ends` names the flow's EndSteps, in registry order (the end tool goes to the first).
    """
    moves: list[Move] = []
    notes: list[str] = []
    for source, step in flow.steps.items():
        chosen = step._end_tool
        if chosen is not None and ends:
            moves.append(Move(source, ends[0], chosen.name, "go"))
    owner = next(k for k in type(flow).__mro__ if "spawn_steps" in vars(k))
    if owner.__module__ == "picoflow.flow":  # Flow's own: it moves nothing (no cycle import)
        return moves, notes
    spawn = type(flow).spawn_steps
    tree = _parse(spawn)
    if tree is None:
        notes.append(
            f"{flow.name}.spawn_steps: its source cannot be read, so its moves are unknown."
        )
        return moves, notes
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_self_goto(node) and node.args:
            target = node.args[0]
            found = spawn.__globals__.get(target.id) if isinstance(target, ast.Name) else None
            name: str | None = getattr(found, "__name__", None)
            if isinstance(target, ast.Constant) and isinstance(target.value, str):
                name = target.value
            if name is None:
                notes.append(
                    f"{flow.name}.spawn_steps: a goto(...) names no step the graph can read."
                )
            else:
                moves.append(Move(initial, name, "spawn_steps", "go"))
    return moves, notes


def _is_self_goto(node: ast.Call) -> bool:
    func = node.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "goto"
        and isinstance(func.value, ast.Name)
        and func.value.id == "self"
    )
