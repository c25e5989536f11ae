"""What a scenario run found, turn by turn, and the scores over it (X7).

Scores follow the agent-evaluation habits users know from Google's ADK: the share of turns that
went as expected, whether the step path matched, the tool trajectory as an exact and an
in-order match (ADK's EXACT and IN_ORDER: in order, the expected calls appear in the actual
ones in the same order, others may come between), the goal rate of simulated users, and turn
latency at the 50th and 95th percentile.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["JudgeVerdict", "TurnReport", "ScenarioReport", "SuiteReport", "scores_of"]


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """A model's opinion of one reply (X3)."""

    passed: bool
    score: float
    reason: str


@dataclass(slots=True)
class TurnReport:
    """One turn: what was sent, what came back, and each check that failed."""

    number: int
    input: str
    label: str | None
    reply: str
    step: str | None
    completed: bool
    tools: list[str]
    latency_ms: float
    failures: list[str] = field(default_factory=list)
    judge: JudgeVerdict | None = None
    expected_step: str | None = None
    expected_tools: list[str] | None = None

    @property
    def passed(self) -> bool:
        """No check failed."""
        return not self.failures

    def line(self) -> str:
        """The PASS/FAIL line the runner prints."""
        said = self.input if len(self.input) <= 40 else self.input[:37] + "..."
        title = f"turn {self.number} " + (repr(self.label) if self.label else f"said {said!r}")
        where = f"({self.step}, {self.latency_ms:.0f} ms)"
        if self.passed:
            verdict = f"; judge: {self.judge.reason}" if self.judge is not None else ""
            return f"PASS {title} {where}{verdict}"
        return f"FAIL {title} {where}: " + "; ".join(self.failures)


@dataclass(slots=True)
class ScenarioReport:
    """One run of one scenario."""

    source: str
    flow_name: str
    name: str | None = None
    session_id: str | None = None
    turns: list[TurnReport] = field(default_factory=list)
    simulated: bool = False
    goal_reached: bool | None = None
    turns_to_goal: int | None = None
    goal_failure: str | None = None
    run: int = 1

    @property
    def passed(self) -> bool:
        """Every turn passed, and a simulated user reached the goal."""
        return all(turn.passed for turn in self.turns) and self.goal_reached is not False

    @property
    def failures(self) -> list[str]:
        """Every failure line, turn by turn, then the goal's."""
        lines = [f"turn {t.number}: {f}" for t in self.turns for f in t.failures]
        if self.goal_reached is False and self.goal_failure:
            lines.append(f"goal: {self.goal_failure}")
        return lines

    @property
    def scores(self) -> dict[str, Any]:
        """The X7 scores of this run."""
        return scores_of([self])

    def summary(self) -> str:
        """One line for the end of a scenario's output."""
        passed = sum(turn.passed for turn in self.turns)
        head = "PASS" if self.passed else "FAIL"
        text = f"{head} {self.source}: {passed}/{len(self.turns)} turns as expected"
        if self.simulated:
            text += (
                f", goal reached in {self.turns_to_goal} turns"
                if self.goal_reached
                else f", goal not reached: {self.goal_failure}"
            )
        return text


@dataclass(slots=True)
class SuiteReport:
    """Every run of every scenario of one runner invocation."""

    runs: list[ScenarioReport] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every run passed."""
        return all(run.passed for run in self.runs)

    @property
    def scores(self) -> dict[str, Any]:
        """The X7 scores over the whole suite."""
        return scores_of(self.runs)

    def pass_rates(self) -> dict[str, float]:
        """Per scenario source, the share of its runs that passed (for `--repeat`)."""
        totals: dict[str, list[bool]] = {}
        for run in self.runs:
            totals.setdefault(run.source, []).append(run.passed)
        return {source: sum(results) / len(results) for source, results in totals.items()}


def scores_of(runs: Sequence[ScenarioReport]) -> dict[str, Any]:
    """Turns as expected, step path, tool trajectory, goal rate and latency over some runs."""
    turns = [turn for run in runs for turn in run.turns]
    with_step = [t for t in turns if t.expected_step is not None]
    with_tools = [t for t in turns if t.expected_tools is not None]
    simulated = [run for run in runs if run.simulated]
    latencies = sorted(t.latency_ms for t in turns)
    return {
        "turns": len(turns),
        "turns_as_expected": _share(sum(t.passed for t in turns), len(turns)),
        "step_path_match": _share(
            sum(t.step == t.expected_step for t in with_step), len(with_step)
        ),
        "tool_trajectory_exact": _share(
            sum(t.tools == t.expected_tools for t in with_tools), len(with_tools)
        ),
        "tool_trajectory_in_order": _share(
            sum(in_order(t.expected_tools or [], t.tools) for t in with_tools), len(with_tools)
        ),
        "goal_rate": _share(sum(bool(r.goal_reached) for r in simulated), len(simulated)),
        "turns_to_goal": _mean([r.turns_to_goal for r in simulated if r.goal_reached]),
        "latency_p50_ms": _percentile(latencies, 50),
        "latency_p95_ms": _percentile(latencies, 95),
    }


def in_order(expected: Sequence[str], actual: Sequence[str]) -> bool:
    """The expected calls appear in `actual` in the same order, maybe with others between.

    >>> in_order(["search", "book"], ["search", "show", "book"])
    True
    >>> in_order(["book", "search"], ["search", "book"])
    False
    """
    remaining = iter(actual)
    return all(any(name == got for got in remaining) for name in expected)


def _share(count: int, total: int) -> float | None:
    return None if total == 0 else round(count / total, 4)


def _mean(values: Sequence[int | None]) -> float | None:
    numbers = [v for v in values if v is not None]
    return None if not numbers else round(sum(numbers) / len(numbers), 2)


def _percentile(ordered: Sequence[float], percent: int) -> float | None:
    """Nearest-rank percentile: the smallest value with `percent`% of values at or below it."""
    if not ordered:
        return None
    rank = max(1, math.ceil(percent / 100 * len(ordered)))
    return round(ordered[rank - 1], 2)
