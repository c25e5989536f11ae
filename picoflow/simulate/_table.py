"""Plain-text rendering of a simulation report: one row per setting, then findings and notes.

Plain text because the report is read in a terminal, a notebook or a CI log; the numbers are
also on the report's objects for anyone who wants a different format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from picoflow.simulate._replay import is_model_reply, starts_turn

if TYPE_CHECKING:
    from picoflow.simulate._history import NamespaceHistory
    from picoflow.simulate._simulation import SettingResult, SimulationReport

__all__ = ["format_details", "format_table"]

_HEADERS = [
    "setting",
    "calls",
    "tokens",
    "max/call",
    "max/turn",
    "summaries",
    "evicted",
    "summary tokens",
]


def format_table(report: SimulationReport) -> str:
    """The namespaces, the comparison table, then every finding and note as a sentence."""
    lines = [_describe(history) for history in report.histories.values()]
    headers = list(_HEADERS)
    price = report.price_per_million_tokens
    if price is not None:
        headers.append("cost")
    headers.append("findings")
    rows = [_row(result, report) for result in report.results]
    lines += _aligned([headers, *rows])
    findings = [
        f"- {result.label}: {finding.message}"
        for result in report.results
        for finding in result.findings
    ]
    if findings:
        lines += ["findings:", *findings]
    if report.notes:
        lines += ["notes:", *(f"- {note}" for note in report.notes)]
    return "\n".join(lines)


def format_details(report: SimulationReport) -> str:
    """Evicted ranges per setting and namespace, `first..last@turn` (the turn that ended)."""
    lines = ["evicted ranges (first..last@turn):"]
    for result in report.results:
        for namespace in report.histories:
            ranges = [
                f"{e.first}..{e.last}@{e.turn}"
                for e in result.evictions
                if e.namespace == namespace
            ]
            lines.append(f"{result.label} {namespace}: {', '.join(ranges) or 'none'}")
    return "\n".join(lines)


def count_turns(history: NamespaceHistory) -> int:
    """Turns of a namespace, by the replay's rule (a human message not after tool results)."""
    turns = 0
    for segment in history.segments():
        previous = None
        for _, message in segment:
            if turns == 0 or starts_turn(message, previous):
                turns += 1
            previous = message
    return turns


def _describe(history: NamespaceHistory) -> str:
    calls = sum(1 for _, message in history.messages if is_model_reply(message))
    known = len(history.messages)
    sources = [f"{history.from_archive} from the archive"] if history.archive_read else []
    if history.from_revisions:
        sources.append(f"{history.from_revisions} from kept revisions")
    source = f" ({', '.join(sources)})" if sources else ""
    real = history.summary_generation
    return (
        f"namespace '{history.namespace}': {known} messages{source}, {count_turns(history)} "
        f"turns, {calls} model calls; the real run wrote {real} "
        f"summar{'y' if real == 1 else 'ies'}"
    )


def _row(result: SettingResult, report: SimulationReport) -> list[str]:
    row = [
        result.label,
        str(len(result.calls)),
        str(result.total_tokens),
        str(result.max_call_tokens),
        str(result.max_turn_tokens),
        str(result.summaries),
        str(result.evicted),
        str(result.summary_input_tokens + result.summary_output_tokens),
    ]
    price = report.price_per_million_tokens
    if price is not None:
        row.append(f"${result.cost(price, report.summary_price_per_million_tokens):.4f}")
    return [*row, _short_findings(result)]


def _short_findings(result: SettingResult) -> str:
    parts = []
    if result.idle:
        parts.append("never compacts")
    if result.churn:
        parts.append("compacts every turn")
    for name, found in (("violation", result.violations), ("gap", result.coverage_gaps)):
        if found:
            parts.append(f"{len(found)} {name}{'s' if len(found) != 1 else ''}")
    return ", ".join(parts) or "-"


def _aligned(rows: list[list[str]]) -> list[str]:
    """Left-align the first and last columns, right-align the numbers between them."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    last = len(widths) - 1
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if i in (0, last) else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  ".join(cells).rstrip())
    return lines
