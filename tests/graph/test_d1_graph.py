"""D1: decision steps in the flow diagram — a rhombus each, with the moves of `on_decision`."""

from __future__ import annotations

from support.decision_flows import support_flow

from picoflow.graph import Move, flow_graph


def test_d1_decision_steps_are_rhombuses_and_their_on_decision_moves_are_arrows() -> None:
    flow = support_flow()()
    graph = flow_graph(flow)
    assert graph.decision_steps == frozenset({"RouterStep", "ReadinessStep"})
    assert Move("RouterStep", "BillingStep", "on_decision", "go") in graph.moves
    assert Move("ReadinessStep", None, "on_decision", "finish") in graph.moves
    text = flow.graph()
    assert "    RouterStep{RouterStep}" in text
    assert "    BillingStep[BillingStep]" in text
    assert "    class ReadinessStep,RouterStep decision" in text
    assert "RouterStep -->|on_decision| BillingStep" in text
