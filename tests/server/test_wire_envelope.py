"""The turn envelope built straight as JSON is the model's envelope (H1, issue 39).

`wire_envelope` skips validating the engine's typed result into `RunEnvelope` and dumping it
again; these cases pin that the object on the wire stays exactly the model's `to_wire()`.
"""

from __future__ import annotations

import pytest

from picoflow import TurnResult
from picoflow.server._schemas import envelope_of, wire_envelope

CASES = [
    TurnResult(session_id="s1", message="Hi", success=True, completed=False, step="Chat"),
    TurnResult(session_id=None, message="", success=True, completed=True, step=None),
    TurnResult(
        session_id="s2",
        message="# Résumé ✓",
        success=True,
        completed=False,
        step="Present",
        content_type="text/markdown",
    ),
    TurnResult(
        session_id="s3",
        message="Waiting",
        success=True,
        completed=False,
        step="Book",
        pending_approvals=[{"id": "a1", "tool": "book", "args": {"n": None}}],
    ),
]


@pytest.mark.parametrize("result", CASES, ids=["chat", "ended", "markdown", "approvals"])
def test_h1_the_wire_envelope_is_the_models_envelope(result: TurnResult) -> None:
    wire = wire_envelope(result)
    expected = envelope_of(result).to_wire()
    assert wire == expected
    assert list(wire) == list(expected)  # the same key order on the wire
