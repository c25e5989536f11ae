"""Conventions of STYLE.md as failing tests, not review comments (STYLE section 13)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import picoflow
import picoflow.errors

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "picoflow"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 50

# SPEC section 1, the type names its examples use, and names added with a reason in docs/.
PUBLIC = {
    "Flow",
    "Step",
    "EndStep",
    "tool",
    "go",
    "stay",
    "direct",
    "FlowEngine",
    "TurnResult",
    "ModelSpec",
    "SummaryConfig",
    "PicoflowError",
    "FlowDefinitionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "RevisionNotFoundError",
    "StoreError",
    "EmbeddingsMismatchError",  # SPEC L4: a bank refuses vectors of another embedding model
    "ToolLoopError",
    "ToolResult",
    "ModelLike",  # used by the SPEC's examples
    "StreamEvent",  # FlowEngine.stream's event type (docs/server.md)
    "LogicStep",  # SPEC V1
    "finish",  # SPEC V7
    "handoff",  # SPEC K6
    "tool_group",  # SPEC V6
    "ToolCall",  # SPEC V6: what a tool_group handler receives
    "BudgetExceeded",  # SPEC O3: the error of a turn over a budget
    "EffectInHistoryError",  # SPEC K9
    "IdempotencyKeyReusedError",  # SPEC H5, O4: raised by a history change sent with a used key
    "MissingAbilityError",  # SPEC P2, docs/stores.md: a feature needs an ability a store lacks
    "summarise",  # SPEC M11: the memory policy builders
    "sliding_window",
    "turn_window",
    "token_window",
    "reset",
    "MemoryBank",  # SPEC L5: what engine.memory_bank(owner) returns
    "is_session_current",  # SPEC U6
    "session_idle_ms",  # SPEC U6
    "Prompt",  # SPEC U1
    "FlowPrompt",  # SPEC U1
    "parse_json",  # SPEC U1
    "DecisionStep",  # SPEC D1: a step that decides through a decision provider
    "ChoiceQuestion",  # SPEC D1: the three question kinds
    "ScoreQuestion",
    "NoulQuestion",
    "ChoiceAnswer",  # SPEC D1: and their answers
    "ScoreAnswer",
    "NoulAnswer",
    "DecisionContext",  # SPEC D1: what on_decision learns besides the answers
    "DecisionErrorContext",  # SPEC D2: what on_decision_error learns
    "DecisionOptions",  # SPEC D2: Flow.config_decision()'s return value
    "DecisionError",  # SPEC D2: a decision that failed the turn
    "DecisionValidationError",  # SPEC D2: answers that do not fit the question map
    "direct_to",  # SPEC D4: move and answer verbatim
    "retry_with_model",  # SPEC D4: what on_llm_error returns to fall back to another model
    "RetryWithModel",  # SPEC D4: retry_with_model's value
    "Conversation",  # SPEC D4: what Flow.get_conversation returns
    "LlmErrorContext",  # SPEC D4: the model-failure hook contexts
    "LlmAttemptErrorContext",
    "LlmBlockedContext",
    "LlmCallPolicy",  # SPEC D4: what Step.get_llm_call_policy returns
    "__version__",
}


def test_public_surface_is_the_agreed_list() -> None:
    assert set(picoflow.__all__) == PUBLIC
    for name in picoflow.__all__:
        assert hasattr(picoflow, name), name


@pytest.mark.parametrize("name", sorted(PUBLIC - {"__version__", "ModelLike"}))
def test_every_public_name_has_a_docstring(name: str) -> None:
    assert (getattr(picoflow, name).__doc__ or "").strip(), f"{name} has no docstring"


def test_every_error_is_exported_and_has_its_message_asserted_in_a_test() -> None:
    tests = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("test_*.py"))
    for name in picoflow.errors.__all__:
        assert name in picoflow.__all__, f"{name} is not exported from picoflow"
        assert re.search(rf"\b{name}\b", tests.replace("test_style", "")), name


def _modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("module", _modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_module_and_function_sizes(module: Path) -> None:
    source = module.read_text()
    assert source.count("\n") <= MAX_MODULE_LINES, f"{module.name} is over {MAX_MODULE_LINES} lines"
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            assert length <= MAX_FUNCTION_LINES, f"{module.name}:{node.name} has {length} lines"


PRIVATE_IMPORT = re.compile(
    r"^\s*(from\s+picoflow(\.\w+)*\._\w+|import\s+picoflow\._|from\s+picoflow[\w.]*\s+import\s+.*\b_\w+)",
    re.M,
)
PRIVATE_ATTRIBUTE = re.compile(r"\b(engine|flow|step|memory|store|result)\._[a-z]\w*")


def _example_sources() -> list[tuple[str, str]]:
    sources = [
        (str(p.relative_to(ROOT)), p.read_text()) for p in sorted((ROOT / "demo").rglob("*.py"))
    ]
    fence = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)
    for page in sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")]):
        for index, match in enumerate(fence.finditer(page.read_text())):
            sources.append((f"{page.name}#{index}", match.group(1)))
    return sources


@pytest.mark.parametrize(
    "name,source", _example_sources(), ids=lambda v: v if "\n" not in v else ""
)
def test_demo_and_docs_use_only_public_names(name: str, source: str) -> None:
    assert not PRIVATE_IMPORT.search(source), f"{name} imports a private picoflow name"
    assert not PRIVATE_ATTRIBUTE.search(source), f"{name} reaches into a private attribute"


def test_picoflow_passes_ruff() -> None:
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--quiet", "picoflow", "tests", "demo", "bench"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
