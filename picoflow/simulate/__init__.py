"""Compaction simulator: replay stored sessions under other compaction settings, offline.

People tune `min_messages`, `recent_messages` and `max_tokens` by guesswork.
This module replays the real history of stored sessions (the live document plus the archive,
M9; with `revisions=True` the kept revisions' current line too, W1) under each candidate
setting and reports, per setting, the prompt tokens every model call would have sent, the
summaries and evicted ranges, settings that never trigger, coverage gaps and requests a
provider would refuse (M5). No LLM is called unless you pass a summary model:
summaries are stand-in texts of a chosen size.

    reports = await simulate_compaction(
        store, [session_id], [None, SummaryConfig(16, 8), SummaryConfig(32, 4)]
    )
    print(reports[0].table())

or, from a shell, `python -m picoflow.simulate --store sqlite:///sessions.db --session ID
--setting off --setting 16/8 --setting 32/4`. See docs/compaction-simulator.md.
"""

from __future__ import annotations

from collections.abc import Sequence

from picoflow.simulate._checks import Finding
from picoflow.simulate._history import NamespaceHistory
from picoflow.simulate._replay import DEFAULT_SUMMARY_TOKENS, Eviction, ModelCall
from picoflow.simulate._simulation import (
    SettingResult,
    SimulationReport,
    load_history,
    parse_setting,
    simulate_compaction,
    simulate_document,
)

__all__ = [
    "DEFAULT_SUMMARY_TOKENS",
    "Eviction",
    "Finding",
    "ModelCall",
    "NamespaceHistory",
    "SettingResult",
    "SimulationReport",
    "load_history",
    "main",
    "parse_setting",
    "simulate_compaction",
    "simulate_document",
]


def main(argv: Sequence[str] | None = None) -> int:
    """The command line (`python -m picoflow.simulate --help`); returns the exit code."""
    from picoflow.simulate.__main__ import (
        run_cli,  # imported on demand: `python -m` runs that module itself
    )

    return run_cli(argv)
