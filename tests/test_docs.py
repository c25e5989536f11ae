"""Every ```python block in README.md and docs/*.md runs, and prints what the page says.

A page's blocks run in order in one fresh namespace inside a temporary directory (so an example
may create files). Lines written as `#> text` are the expected output of the code above them;
a block's printed output must equal its `#>` lines. A fence marked ```python fragment is only
compiled. A concept page without any runnable block fails: docs show, they do not describe.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
# Pages that report numbers or list rules rather than teach a concept.
NO_EXAMPLE_NEEDED = {"benchmarks.md", "contract.md"}
FENCE = re.compile(r"^```python( fragment)?[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def blocks(page: Path) -> list[tuple[bool, str, int]]:
    """(runnable, code, line number) of every python fence of a page."""
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        found.append((match.group(1) is None, match.group(2), line))
    return found


def expected_output(code: str) -> list[str]:
    return [
        line.strip()[2:].removeprefix(" ")
        for line in code.splitlines()
        if line.strip().startswith("#>")
    ]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_docs_examples_run_and_print_what_they_say(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = blocks(page)
    runnable = [b for b in found if b[0]]
    if page.name not in NO_EXAMPLE_NEEDED:
        assert runnable, f"{page.name} has no runnable ```python example"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PICOFLOW_STORE", "memory:")
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem.replace('-', '_')}"}
    for is_runnable, code, line in found:
        compiled = compile(code, f"{page.name}:{line}", "exec")
        if not is_runnable:
            continue
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compiled, namespace)  # noqa: S102 - running the docs is the point
        printed = [text.rstrip() for text in out.getvalue().splitlines()]
        assert printed == expected_output(code), f"{page.name}:{line} printed something else"
    assert os.getcwd() == str(tmp_path)
