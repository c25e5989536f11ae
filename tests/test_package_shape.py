"""The package's shape as tests: no import cycles, and the simulator's CLI runs each module once.

A newcomer reads `picoflow/` as the core plus two side systems (`simulate/`, `_housekeeping/`);
these tests keep it readable that way (issue 12).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "picoflow"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, *, types: bool = False) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, lazy ones inside functions included; type-only ones if `types`."""
    found: list[ast.Import | ast.ImportFrom] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if not types and isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def _graph(*, types: bool = False) -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _imports(ast.parse(path.read_text()), types=types):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = package.split(".")
                if node.level:
                    base = base[: len(base) - node.level + 1]
                    prefix = ".".join(base + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # `from package import module` depends on that module, not on the package
                targets = [
                    f"{prefix}.{alias.name}" if f"{prefix}.{alias.name}" in modules else prefix
                    for alias in node.names
                ]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return path[path.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def test_picoflow_has_no_import_cycle_other_than_type_only_ones() -> None:
    assert _cycle(_graph()) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def _units(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph folded onto picoflow's top-level units (`picoflow.engine._x` -> engine)."""

    def unit(name: str) -> str:
        return name.split(".")[1] if "." in name else name

    folded: dict[str, set[str]] = {}
    for name, targets in graph.items():
        if name == "picoflow":
            continue  # the package face re-exports everything: it is no unit of the layers
        folded.setdefault(unit(name), set()).update(
            unit(t) for t in targets if t != "picoflow" and unit(t) != unit(name)
        )
    return folded


def _largest_circle(graph: dict[str, set[str]]) -> set[str]:
    """The largest strongly connected set: units that all reach each other."""
    reach = {node: _reachable(graph, node) for node in graph}
    circles = [{m for m in graph if m in reach[n] and n in reach[m]} | {n} for n in graph]
    return max(circles, key=len)


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    stack = list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return seen


def test_no_circle_runs_through_more_than_four_top_level_units() -> None:
    """One house: counting type-only and function-level imports, the only circle is the
    type-only one of flow, graph, step and transitions (docs/architecture.md)."""
    circle = _largest_circle(_units(_graph(types=True)))
    assert len(circle) <= 4, sorted(circle)


def test_the_circle_check_folds_modules_onto_units() -> None:
    graph = {"picoflow.a._x": {"picoflow.b"}, "picoflow.b": {"picoflow.a"}, "picoflow.a": set()}
    assert _largest_circle(_units(graph)) == {"a", "b"}


def test_at_most_six_private_modules_sit_flat_at_the_top() -> None:
    """One house: private code lives in packages that say what it is part of."""
    flat = [p.name for p in PACKAGE.glob("_*.py") if p.name != "__init__.py"]
    assert len(flat) <= 6, flat


def test_the_layer_contracts_hold() -> None:
    """One house: an upward import fails the suite, not only `make lint` (pyproject.toml)."""
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "0 broken" in done.stdout


# Counts every module body Python executes (an import runs `exec`, so does `python -m`), per file.
_COUNT_EXECUTIONS = """
import collections, json, runpy, sys
counts = collections.Counter()

def hook(event, args):
    if event == "exec":
        counts[args[0].co_filename] += 1

sys.addaudithook(hook)
sys.argv = ["picoflow.simulate", "--help"]
try:
    runpy.run_module("picoflow.simulate", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    assert exc.code == 0, exc.code
print(json.dumps({path: n for path, n in counts.items() if "picoflow" in path}))
"""


def test_simulate_cli_runs_each_module_once() -> None:
    """`python -m picoflow.simulate` once defined two `SimulationReport` classes (issue 12)."""
    run = subprocess.run(
        [sys.executable, "-c", _COUNT_EXECUTIONS], capture_output=True, text=True, cwd=ROOT
    )
    assert run.returncode == 0, run.stderr
    counts = json.loads(run.stdout.splitlines()[-1])
    assert str(PACKAGE / "simulate" / "__main__.py") in counts
    assert str(PACKAGE / "simulate" / "_simulation.py") in counts
    assert {path: n for path, n in counts.items() if n != 1} == {}
