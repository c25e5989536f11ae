"""A picture of a flow: its steps and the moves between them, as a Mermaid flowchart.

    python -m picoflow.graph myapp.flows:ShopFlow
    python -m picoflow.graph myapp.flows:ShopFlow --session ID --store sqlite:///sessions.db

or `ShopFlow().graph()` in code. The moves are read from the code (see `picoflow._moves`):
the `go(...)` targets of each step's tools and hooks, `finish()`, and the steps `run_step` /
`run_steps` run nested, plus what a step declares in `moves_to` / `nested_steps`. The initial
step hangs off a `start` node; `EndStep`s and steps that can finish lead to an `end` node.
Logic steps are hexagons, steps run nested have a dashed border and are reached by dotted
arrows. Tools that need a person's approval (K1) and `handoff()` moves (K6) are dotted arrows
to a `person` node. With a session, the path it took is drawn over the flow: visited steps and
taken moves in green, numbered in order, and a move the code does not show as a red dotted
arrow.

Markdown viewers (GitHub, GitLab, VS Code, MkDocs with a plugin) render a ```mermaid block.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._flow_moves import flow_moves
from ._moves import Move, read_moves
from .errors import FlowDefinitionError
from .step import EndStep
from .tools import collect_tools

if TYPE_CHECKING:
    from .flow import Flow

__all__ = ["FlowGraph", "Move", "flow_graph", "draw", "main"]

START, END, PERSON = "__start__", "__end__", "__person__"
SOLID, DOTTED = "-->", "-.->"
TERMINAL = "    classDef terminal fill:#f1f3f5,stroke:#868e96"
LOGIC = "    classDef logic fill:#fff3bf,stroke:#e67700"
NESTED = "    classDef nested stroke-dasharray:5 3"
VISITED = "    classDef visited fill:#d3f9d8,stroke:#2b8a3e,stroke-width:2px"
CURRENT = "    classDef current fill:#d3f9d8,stroke:#2b8a3e,stroke-width:4px"
PEOPLE = "    classDef person fill:#e7f5ff,stroke:#1971c2"
TAKEN, UNSEEN = "stroke:#2b8a3e,stroke-width:3px", "stroke:#c92a2a,stroke-width:3px"


@dataclass(frozen=True, slots=True)
class FlowGraph:
    """What `draw` draws: the steps in registry order and every move read or declared.

    `notes` says what the code did not show (a computed `go` target, a step nothing reaches),
    so a missing arrow has a stated reason; they appear as `%%` comments in the Mermaid text.
    """

    flow: str
    steps: tuple[str, ...]
    initial: str
    logic_steps: frozenset[str]
    end_steps: frozenset[str]
    moves: tuple[Move, ...]
    notes: tuple[str, ...]
    approvals: tuple[tuple[str, str], ...] = ()  # K1: (step, tool) of tools needing approval

    def edges(self) -> set[tuple[str, str]]:
        """(from, to) of every drawn arrow: `__start__`, `__end__`, `__person__` for the ends."""
        drawn = {(START, self.initial)} | {(name, END) for name in self.end_steps}
        drawn |= {(step, PERSON) for step, _ in self.approvals}
        return drawn | {(m.source, _target(m)) for m in self.moves}


def flow_graph(flow: Flow) -> FlowGraph:
    """Read the steps and moves of a flow object (its `define_steps()` registry)."""
    steps = flow.steps
    moves: list[Move] = []
    notes: list[str] = []
    for name, step in steps.items():
        reading = read_moves(type(step), name)
        moves += reading.moves
        notes += reading.notes
    for move in moves:
        if move.target is not None and move.target not in steps:
            notes.append(f"{move.source}.{move.via}: {move.target} is not registered in "
                         f"{flow.name}.define_steps(), so the move is not drawn.")  # fmt: skip
    initial = _initial(flow)
    ends = [name for name, step in steps.items() if isinstance(step, EndStep)]
    extra_moves, extra_notes = flow_moves(flow, initial, ends)  # end tool (U2), spawn_steps (U8)
    moves += extra_moves
    notes += extra_notes
    reached = {m.target for m in moves} | {initial}
    notes += [
        f"{name}: no move to it was found in the code." for name in steps if name not in reached
    ]
    return FlowGraph(
        flow=flow.name,
        steps=tuple(steps),
        initial=initial,
        logic_steps=frozenset(n for n, s in steps.items() if _is_logic(type(s))),
        end_steps=frozenset(n for n, s in steps.items() if isinstance(s, EndStep)),
        moves=tuple(m for m in moves if m.target is None or m.target in steps),
        notes=tuple(notes),
        approvals=tuple(
            (name, spec.name)
            for name, step in steps.items()
            for spec in collect_tools(type(step))
            if spec.requires_approval
        ),
    )


def _target(move: Move) -> str:
    """Where a move's arrow points: a step, the end, or a person (K6 handoff)."""
    if move.kind == "handoff":
        return PERSON
    return move.target or END


