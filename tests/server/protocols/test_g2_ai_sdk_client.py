"""G2, G3 with the AI SDK's real client: `ai`'s DefaultChatTransport and readUIMessageStream.

One Node process (`ai_sdk_client.mjs`) holds the conversation as useChat would and reports the
UIMessages the SDK built from picoflow's stream; the tests read that report.
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
        yield node_report("ai_sdk_client.mjs", server.url)


def parts(reply: dict[str, Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = reply["message"]["parts"]
    return parts


def test_g2_the_sdk_builds_text_tool_step_and_state_parts(report: dict[str, Any]) -> None:
    booked = report["booked"]
    assert booked["failure"] is None and booked["errors"] == []
    assert [p["type"] for p in parts(booked)] == ["data-step", "tool-book", "text", "data-state"]
    step, tool, text, state = parts(booked)
    assert step["data"] == {"step": "BookStep", "from": None}
    assert (tool["state"], tool["input"], tool["output"]) == (
        "output-available", {"hotel": "Inn", "total": 100}, "Booked Inn for 100.",
    )  # fmt: skip
    assert (text["text"], text["state"]) == ("Result: Booked Inn for 100.", "done")
    assert state["data"]["step"] == "BookStep" and state["data"]["completed"] is False


def test_g2_an_approval_is_a_part_awaiting_approval_that_the_answer_completes(
    report: dict[str, Any],
) -> None:
    asked, approved = report["asked"], report["approved"]
    waiting = next(p for p in parts(asked) if p["type"] == "tool-book")
    assert waiting["state"] == "approval-requested" and waiting["approval"]["id"]
    assert approved["failure"] is None and approved["errors"] == []
    assert approved["message"]["id"] == asked["message"]["id"]  # the same message, continued
    done = next(p for p in parts(approved) if p["type"] == "tool-book")
    assert (done["state"], done["output"]) == ("output-available", "Booked Big for 900.")
    assert parts(approved)[-1] == {
        "type": "text",
        "text": "Result: Booked Big for 900.",
        "state": "done",
    }
    state = next(p for p in parts(approved) if p["type"] == "data-state")
    assert state["data"]["pendingApprovals"] == []


def test_g3_the_sdk_sees_an_error_chunk_and_a_4xx(report: dict[str, Any]) -> None:
    failed, unknown = report["failed"], report["unknown"]
    assert failed["errors"] == [
        "The message is empty. Send the user's text; an empty message only starts a new session."
    ]
    assert unknown["message"] is None and '"code":"unknown_flow"' in unknown["failure"]


def test_g3_o5_the_sdk_reconnect_finds_nothing_running_after_the_reply(
    report: dict[str, Any],
) -> None:
    assert report["reconnected"] is None  # 204: the SDK's "no active stream"
