"""Errors that must fail the whole turn even when raised inside a tool handler.

The tool-call boundary (R6) turns a handler's exception into a tool result the model reads. A
nested run (V2, V3) is different: a child that fails, or that tries to move the cursor, is a
failed turn (P3), not a hint for the parent's model. Such exceptions are marked here, so the
boundary lets them through with their own type and message.
"""

from __future__ import annotations

__all__ = ["fail_turn", "fails_turn"]

_MARK = "__picoflow_fails_turn__"


def fail_turn(exc: BaseException) -> BaseException:
    """Mark `exc` so that no tool boundary swallows it, and return it (to raise)."""
    setattr(exc, _MARK, True)
    return exc


def fails_turn(exc: BaseException) -> bool:
    """Whether `exc` was marked with `fail_turn`."""
    return getattr(exc, _MARK, False) is True
