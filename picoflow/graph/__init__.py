"""A picture of a flow: its steps and the moves between them, as a Mermaid flowchart.

    python -m picoflow.graph myapp.flows:ShopFlow
    python -m picoflow.graph myapp.flows:ShopFlow --session ID --store sqlite:///sessions.db

or `ShopFlow().graph()` in code. The moves are read from the code (see `picoflow.graph._moves`):
the `go(...)` targets of each step's tools and hooks, `finish()`, and the steps `run_step` /
`run_steps` run nested, plus what a step declares in `moves_to` / `nested_steps`. The initial
step hangs off a `start` node; `EndStep`s and steps that can finish lead to an `end` node.
Logic steps are hexagons, decision steps (D1) rhombuses, steps run nested have a dashed border
and are reached by dotted arrows. Tools that need a person's approval (K1) and `handoff()` moves
(K6) are dotted arrows to a `person` node. With a session, the path it took is drawn over the
flow: visited steps and taken moves in green, numbered in order, a move the code does not show
as a red dotted arrow, and, when the path comes from the session's revision history
(`--session`, or `draw(flow, history=...)`), each rewind, undo or edited turn as an orange
dashed arrow back to the step it restored.

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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from picoflow.errors import FlowDefinitionError
from picoflow.graph._flow_moves import flow_moves
from picoflow.graph._moves import Move, read_moves
from picoflow.graph._path import END, START, Hop, Revision, document_hops, history_hops
from picoflow.step import EndStep
from picoflow.stores.base import JSONDict, abilities_of
from picoflow.tools import collect_tools

if TYPE_CHECKING:
    from picoflow.flow import Flow

__all__ = ["FlowGraph", "Hop", "Move", "draw", "flow_graph", "load_history", "main"]

PERSON = "__person__"
SOLID, DOTTED = "-->", "-.->"
TERMINAL = "    classDef terminal fill:#f1f3f5,stroke:#868e96"
LOGIC = "    classDef logic fill:#fff3bf,stroke:#e67700"
DECISION = "    classDef decision fill:#f3f0ff,stroke:#6741d9"
NESTED = "    classDef nested stroke-dasharray:5 3"
VISITED = "    classDef visited fill:#d3f9d8,stroke:#2b8a3e,stroke-width:2px"
CURRENT = "    classDef current fill:#d3f9d8,stroke:#2b8a3e,stroke-width:4px"
PEOPLE = "    classDef person fill:#e7f5ff,stroke:#1971c2"
TAKEN, UNSEEN = "stroke:#2b8a3e,stroke-width:3px", "stroke:#c92a2a,stroke-width:3px"
JUMPED = "stroke:#e67700,stroke-width:3px,stroke-dasharray:6 4"  # rewind, undo, edit (W2, W4)


@runtime_checkable
class _EngineHistory(Protocol):
    """A `FlowEngine` as `load_history` reads it (this layer sits below the engine)."""

    async def history(self, session_id: str) -> list[JSONDict]: ...

    async def get_session(self, session_id: str, *, revision: int | None = None) -> Any: ...


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
    decision_steps: frozenset[str] = frozenset()  # D1: steps deciding through a provider

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
        decision_steps=frozenset(n for n, s in steps.items() if _is_kind(type(s), "DecisionStep")),
    )


def _target(move: Move) -> str:
    """Where a move's arrow points: a step, the end, or a person (K6 handoff)."""
    if move.kind == "handoff":
        return PERSON
    return move.target or END


def draw(
    flow: Flow,
    *,
    session: Mapping[str, Any] | None = None,
    history: Sequence[Revision] | None = None,
) -> str:
    """The flow as Mermaid flowchart text; with a session, the path it took on top.

    Args:
        flow: The flow object.
        session: A session document: its `sequence` is the path drawn.
        history: The session's kept revisions, oldest first, each `(history entry, the
            document it saved)` as `load_history` returns them: the path is drawn from them,
            rewinds, undos and edits included (see `picoflow.graph._path`). `session`
            defaults to the newest document.
    """
    if not history:
        return to_mermaid(flow_graph(flow), session)
    session = session if session is not None else history[-1][1]
    if session is None:
        raise ValueError(
            "The newest revision of the history has no document, so the session's flow and "
            "step are unknown; pass session= (engine.get_session(session_id))."
        )
    return to_mermaid(flow_graph(flow), session, history_hops(history))


def _initial(flow: Flow) -> str:
    """The initial step's name; `initial_step()` may read a context a new flow lacks (F3)."""
    try:
        chosen = flow.initial_step()
    except Exception:  # the context it reads only exists in a session: the default is drawn
        chosen = None
    return chosen.__name__ if isinstance(chosen, type) else next(iter(flow.steps))


def _is_logic(step_class: type) -> bool:
    """A LogicStep (V1), told by its class name, so drawing needs nothing from the runner."""
    return _is_kind(step_class, "LogicStep")


def _is_kind(step_class: type, kind: str) -> bool:
    return any(klass.__name__ == kind for klass in step_class.__mro__)


@dataclass(slots=True)
class _Edge:
    source: str
    target: str
    arrow: str
    labels: list[str] = field(default_factory=list)
    taken: list[int] = field(default_factory=list)
    unseen: bool = False
    jump: bool = False  # a rewind, undo or edit going back to an earlier state

    def text(self) -> str:
        label = ", ".join(self.labels)
        if self.taken:
            moves = ", ".join(map(str, self.taken))
            label = f"{label}: {'moves' if len(self.taken) > 1 else 'move'} {moves}".lstrip(": ")
        if self.unseen and not self.jump:
            label = f"{label}: not in the code" if label else "not in the code"
        return f"    {self.source} {self.arrow}{f'|{label}|' if label else ''} {self.target}"