def draw(flow: Flow, *, session: Mapping[str, Any] | None = None) -> str:
    """The flow as Mermaid flowchart text; with a session document, the path it took on top."""
    return to_mermaid(flow_graph(flow), session)


def _initial(flow: Flow) -> str:
    """The initial step's name; `initial_step()` may read a context a new flow lacks (F3)."""
    try:
        chosen = flow.initial_step()
    except Exception:  # the context it reads only exists in a session: the default is drawn
        chosen = None
    return chosen.__name__ if isinstance(chosen, type) else next(iter(flow.steps))


def _is_logic(step_class: type) -> bool:
    """A LogicStep (V1), told by its class name, so drawing needs nothing from the runner."""
    return any(klass.__name__ == "LogicStep" for klass in step_class.__mro__)


@dataclass(slots=True)
class _Edge:
    source: str
    target: str
    arrow: str
    labels: list[str] = field(default_factory=list)
    taken: list[int] = field(default_factory=list)
    unseen: bool = False

    def text(self) -> str:
        label = ", ".join(self.labels)
        if self.taken:
            moves = ", ".join(map(str, self.taken))
            label = f"{label}: {'moves' if len(self.taken) > 1 else 'move'} {moves}".lstrip(": ")
        if self.unseen:
            label += ": not in the code"
        return f"    {self.source} {self.arrow}{f'|{label}|' if label else ''} {self.target}"


def to_mermaid(graph: FlowGraph, session: Mapping[str, Any] | None = None) -> str:
    """Mermaid flowchart text for a graph, with a session's path drawn over it."""
    edges = _edges(graph)
    path = _overlay(graph, edges, session) if session is not None else None
    lines = ["flowchart TD", f"    %% {graph.flow}, drawn by picoflow.graph"]
    for note in graph.notes:  # wrapped, so the text reads well in a Markdown file too
        wrapped = textwrap.wrap(note, 88)
        lines += [f"    %% {wrapped[0]}", *(f"    %%   {more}" for more in wrapped[1:])]
    lines += _nodes(graph, edges)
    lines += [edge.text() for edge in edges]
    lines += _classes(graph, ends=any(edge.target == END for edge in edges))
    if path is not None:
        lines += path
    return "\n".join(lines) + "\n"


def _edges(graph: FlowGraph) -> list[_Edge]:
    """One arrow per (from, to, kind), labelled with the tools and hooks that make the move."""
    edges: dict[tuple[str, str, str], _Edge] = {}

    def add(source: str, target: str, arrow: str, label: str | None) -> None:
        edge = edges.setdefault((source, target, arrow), _Edge(source, target, arrow))
        if label is not None and label not in edge.labels:
            edge.labels.append(label)

    add(START, graph.initial, SOLID, None)
    for name in graph.steps:
        for move in (m for m in graph.moves if m.source == name):
            arrow = DOTTED if move.kind in ("nested", "handoff") else SOLID
            label = f"{move.via}: handoff" if move.kind == "handoff" else move.via
            add(name, _target(move), arrow, label)
        for step, tool in graph.approvals:
            if step == name:  # K1: the call waits for a person before it runs
                add(name, PERSON, DOTTED, f"{tool}: approval")
        if name in graph.end_steps:
            add(name, END, SOLID, None)
    return list(edges.values())


def _nodes(graph: FlowGraph, edges: list[_Edge]) -> list[str]:
    lines = [f"    {START}((start))"]
    for name in graph.steps:
        if name in graph.logic_steps:
            lines.append(f"    {name}{{{{{name}}}}}")
        elif name in graph.end_steps:
            lines.append(f"    {name}([{name}])")
        else:
            lines.append(f"    {name}[{name}]")
    if any(edge.target == END for edge in edges):
        lines.append(f"    {END}((end))")
    if any(edge.target == PERSON for edge in edges):
        lines.append(f"    {PERSON}((person))")
    return lines


def _classes(graph: FlowGraph, *, ends: bool) -> list[str]:
    nested = sorted({m.target for m in graph.moves if m.kind == "nested" and m.target})
    lines = [TERMINAL, f"    class {START}{f',{END}' if ends else ''} terminal"]
    if graph.logic_steps:
        lines += [LOGIC, f"    class {','.join(sorted(graph.logic_steps))} logic"]
    if nested:
        lines += [NESTED, f"    class {','.join(nested)} nested"]
    if graph.approvals or any(m.kind == "handoff" for m in graph.moves):
        lines += [PEOPLE, f"    class {PERSON} person"]
    return lines


