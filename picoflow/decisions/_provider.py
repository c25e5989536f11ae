"""What a decision provider is asked and answers, its options, and the contexts hooks get (D2).

A provider is any object with an `id` and an async `decide(request, *, timeout)`; it may add
`should_retry(error)` to say which of its errors are transient (by default: timeouts, dropped
connections, HTTP 408, 429 and 5xx, as for chat models). Providers are registered on the
engine (`FlowEngine(decision_providers=[...])`) and chosen per step by the options, resolved
as framework defaults <- `Flow.config_decision()` <- `step.use_decision(...)`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "DecisionOptions",
    "DEFAULT_OPTIONS",
    "DecisionRequest",
    "DecisionResult",
    "DecisionProvider",
    "DecisionContext",
    "DecisionErrorContext",
    "merged_options",
    "checked_options",
    "result_of",
]


@dataclass(frozen=True, slots=True)
class DecisionOptions:
    """How a decision step decides: which provider and model, one attempt's deadline, retries.

    Each field left None inherits: the step's `use_decision(...)` over the flow's
    `config_decision()` over the defaults (the only registered provider, the provider's own
    default model, 30 seconds, no retries). `max_retries` counts extra attempts (2: up to
    three), and only errors the provider calls transient are retried.
    """

    provider: str | None = None
    model: str | None = None
    timeout: float | None = None
    max_retries: int | None = None


DEFAULT_OPTIONS = DecisionOptions(provider=None, model=None, timeout=30.0, max_retries=0)


def checked_options(where: str, options: Any) -> DecisionOptions:
    """`options` as DecisionOptions (a dict of its fields is accepted), or a ValueError."""
    if options is None:
        return DecisionOptions()
    if isinstance(options, Mapping):
        unknown = sorted(set(options) - set(DecisionOptions.__slots__))
        if unknown:
            raise ValueError(
                f"{where}: unknown decision option {', '.join(unknown)}; the options are "
                "provider, model, timeout and max_retries."
            )
        options = DecisionOptions(**options)
    if not isinstance(options, DecisionOptions):
        raise ValueError(f"{where}: return DecisionOptions(...) or None, got {options!r}.")
    _check_fields(where, options)
    return options


def _check_fields(where: str, options: DecisionOptions) -> None:
    for name in ("provider", "model"):
        value = getattr(options, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ValueError(f"{where}: {name} must be a non-empty string, got {value!r}.")
    timeout = options.timeout
    number = isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
    if timeout is not None and not (number and math.isfinite(timeout) and timeout > 0):
        raise ValueError(f"{where}: timeout must be a number of seconds > 0, got {timeout!r}.")
    retries = options.max_retries
    counted = isinstance(retries, int) and not isinstance(retries, bool)
    if retries is not None and not (counted and 0 <= retries <= 10):
        raise ValueError(f"{where}: max_retries must be an int from 0 to 10, got {retries!r}.")


def merged_options(*layers: DecisionOptions) -> DecisionOptions:
    """The options in force: each later layer's fields that are set win over earlier ones."""
    merged: dict[str, Any] = {}
    for layer in layers:
        for name in DecisionOptions.__slots__:
            value = getattr(layer, name)
            if value is not None:
                merged[name] = value
    return DecisionOptions(**merged)


@dataclass(frozen=True, slots=True)
class DecisionRequest:
    """What a provider is asked.

    Attributes:
        step: the decision step's name.
        questions: each question's `type`, `criteria` and merged `instructions` list, by key.
        state: the step's `get_decision_facts()` plus `request` (the newest human message of
            the step's namespace) and `prior_requests` (up to four earlier ones, oldest first).
        model: the configured model, or None for the provider's own default.
        timeout: seconds this attempt may take.
    """

    step: str
    questions: dict[str, dict[str, Any]]
    state: dict[str, Any]
    model: str | None
    timeout: float


@dataclass(frozen=True, slots=True)
class DecisionResult:
    """What a provider answers: the answers by question key, the model that gave them, usage.

    `usage` holds `input_tokens` and `output_tokens`; `request_id` is the provider's own id of
    the call, if it has one. A provider may return a dict of these fields instead.
    """

    answers: Mapping[str, Any]
    model: str | None = None
    usage: Mapping[str, int] = field(default_factory=dict)
    request_id: str | None = None


@runtime_checkable
class DecisionProvider(Protocol):
    """Answers decision requests; `picoflow.testing.ScriptedDecisionProvider` is one for tests.

    It may also define `should_retry(error) -> bool`: which of its errors are worth another
    attempt (default: the transient ones).
    """

    id: str

    async def decide(self, request: DecisionRequest, *, timeout: float) -> Any:
        """Answer `request` within `timeout` seconds: a DecisionResult (or a dict of one)."""
        ...


def result_of(raw: Any) -> DecisionResult | None:
    """A provider's return value as a DecisionResult, or None when it has not that shape."""
    if isinstance(raw, DecisionResult):
        return raw
    if not isinstance(raw, Mapping) or "answers" not in raw:
        return None
    if set(raw) - {"answers", "model", "usage", "request_id"}:
        return None
    usage = raw.get("usage") or {}
    model, request_id = raw.get("model"), raw.get("request_id")
    if not isinstance(usage, Mapping) or not all(
        v is None or isinstance(v, str) for v in (model, request_id)
    ):
        return None
    return DecisionResult(raw["answers"], model, usage, request_id)


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """What `on_decision` learns besides the answers.

    Attributes:
        step: the decision step's name.
        request: the newest human message of the step's namespace ("" when there is none).
        prior_requests: up to four earlier human messages there, oldest first.
        facts: what `get_decision_facts()` returned.
        provider: the provider's id; `model` the model that answered (or was configured).
        duration_ms: how long the successful attempt took.
        usage: that call's `input_tokens`, `output_tokens` and `total_tokens`.
        request_id: the provider's id of the call, if it gave one.
    """

    step: str
    request: str
    prior_requests: list[str]
    facts: dict[str, Any]
    provider: str
    model: str | None
    duration_ms: float
    usage: dict[str, int]
    request_id: str | None = None


@dataclass(frozen=True, slots=True)
class DecisionErrorContext:
    """What `on_decision_error` learns: the step, the configured provider and model, the error.

    `error` is the original exception: the provider's own (after its retries), or the
    `DecisionError` that says what was wrong with the questions, the facts or the answers.
    """

    step: str
    provider: str | None
    model: str | None
    error: BaseException
