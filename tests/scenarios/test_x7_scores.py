"""X7: scores per scenario and per suite — turns, step path, tool trajectory, goal, latency."""

from __future__ import annotations

from picoflow.scenarios import ScenarioReport, SuiteReport, TurnReport
from picoflow.scenarios._report import in_order


def turn(
    number: int,
    step: str,
    tools: list[str],
    expected: list[str] | None,
    ms: float,
    expected_step: str | None = None,
    failures: list[str] | None = None,
) -> TurnReport:
    return TurnReport(
        number=number, input="x", label=None, reply="", step=step, completed=False,
        tools=tools, latency_ms=ms, failures=failures or [], expected_step=expected_step,
        expected_tools=expected,
    )  # fmt: skip


def test_x7_tool_trajectory_in_order_is_adks() -> None:
    assert in_order(["search", "book"], ["search", "show", "book"])
    assert not in_order(["book", "search"], ["search", "book"])
    assert in_order([], ["anything"])
    assert not in_order(["search"], [])


def test_x7_scores_of_a_scenario_and_a_suite() -> None:
    fixed = ScenarioReport(source="a", flow_name="F", turns=[
        turn(1, "A", [], [], 10, "A"),
        turn(2, "B", ["search", "show", "book"], ["search", "book"], 30, "B",
             ["tools: expected ['search', 'book'], got ['search', 'show', 'book']"]),
        turn(3, "B", ["book"], ["book"], 20, "C", ["step: expected 'C', got 'B'"]),
        turn(4, "B", [], None, 40),
    ])  # fmt: skip
    assert fixed.scores == {
        "turns": 4,
        "turns_as_expected": 0.5,
        "step_path_match": 0.6667,
        "tool_trajectory_exact": 0.6667,
        "tool_trajectory_in_order": 1.0,
        "goal_rate": None,
        "turns_to_goal": None,
        "latency_p50_ms": 20,
        "latency_p95_ms": 40,
    }
    reached = ScenarioReport(source="b", flow_name="F", simulated=True, goal_reached=True,
                             turns_to_goal=2, turns=[turn(1, "A", [], None, 5)] * 2)  # fmt: skip
    missed = ScenarioReport(source="c", flow_name="F", simulated=True, goal_reached=False,
                            goal_failure="not reached in 1 turns",
                            turns=[turn(1, "A", [], None, 5)])  # fmt: skip
    suite = SuiteReport(runs=[fixed, reached, missed])
    assert suite.scores["goal_rate"] == 0.5 and suite.scores["turns_to_goal"] == 2
    assert suite.scores["turns"] == 7 and suite.scores["latency_p50_ms"] == 10
    assert suite.pass_rates() == {"a": 0.0, "b": 1.0, "c": 0.0}
    assert missed.summary() == (
        "FAIL c: 1/1 turns as expected, goal not reached: not reached in 1 turns"
    )
    assert not suite.passed and SuiteReport().scores["latency_p95_ms"] is None
