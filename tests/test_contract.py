"""docs/contract.md is the contract that ships with the code: every rule id cited resolves there.

Code comments, docstrings, test names and docs pages cite rules by id ("R4: the last transition
wins", `test_s2_...`). A reader who clones the repository must be able to look each one up, so
an id cited anywhere in `picoflow/`, `tests/`, `docs/`, `demo/` or `bench/` that is not an entry
of docs/contract.md fails here, and so does an entry without a link to the page explaining it.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONTRACT = ROOT / "docs" / "contract.md"
SEARCHED = ("picoflow", "tests", "docs", "demo", "bench")
# Pages other work is writing while this page already links to them.
FORTHCOMING = {
    "deployment.md",
}

# An id is a family letter and a number without a leading zero (`H01` is a hotel, not a rule);
# a range (`R3-R7`, `M4–M10`, `S1-5`) cites every rule from its first to its last.
RULE = r"(?<![A-Za-z0-9_])([FTSRMPEVHUXKWLOGD])([1-9][0-9]?)(?![0-9])"
CITATION = re.compile(RULE + r"(?:\s?[-–]\s?([FTSRMPEVHUXKWLOGD])?([1-9][0-9]?)(?![0-9]))?")
# `test_m4_m5_...`: ids in a test's name, lower case, between underscores
NAME_ID = re.compile(r"(?<=_)([fstrmpevhuxkwlogd])([1-9][0-9]?)(?=_|$)")
ENTRY = re.compile(r"^- \*\*([A-Z][0-9]+)\*\* \[[^\]]+\]\(([^)#]+)(?:#([^)]+))?\):", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")


def cited_ids(text: str) -> list[str]:
    """The rule ids a piece of prose cites, ranges expanded (`M4-M6` is M4, M5 and M6)."""
    found: list[str] = []
    for family, first, other, last in CITATION.findall(text):
        if last and other in ("", family):
            found += [f"{family}{n}" for n in range(int(first), int(last) + 1)]
        else:
            found.append(family + first)
            if last:
                found.append(other + last)
    return found


def _python_prose(source: str) -> str:
    """Comments, docstrings and function names: where a module cites rules (not its data)."""
    parts: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            parts.append(ast.get_docstring(node) or "")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            parts += [f"{f.upper()}{n}" for f, n in NAME_ID.findall(node.name)]
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    parts += [token.string for token in tokens if token.type == tokenize.COMMENT]
    return "\n".join(parts)


def _markdown_prose(text: str) -> str:
    """A page's prose: code blocks and inline code hold examples and data, not citations."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def citations() -> dict[str, set[str]]:
    """Each cited id, with the files that cite it."""
    where: dict[str, set[str]] = {}
    for top in SEARCHED:
        for path in sorted((ROOT / top).rglob("*")):
            if "node_modules" in path.parts:  # the Node clients' packages (tests/package.json)
                continue
            if path.suffix == ".py":
                prose = _python_prose(path.read_text(encoding="utf-8"))
            elif path.suffix == ".md" and path != CONTRACT:
                prose = _markdown_prose(path.read_text(encoding="utf-8"))
            else:
                continue
            for rule in cited_ids(prose):
                where.setdefault(rule, set()).add(str(path.relative_to(ROOT)))
    return where


def entries() -> dict[str, tuple[str, str | None]]:
    return {
        rule: (page, anchor or None)
        for rule, page, anchor in ENTRY.findall(CONTRACT.read_text(encoding="utf-8"))
    }


def test_every_cited_rule_id_is_an_entry_of_the_contract() -> None:
    listed = entries()
    missing = {rule: sorted(files) for rule, files in citations().items() if rule not in listed}
    assert missing == {}


def test_the_contract_lists_every_rule_family_in_order() -> None:
    listed = list(entries())
    counts = {"F": 8, "T": 5, "S": 5, "R": 8, "M": 16, "P": 6, "E": 4, "V": 10, "H": 11}
    counts |= {"U": 8, "X": 7, "K": 10, "W": 5, "L": 5, "O": 6, "G": 3, "D": 5}
    assert listed == [f"{family}{n}" for family, top in counts.items() for n in range(1, top + 1)]


def _anchors(page: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces as hyphens."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    headings = re.findall(r"^#{1,6} (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("rule", list(entries()))
def test_each_entry_links_to_the_page_that_explains_it(rule: str) -> None:
    page, anchor = entries()[rule]
    target = ROOT / "docs" / page
    if not target.exists():
        assert page in FORTHCOMING, f"{rule} links to {page}, which does not exist"
        return
    assert anchor is None or anchor in _anchors(target), f"{rule}: no #{anchor} in {page}"


def test_citations_are_found_in_comments_docstrings_names_and_prose_only() -> None:
    source = (
        '"""Module (M4-M6)."""\n'
        "# R4: the last one wins\n"
        "def test_s2_p3_merge():\n"
        '    """F7."""\n'
        '    hotel = "H01"; summary = "S1"\n'
    )
    assert sorted(cited_ids(_python_prose(source))) == ["F7", "M4", "M5", "M6", "P3", "R4", "S2"]
    page = "Compaction (M4) keeps `H12` apart.\n```python\nx = 'E3'\n```\n"
    assert cited_ids(_markdown_prose(page)) == ["M4"]
    assert cited_ids("M4-M10 and R3–R7, not H01 or E501; S2, P1-3.") == [
        *(f"M{n}" for n in range(4, 11)),
        *(f"R{n}" for n in range(3, 8)),
        "S2",
        "P1",
        "P2",
        "P3",
    ]


def test_no_error_message_carries_a_rule_id() -> None:
    """Messages say what was wrong and what to do; an id means nothing to whoever reads them."""
    offenders = []
    for path in sorted((ROOT / "picoflow").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and not re.fullmatch(r"[A-Z][0-9]+", node.value)  # a label such as "G2", no text
                and re.search(RULE, node.value)
            ):
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert offenders == []