def to_mermaid(
    graph: FlowGraph, session: Mapping[str, Any] | None = None, hops: list[Hop] | None = None
) -> str:
    """Mermaid flowchart text for a graph, with a session's path (default: its document's)."""
    edges = _edges(graph)
    path = None
    if session is not None:
        path = _overlay(graph, edges, session, document_hops(session) if hops is None else hops)
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
        elif name in graph.decision_steps:
            lines.append(f"    {name}{{{name}}}")
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
    if graph.decision_steps:
        lines += [DECISION, f"    class {','.join(sorted(graph.decision_steps))} decision"]
    if nested:
        lines += [NESTED, f"    class {','.join(nested)} nested"]
    if graph.approvals or any(m.kind == "handoff" for m in graph.moves):
        lines += [PEOPLE, f"    class {PERSON} person"]
    return lines


def _overlay(
    graph: FlowGraph, edges: list[_Edge], session: Mapping[str, Any], hops: list[Hop]
) -> list[str]:
    """Number the session's moves on the arrows; add red arrows for moves the code lacks.

    A rewind, undo or edit (a jump back to an earlier state) is an orange dashed arrow of its
    own, labelled with the revision it went back to and numbered like the moves.
    """
    if session.get("flow") != graph.flow:
        raise ValueError(
            f"Session {session.get('id')!r} belongs to flow {session.get('flow')!r}, not "
            f"{graph.flow!r}; draw it over the flow it ran."
        )
    number = 0
    for hop in hops:
        edge = _edge_for(edges, hop)
        if hop.source != START and hop.target != END:
            number += 1
            edge.taken.append(number)
        if hop.label is not None and hop.label not in edge.labels:
            edge.labels.append(hop.label)
    return _path_styles(graph, edges, hops, session)


def _edge_for(edges: list[_Edge], hop: Hop) -> _Edge:
    """The arrow a hop is drawn on: the code's, a jump arrow, or a new red one."""
    jump = hop.kind in ("rewind", "edit")
    for edge in edges:
        if (edge.source, edge.target) == (hop.source, hop.target) and edge.jump == jump:
            return edge
    edge = _Edge(hop.source, hop.target, DOTTED, unseen=True, jump=jump)
    edges.append(edge)
    return edge


def _path_styles(
    graph: FlowGraph, edges: list[_Edge], hops: Sequence[Hop], session: Mapping[str, Any]
) -> list[str]:
    walked = {(hop.source, hop.target) for hop in hops if hop.kind in ("move", "fork")}
    taken = [str(i) for i, e in enumerate(edges) if (e.source, e.target) in walked and not e.unseen]
    unseen = [str(i) for i, e in enumerate(edges) if e.unseen and not e.jump]
    jumps = [str(i) for i, e in enumerate(edges) if e.jump]
    stepped = {hop.source for hop in hops} | {hop.target for hop in hops}
    visited = [name for name in graph.steps if name in stepped]
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
    if jumps:
        lines.append(f"    linkStyle {','.join(jumps)} {JUMPED}")
    return lines


# -- python -m picoflow.graph ------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Print a flow's Mermaid diagram; the exit status (2 for anything the caller must fix)."""
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.graph",
        description="Draw a flow's steps and moves as a Mermaid flowchart.",
    )
    parser.add_argument("flow", metavar="MODULE:FLOW", help="e.g. myapp.flows:ShopFlow")
    parser.add_argument(
        "--session",
        metavar="ID",
        help="draw the path this stored session took, from its kept revisions",
    )
    parser.add_argument(
        "--store", metavar="URL", help="where --session is stored (default: PICOFLOW_STORE)"
    )
    args = parser.parse_args(argv)
    try:
        flow = load_flow(args.flow)()
        if args.session is None:
            print(draw(flow), end="")
        else:  # W1: the path from the kept revisions; the document's if none are kept
            session, history = _stored(args.session, args.store)
            print(draw(flow, session=session, history=history), end="")
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


def _stored(session_id: str, url: str | None) -> tuple[dict[str, Any], list[Revision]]:
    """The stored session and its kept revisions (none from a store that keeps no history)."""
    from picoflow._internal.state import is_session_id
    from picoflow.stores import from_url

    url = url or os.environ.get("PICOFLOW_STORE")
    if not url:
        raise ValueError("--session needs the store it is in: pass --store URL or set "
                         "PICOFLOW_STORE (e.g. sqlite:///sessions.db).")  # fmt: skip
    if not is_session_id(session_id):
        raise ValueError(f"{session_id!r} is not a session id.")

    async def load() -> tuple[dict[str, Any] | None, list[Revision]]:
        store = from_url(url)
        try:
            return await store.load(session_id), await load_history(store, session_id)
        finally:
            await store.aclose()

    doc, history = asyncio.run(load())
    if doc is None:
        raise ValueError(f"There is no session {session_id} in that store.")
    return doc, history


async def load_history(store: Any, session_id: str) -> list[Revision]:
    """A session's kept revisions, oldest first, each `(history entry, the document it saved)`.

    What `draw(flow, history=...)` takes. `store` is a Store, or a `FlowEngine` (its
    `history` and `get_session(revision=)`, which also apply `owner=` rules when called
    directly). [] when the store keeps no history (no `history`/`load_revision` methods).
    """
    kept = abilities_of(store).history
    if kept is not None:
        entries = list(reversed(await kept.history(session_id)))
        docs = [await kept.load_revision(session_id, entry["revision"]) for entry in entries]
    elif isinstance(store, _EngineHistory):
        entries = list(reversed(await store.history(session_id)))
        docs = [await store.get_session(session_id, revision=e["revision"]) for e in entries]
    else:
        return []
    return list(zip(entries, docs, strict=True))
