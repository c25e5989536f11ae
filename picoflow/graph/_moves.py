"""Where a step can go, read from its code: the `go(...)` targets of its tools and hooks.

`picoflow.graph` draws these. A move is found by parsing the source of each tool (`@tool`,
`@tool_group`) and hook of the step class and following the calls it makes to the step's own
methods, so a helper such as `self.forward_to(ExploreStep)` that returns `go(destination)`
counts as a move to `ExploreStep`. What cannot be read from the code — a target computed at run
time, a class built on the fly — is declared on the step instead:

    class RouterStep(LogicStep):
        moves_to = (BillingStep, SupportStep, finish)   # steps (or names), or finish
        nested_steps = (LookupStep,)                    # what run_step(s) may run

Worked example: `PresentStep.search_again` returns `self.forward_to(ExploreStep)`, and
`HotelStep.forward_to(self, destination)` returns `go(destination).with_message(...)`; reading
`search_again` binds `destination` to `ExploreStep` and finds `Move("PresentStep",
"ExploreStep", "search_again", "go")`.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from picoflow.errors import FlowDefinitionError

__all__ = ["Move", "MoveKind", "Reading", "read_moves", "MOVES_ATTRIBUTE", "NESTED_ATTRIBUTE"]

MoveKind = Literal["go", "finish", "nested", "handoff"]

MOVES_ATTRIBUTE = "moves_to"
NESTED_ATTRIBUTE = "nested_steps"
HOOKS = (
    "on_start",
    "on_enter",
    "on_exit",
    "on_crossing",
    "on_restore",
    "on_response",
    "on_llm_error",
    "run_logic",
    "on_decision",  # D1: a decision step routes here
    "on_decision_error",
)
TOOL_MARKS = ("__picoflow_tool__", "__picoflow_tool_group__")
_UNKNOWN = object()


@dataclass(frozen=True, slots=True)
class Move:
    """One way a step can leave: `go` to a step, `finish` the session, or run a `nested` step.

    `target` is the step name (None for `finish`); `via` names the tool or hook that makes the
    move, or `moves_to`/`nested_steps` when it was declared rather than read.
    """

    source: str
    target: str | None
    via: str
    kind: MoveKind


@dataclass(slots=True)
class Reading:
    """The moves read from one step class, and what could not be read, said for a person."""

    moves: list[Move] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def read_moves(step_class: type, name: str) -> Reading:
    """Every move of a step class: read from its tools and hooks, plus what it declares."""
    reader = _Reader(step_class, name)
    for method, via in _roots(step_class):
        reader.visit(method, via, {})
    reader.declared()
    return reader.reading


def _roots(step_class: type) -> Iterator[tuple[str, str]]:
    """(method name, label) of every tool, tool group and hook: the class's own first."""
    for klass in step_class.__mro__:
        for attr, value in vars(klass).items():
            for mark in TOOL_MARKS:
                spec = getattr(value, mark, None)
                if spec is not None:
                    yield attr, getattr(spec, "name", attr) if mark == TOOL_MARKS[0] else attr
    for hook in HOOKS:
        if callable(getattr(step_class, hook, None)):
            yield hook, hook


class _Reader:
    """Walks a step's methods, following `self.helper(...)` calls with their step arguments."""

    def __init__(self, step_class: type, name: str) -> None:
        self.step_class = step_class
        self.name = name
        self.reading = Reading()
        self._seen: set[tuple[str, str, tuple[tuple[str, str], ...]]] = set()

    def visit(self, method: str, via: str, bindings: dict[str, str]) -> None:
        key = (method, via, tuple(sorted(bindings.items())))
        function = _own_function(self.step_class, method)
        if key in self._seen or function is None:
            return
        self._seen.add(key)
        tree = _parse(function)
        if tree is None:
            self._note(
                f"{self.name}.{method}: its source cannot be read, so its moves are unknown; "
                f"declare them with {MOVES_ATTRIBUTE} = (...) on {self.name}."
            )
            return
        scope = _Scope(function.__globals__, bindings)
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
        for node in sorted(calls, key=lambda call: (call.lineno, call.col_offset)):
            self._call(node, scope, method, via)

    def _call(self, node: ast.Call, scope: _Scope, method: str, via: str) -> None:
        callee, on_self = _callee(node.func, scope)
        if callee in ("go", "direct_to", "finish") and not on_self:  # direct_to moves too (D4)
            target = _first_argument(node, "target")
            if callee == "finish":
                self._add(None, via, "finish")
            elif target is not None:
                self._target(target, scope, (method, via), "go")
        elif callee == "handoff" and not on_self:  # K6: a person takes the conversation
            self._add(None, via, "handoff")
        elif callee == "complete" and _is_self_flow(node.func):
            self._add(None, via, "finish")
        elif on_self and callee in ("run_step", "run_steps"):
            for child in _children(node, callee):
                self._target(child, scope, (method, via), callee)
        elif on_self and callee is not None and _own_function(self.step_class, callee):
            self.visit(callee, via, _bind(self.step_class, callee, node, scope))

    def _target(self, node: ast.expr, scope: _Scope, where: tuple[str, str], call: str) -> None:
        """A move to the step `node` names (`call` is go, run_step or run_steps), or a note."""
        method, via = where
        kind: MoveKind = "go" if call == "go" else "nested"
        if isinstance(node, ast.IfExp):  # go(A if cond else B): either can be reached
            self._target(node.body, scope, where, call)
            self._target(node.orelse, scope, where, call)
            return
        target = scope.step_name(node)
        if target is not None:
            self._add(target, via, kind)
            return
        attribute = MOVES_ATTRIBUTE if kind == "go" else NESTED_ATTRIBUTE
        if getattr(self.step_class, attribute, None):
            return  # the step declares where it goes: that is the answer to this note
        self._note(
            f"{self.name}.{method}: {call}({ast.unparse(node)}) names no step the graph can read; "
            f"declare the steps it can reach with {attribute} = (...) on {self.name}."
        )

    def declared(self) -> None:
        for entry in _declared(self.step_class, self.name, MOVES_ATTRIBUTE):
            self._add(entry, MOVES_ATTRIBUTE, "go" if entry is not None else "finish")
        for entry in _declared(self.step_class, self.name, NESTED_ATTRIBUTE):
            self._add(entry, NESTED_ATTRIBUTE, "nested")

    def _add(self, target: str | None, via: str, kind: MoveKind) -> None:
        move = Move(self.name, target, via, kind)
        if move not in self.reading.moves:
            self.reading.moves.append(move)

    def _note(self, text: str) -> None:
        if text not in self.reading.notes:
            self.reading.notes.append(text)


