"""docs/demo.md stays true: its transcript is regenerated and its Python example is run."""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from demo.cli import main

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "demo.md"
TRANSCRIPT = re.compile(r"<!-- transcript: (?P<args>.+?) -->\n```text\n(?P<text>.*?)\n```", re.S)
PYTHON = re.compile(r"^```python\n(?P<code>.*?)^```$", re.S | re.M)
CONFIRMATION = re.compile(r"HF-\d{6}")
"""A confirmation number is unique to its booking (issue 19), so it differs on every run."""


def _numbers_masked(text: str) -> str:
    return CONFIRMATION.sub("HF-NNNNNN", text)


def test_transcript_is_what_the_script_prints(monkeypatch, capsys) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # the default model, as on a machine without a key
    monkeypatch.chdir(REPO)
    match = TRANSCRIPT.search(PAGE.read_text(encoding="utf-8"))
    assert match is not None, "docs/demo.md lost its <!-- transcript: ... --> block"
    assert main(shlex.split(match["args"])) == 0
    printed = capsys.readouterr().out.rstrip("\n")
    assert _numbers_masked(printed) == _numbers_masked(match["text"]), (
        "docs/demo.md's transcript is stale: run `python -m demo " + match["args"] + "` and "
        "paste its output into the block."
    )
    for shown in ("| Price | Columbia Slough Lodge |", "Your confirmation number is HF-"):
        assert shown in printed


@pytest.mark.parametrize("index", range(len(PYTHON.findall(PAGE.read_text(encoding="utf-8")))))
def test_python_examples_print_what_the_page_says(index, monkeypatch, tmp_path) -> None:
    monkeypatch.chdir(tmp_path)
    code = PYTHON.findall(PAGE.read_text(encoding="utf-8"))[index]
    expected = [line[3:] for line in code.splitlines() if line.startswith("#> ")]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(code, f"docs/demo.md[{index}]", "exec"), {"__name__": "__docs__"})
    assert output.getvalue().splitlines() == expected