def _overlay(graph: FlowGraph, edges: list[_Edge], session: Mapping[str, Any]) -> list[str]:
    """Number the session's moves on the arrows; add red arrows for moves the code lacks."""
    if session.get("flow") != graph.flow:
        raise ValueError(
            f"Session {session.get('id')!r} belongs to flow {session.get('flow')!r}, not "
            f"{graph.flow!r}; draw it over the flow it ran."
        )
    sequence = _moves(session)
    if session.get("run_status") == "completed" and sequence:
        sequence.append(END)
    hops = list(zip([START, *sequence], sequence, strict=False))
    for number, (source, target) in enumerate(hops):
        edge = next((e for e in edges if (e.source, e.target) == (source, target)), None)
        if edge is None:
            edge = _Edge(source, target, DOTTED, unseen=True)
            edges.append(edge)
        if source != START and target != END:
            edge.taken.append(number)
    return _path_styles(graph, edges, sequence, session)


def _moves(session: Mapping[str, Any]) -> list[str]:
    """The cursor's moves in `sequence`: nested runs (V2) and the parent's return left out.

    >>> _moves({"sequence": ["A", "C", "A", "B"], "sequence_levels": [1, 2, 1, 1]})
    ['A', 'B']
    """
    names = [str(name) for name in session.get("sequence") or []]
    levels = list(session.get("sequence_levels") or []) + [1] * len(names)
    moves: list[str] = []
    for name, level in zip(names, levels, strict=False):
        if level == 1 and (not moves or moves[-1] != name):
            moves.append(name)
    return moves


def _path_styles(
    graph: FlowGraph, edges: list[_Edge], sequence: Sequence[str], session: Mapping[str, Any]
) -> list[str]:
    hops = set(zip([START, *sequence], sequence, strict=False))
    taken = [str(i) for i, e in enumerate(edges) if (e.source, e.target) in hops and not e.unseen]
    unseen = [str(i) for i, e in enumerate(edges) if e.unseen]
    visited = [name for name in graph.steps if name in sequence]
    lines = [VISITED, CURRENT]
    if visited:
        lines.append(f"    class {','.join(visited)} visited")
    current = session.get("current_step")
    if session.get("run_status") == "running" and current in graph.steps:
        lines.append(f"    class {current} current")
    if taken:
        lines.append(f"    linkStyle {','.join(taken)} {TAKEN}")
    if unseen:
        lines.append(f"    linkStyle {','.join(unseen)} {UNSEEN}")
    return lines


# -- python -m picoflow.graph ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Print a flow's Mermaid diagram; the exit status (2 for anything the caller must fix)."""
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.graph",
        description="Draw a flow's steps and moves as a Mermaid flowchart.",
    )
    parser.add_argument("flow", metavar="MODULE:FLOW", help="e.g. myapp.flows:ShopFlow")
    parser.add_argument("--session", metavar="ID", help="draw the path this stored session took")
    parser.add_argument(
        "--store", metavar="URL", help="where --session is stored (default: PICOFLOW_STORE)"
    )
    args = parser.parse_args(argv)
    try:
        flow = load_flow(args.flow)()
        session = None if args.session is None else _stored(args.session, args.store)
        print(draw(flow, session=session), end="")
    except (FlowDefinitionError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def load_flow(target: str) -> type[Flow]:
    """The Flow class `module:Class` names (`module:outer.Class` reaches a nested one)."""
    module_name, _, path = target.partition(":")
    if not module_name or not path:
        raise ValueError(f"{target!r} is not MODULE:FLOW; write e.g. myapp.flows:ShopFlow.")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import {module_name!r} ({exc}); run from the directory "
                          "that contains it, or put it on PYTHONPATH.") from exc  # fmt: skip
    for part in path.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and _is_flow_class(found)):
        raise ValueError(f"{target} is not a Flow subclass (found {found!r}).")
    return found


def _is_flow_class(found: type) -> bool:
    """Whether `found` subclasses `picoflow.flow.Flow`, told by its bases.

    `Flow.graph()` imports this module, so importing flow.py here would close a cycle.
    """
    return any(c.__module__ == "picoflow.flow" and c.__name__ == "Flow" for c in found.__mro__)


def _stored(session_id: str, url: str | None) -> dict[str, Any]:
    from ._state import is_session_id
    from .stores import from_url

    url = url or os.environ.get("PICOFLOW_STORE")
    if not url:
        raise ValueError("--session needs the store it is in: pass --store URL or set "
                         "PICOFLOW_STORE (e.g. sqlite:///sessions.db).")  # fmt: skip
    if not is_session_id(session_id):
        raise ValueError(f"{session_id!r} is not a session id.")

    async def load() -> dict[str, Any] | None:
        store = from_url(url)
        try:
            return await store.load(session_id)
        finally:
            await store.aclose()

    doc = asyncio.run(load())
    if doc is None:
        raise ValueError(f"There is no session {session_id} in that store.")
    return doc


if __name__ == "__main__":
    raise SystemExit(main())
