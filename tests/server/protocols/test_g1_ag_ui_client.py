"""G1, G3 with AG-UI's real client: `@ag-ui/client`'s HttpAgent against a live server.

One Node process (`ag_ui_client.mjs`) holds the whole conversation and reports; the tests
read that report. HttpAgent verifies every event's order itself, so a run that fails the
protocol fails here as a `failure`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from protocol_kit import app_for, live_server, node_report


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    _, app = app_for()
    with live_server(app) as server:
        yield node_report("ag_ui_client.mjs", server.url)


def test_g1_httpagent_runs_a_turn_and_keeps_the_tool_call_and_its_result(
    report: dict[str, Any],
) -> None:
    booked = report["booked"]
    assert booked["failure"] is None and booked["errors"] == []
    assert booked["types"][0] == "RUN_STARTED" and booked["types"][-1] == "RUN_FINISHED"
    assert {"STEP_STARTED", "STEP_FINISHED", "STATE_SNAPSHOT", "TOOL_CALL_RESULT"} <= set(
        booked["types"]
    )
    roles = [(m["role"], m["content"], m["toolCalls"]) for m in booked["messages"]]
    assert roles == [
        ("user", "book Inn 100", []), ("assistant", None, ["book"]),
        ("tool", "Booked Inn for 100.", []), ("assistant", "Result: Booked Inn for 100.", []),
    ]  # fmt: skip
    assert booked["state"]["step"] == "BookStep" and booked["state"]["completed"] is False


def test_g1_httpagent_sees_the_approval_as_an_interrupt_and_resumes_it(
    report: dict[str, Any],
) -> None:
    asked, approved = report["asked"], report["approved"]
    assert asked["failure"] is None and len(asked["interrupts"]) == 1
    interrupt = asked["interrupts"][0]
    assert interrupt["reason"] == "tool_approval" and interrupt["toolCallId"] == interrupt["id"]
    assert asked["state"]["pendingApprovals"] == [interrupt["id"]]
    assert approved["failure"] is None and approved["interrupts"] == []
    results = [m for m in approved["messages"] if m["role"] == "tool"]
    assert (results[-1]["toolCallId"], results[-1]["content"]) == (
        interrupt["id"],
        "Booked Big for 900.",
    )
    assert approved["messages"][-1]["content"] == "Result: Booked Big for 900."
    assert approved["state"]["session"] == report["booked"]["state"]["session"]  # one thread


def test_g3_httpagent_gets_run_error_and_4xx_refusals(report: dict[str, Any]) -> None:
    refused, unknown, bad = report["refused"], report["unknown"], report["badThread"]
    assert refused["types"] == ["RUN_STARTED", "RUN_ERROR"]
    assert refused["errors"][0]["code"] == "invalid_request"
    assert unknown["types"] == [] and "404" in unknown["failure"]
    assert bad["types"] == [] and "400" in bad["failure"]
