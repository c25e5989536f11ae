"""Report files (X2): Markdown for people, JSON for programs, JUnit XML for CI dashboards.

The format follows the file's suffix. In JUnit XML each scenario run is a test case named after
its file (and run number under `--repeat`), and a failing one lists its failure lines.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

from picoflow.scenarios._report import ScenarioReport, SuiteReport

__all__ = ["write_report", "REPORT_SUFFIXES", "as_json"]

REPORT_SUFFIXES = (".md", ".json", ".xml")


def write_report(suite: SuiteReport, path: str | Path) -> None:
    """Write `suite` to `path` in the format its suffix names."""
    target = Path(path)
    writers = {".md": as_markdown, ".json": _json_text, ".xml": as_junit}
    writer = writers.get(target.suffix)
    if writer is None:
        raise ValueError(f"Cannot write a report to {str(path)!r}: name a .md, .json or .xml file.")
    target.write_text(writer(suite), encoding="utf-8")


def as_json(suite: SuiteReport) -> dict[str, Any]:
    """The whole suite as plain JSON data."""
    return {
        "passed": suite.passed,
        "scores": suite.scores,
        "pass_rates": suite.pass_rates(),
        "runs": [{**asdict(run), "passed": run.passed, "scores": run.scores} for run in suite.runs],
    }


def _json_text(suite: SuiteReport) -> str:
    return json.dumps(as_json(suite), indent=2, ensure_ascii=False) + "\n"


def as_markdown(suite: SuiteReport) -> str:
    """A summary table, the scores, then each failing run's failure lines."""
    lines = ["# Scenario report", "", "| scenario | run | result | turns as expected |"]
    lines.append("| --- | --- | --- | --- |")
    for run in suite.runs:
        passed = sum(turn.passed for turn in run.turns)
        result = "PASS" if run.passed else "FAIL"
        lines.append(f"| {run.source} | {run.run} | {result} | {passed}/{len(run.turns)} |")
    lines += ["", "## Scores", "", "| score | value |", "| --- | --- |"]
    lines += [f"| {name} | {_shown(value)} |" for name, value in suite.scores.items()]
    rates = suite.pass_rates()
    if any(len([r for r in suite.runs if r.source == s]) > 1 for s in rates):
        lines += ["", "## Pass rates", ""]
        lines += [f"- {source}: {rate:.0%}" for source, rate in rates.items()]
    failing = [run for run in suite.runs if not run.passed]
    if failing:
        lines += ["", "## Failures"]
        for run in failing:
            lines += ["", f"### {run.source} (run {run.run})", ""]
            lines += [f"- {failure}" for failure in run.failures]
    return "\n".join(lines) + "\n"


def as_junit(suite: SuiteReport) -> str:
    """JUnit XML: one testsuite, one testcase per scenario run."""
    failures = sum(not run.passed for run in suite.runs)
    root = ElementTree.Element(
        "testsuite",
        name="picoflow scenarios",
        tests=str(len(suite.runs)),
        failures=str(failures),
        time=_seconds(sum(t.latency_ms for r in suite.runs for t in r.turns)),
    )
    for run in suite.runs:
        root.append(_case(run))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _case(run: ScenarioReport) -> ElementTree.Element:
    name = run.source if run.run == 1 else f"{run.source} [run {run.run}]"
    case = ElementTree.Element(
        "testcase",
        classname=run.flow_name,
        name=name,
        time=_seconds(sum(turn.latency_ms for turn in run.turns)),
    )
    if not run.passed:
        failure = ElementTree.SubElement(case, "failure", message=run.failures[0][:200])
        failure.text = "\n".join(run.failures)
    output = ElementTree.SubElement(case, "system-out")
    output.text = "\n".join(turn.line() for turn in run.turns)
    return case


def _seconds(milliseconds: float) -> str:
    return f"{milliseconds / 1000:.3f}"


def _shown(value: Any) -> str:
    return "n/a" if value is None else str(value)