class _Scope:
    """Names as the method sees them: its bound step parameters, its module's globals."""

    def __init__(self, globals_: dict[str, Any], bindings: dict[str, str]) -> None:
        self.globals = globals_
        self.bindings = bindings

    def lookup(self, node: ast.expr) -> Any:
        """The object a name or dotted name refers to, or _UNKNOWN."""
        if isinstance(node, ast.Name):
            if node.id in self.globals:
                return self.globals[node.id]
            return getattr(builtins, node.id, _UNKNOWN)
        if isinstance(node, ast.Attribute):
            owner = self.lookup(node.value)
            return _UNKNOWN if owner is _UNKNOWN else getattr(owner, node.attr, _UNKNOWN)
        return _UNKNOWN

    def step_name(self, node: ast.expr) -> str | None:
        """The step a `go(...)` argument names: a class, a name string, or a bound parameter."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            return node.value.strip()
        if isinstance(node, ast.Name) and node.id in self.bindings:
            return self.bindings[node.id]
        value = self.lookup(node)
        return value.__name__ if isinstance(value, type) else None


def _callee(func: ast.expr, scope: _Scope) -> tuple[str | None, bool]:
    """The called name, and whether it is a method of `self`.

    A function is known by its own name, so `from picoflow import go as move` still reads as
    `go`; a name that cannot be looked up (`finish` before it is imported) by its spelling.
    """
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        if func.value.id == "self":
            return func.attr, True
    value = scope.lookup(func)
    name = getattr(value, "__name__", None) if value is not _UNKNOWN else None
    if isinstance(name, str) and name in ("go", "direct_to", "finish", "handoff"):
        return name, False
    if isinstance(func, ast.Name):
        return func.id, False
    return (func.attr if isinstance(func, ast.Attribute) else None), False


def _is_self_flow(func: ast.expr) -> bool:
    """`self.flow.complete()`, the code form of finish()."""
    return (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Attribute)
        and func.value.attr == "flow"
        and isinstance(func.value.value, ast.Name)
        and func.value.value.id == "self"
    )


def _first_argument(node: ast.Call, keyword: str) -> ast.expr | None:
    if node.args and not isinstance(node.args[0], ast.Starred):
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _children(node: ast.Call, callee: str) -> list[ast.expr]:
    """The step arguments of `run_step(Child, ...)` or `run_steps([Child, (Other, msg)])`."""
    first = _first_argument(node, "step" if callee == "run_step" else "steps")
    if first is None:
        return []
    if callee == "run_step" or not isinstance(first, (ast.List, ast.Tuple)):
        return [first]
    return [e.elts[0] if isinstance(e, ast.Tuple) and e.elts else e for e in first.elts]


def _bind(step_class: type, method: str, node: ast.Call, scope: _Scope) -> dict[str, str]:
    """The helper's parameters that this call fills with a readable step."""
    function = _own_function(step_class, method)
    if function is None:
        return {}
    names = list(inspect.signature(function).parameters)[1:]  # without self
    pairs = list(zip(names, node.args, strict=False))
    pairs += [(k.arg, k.value) for k in node.keywords if k.arg is not None]
    bound = {name: scope.step_name(value) for name, value in pairs}
    return {name: step for name, step in bound.items() if step is not None}


def _own_function(step_class: type, method: str) -> Callable[..., Any] | None:
    """The user's function behind `step_class.method`; None for picoflow's own or non-methods.

    picoflow's base implementations (Step's hooks, EndStep's, LogicStep's) make no moves.
    """
    value = inspect.getattr_static(step_class, method, None)
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if not inspect.isfunction(value):
        return None
    function = inspect.unwrap(value)
    module = getattr(function, "__module__", None) or ""  # None for code run by exec()
    if not inspect.isfunction(function) or module.startswith("picoflow."):
        return None
    return function


def _parse(function: Callable[..., Any]) -> ast.AST | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
        return ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        return None


def _declared(step_class: type, name: str, attribute: str) -> Iterator[str | None]:
    """The entries of `moves_to`/`nested_steps`: step names, None for `finish`."""
    entries = getattr(step_class, attribute, ())
    if isinstance(entries, (str, type)) or not isinstance(entries, (tuple, list)):
        entries = (entries,)
    for entry in entries:
        if isinstance(entry, type):
            yield entry.__name__
        elif isinstance(entry, str) and entry.strip():
            yield entry.strip()
        elif attribute == MOVES_ATTRIBUTE and getattr(entry, "__name__", None) == "finish":
            yield None
        else:
            raise FlowDefinitionError(
                f"{name}.{attribute} lists {entry!r}; list Step classes or step names"
                + (", or finish." if attribute == MOVES_ATTRIBUTE else ".")
                + f" For example: {attribute} = (OtherStep,)."
            )
