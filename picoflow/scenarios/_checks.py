"""The deterministic checks of one turn: what the turn did against what `expect` says (X1).

Each failed check is one line naming the field, and for state the dotted path, with both the
expected and the actual value, so a failing turn explains itself in a terminal or a CI log.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pydash

from picoflow.scenarios._schema import DecisionCheck, Expect, StateMatcher, Turn

__all__ = ["Observed", "check_turn", "check_state", "read_state", "describe_matcher"]


@dataclass(slots=True)
class Observed:
    """What one turn did, as a target (in-process engine or live server) saw it."""

    success: bool
    message: str
    session_id: str | None
    step: str | None
    completed: bool
    tools: list[str] = field(default_factory=list)
    warnings: list[str] | None = field(default_factory=list)  # None: the target cannot tell
    latency_ms: float = 0.0
    error: str | None = None
    decisions: list[dict[str, Any]] = field(default_factory=list)  # D1: the "decision" events


def check_turn(turn: Turn, seen: Observed, doc: Mapping[str, Any] | None) -> list[str]:
    """Every failed check of the turn, in a fixed order; empty when the turn went as expected."""
    if not seen.success:
        return [f"the turn failed: {seen.message}"]
    failures: list[str] = []
    completed = turn.expected_completed
    if completed is not None and seen.completed != completed:
        failures.append(f"completed: expected {completed}, got {seen.completed}")
    expect = turn.expect or Expect()
    if expect.step is not None and seen.step != expect.step:
        failures.append(f"step: expected {expect.step!r}, got {seen.step!r}")
    failures.extend(_reply_failures(expect, seen.message))
    if expect.tools is not None and seen.tools != expect.tools:
        failures.append(f"tools: expected {expect.tools}, got {seen.tools}")
    failures.extend(_warning_failures(expect.warnings, seen.warnings))
    if expect.decisions is not None:
        failures.extend(_decision_failures(expect.decisions, seen.decisions))
    if expect.state:
        failures.extend(check_state(expect.state, doc))
    return failures


def check_state(checks: Mapping[str, Any], doc: Mapping[str, Any] | None) -> list[str]:
    """The failed state checks against a stored session document (None: it cannot be read)."""
    if doc is None:
        return [
            "state: the session document cannot be read here; against a live server (--url) "
            "pass the server's store with --store so state can be checked"
        ]
    failures = []
    for path, expected in checks.items():
        found, value = read_state(doc, path)
        if not _holds(expected, found, value):
            shown = repr(value) if found else "nothing (the path is absent)"
            failures.append(f"state {path}: expected {describe_matcher(expected)}, got {shown}")
    return failures


def read_state(doc: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """(found, value) at 'StepName.dotted.path' of the document's durable step state."""
    step, _, rest = path.partition(".")
    state = ((doc.get("steps") or {}).get(step) or {}).get("state") or {}
    sentinel = object()
    value = pydash.get(state, rest, sentinel)
    return (value is not sentinel), (None if value is sentinel else value)


def describe_matcher(expected: Any) -> str:
    """How an expected value reads in a failure line."""
    if not isinstance(expected, StateMatcher):
        return repr(expected)
    parts = [f"{key} {getattr(expected, key)!r}" for key in sorted(expected.model_fields_set)]
    return " and ".join(parts)


def _holds(expected: Any, found: bool, value: Any) -> bool:
    if not isinstance(expected, StateMatcher):
        return found and value == expected
    return all(_one(key, getattr(expected, key), found, value) for key in expected.model_fields_set)


def _one(key: str, wanted: Any, found: bool, value: Any) -> bool:  # noqa: C901 - one per matcher
    present = found and value is not None
    if key == "present":
        return present == bool(wanted)
    if key == "absent":
        return (not present) == bool(wanted)
    if key == "equals":
        return found and value == wanted
    if key == "contains":
        return _contains(value, wanted)
    if key == "matches":
        return isinstance(value, str) and re.search(wanted, value) is not None
    if not _is_number(value):
        return False
    return bool(value >= wanted if key == "min" else value <= wanted)


def _contains(value: Any, wanted: Any) -> bool:
    if isinstance(value, str):
        return isinstance(wanted, str) and wanted in value
    if isinstance(value, (list, dict)):
        return wanted in value
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _reply_failures(expect: Expect, reply: str) -> list[str]:
    failures = []
    for pattern in expect.reply or []:
        if re.search(pattern, reply) is None:
            failures.append(f"reply: expected a match for {pattern!r}, got {_short(reply)!r}")
    for pattern in expect.not_reply or []:
        if re.search(pattern, reply) is not None:
            failures.append(f"not_reply: {pattern!r} matched the reply {_short(reply)!r}")
    return failures


def _warning_failures(patterns: list[str] | None, warnings: list[str] | None) -> list[str]:
    if patterns is None:
        return []
    if warnings is None:
        return ["warnings: a live server's replies carry no warnings; check them in-process"]
    if not patterns and warnings:
        return [f"warnings: expected none, got {warnings}"]
    return [
        f"warnings: expected one matching {pattern!r}, got {warnings}"
        for pattern in patterns
        if not any(re.search(pattern, warning) for warning in warnings)
    ]


def _short(text: str, limit: int = 160) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _decision_failures(expected: list[DecisionCheck], seen: list[dict[str, Any]]) -> list[str]:
    """Each expected decision against the turn's decision at the same place (D1)."""
    if len(expected) != len(seen):
        made = [f"{d.get('step')} -> {d.get('route')}" for d in seen]
        return [f"decisions: expected {len(expected)}, got {len(seen)} {made}"]
    failures = []
    for number, (check, decision) in enumerate(zip(expected, seen, strict=True), start=1):
        where = f"decision {number} ({decision.get('step')})"
        for key in ("step", "route", "recovered"):
            wanted = getattr(check, key)
            if wanted is not None and decision.get(key) != wanted:
                failures.append(f"{where} {key}: expected {wanted!r}, got {decision.get(key)!r}")
        answers = decision.get("answers") or {}
        for question, wanted in (check.answers or {}).items():
            found = question in answers
            value = _headline(answers[question]) if found else None
            if not _holds(wanted, found, value):
                shown = repr(value) if found else "no answer"
                failures.append(
                    f"{where} answer {question}: expected {describe_matcher(wanted)}, got {shown}"
                )
    return failures


def _headline(answer: Any) -> Any:
    """What an answer says in one value: a choice's label, a score, a noul's probability."""
    if not isinstance(answer, Mapping):
        return answer
    kind = answer.get("type")
    return answer.get(kind) if isinstance(kind, str) and kind in answer else answer
