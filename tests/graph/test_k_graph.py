"""K1, K6 in picoflow.graph: tools that need approval and handoffs lead to a `person` node."""

from __future__ import annotations

from support.approval_flows import booking_flow

from picoflow.graph import flow_graph


def test_k1_k6_the_graph_shows_approvals_and_the_handoff() -> None:
    flow = booking_flow()()

    assert flow_graph(flow).approvals == (("BookStep", "book"),)
    assert flow.graph() == (
        "flowchart TD\n"
        "    %% BookingFlow, drawn by picoflow.graph\n"
        "    __start__((start))\n"
        "    BookStep[BookStep]\n"
        "    __person__((person))\n"
        "    __start__ --> BookStep\n"
        "    BookStep -.->|handoff_to_person: handoff, book: approval| __person__\n"
        "    classDef terminal fill:#f1f3f5,stroke:#868e96\n"
        "    class __start__ terminal\n"
        "    classDef person fill:#e7f5ff,stroke:#1971c2\n"
        "    class __person__ person\n"
    )
    assert ("BookStep", "__person__") in flow_graph(flow).edges()
