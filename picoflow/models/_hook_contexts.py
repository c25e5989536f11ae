"""What the model-failure hooks learn, and a step's call policy (D4).

The hooks `should_retry_llm_error`, `on_llm_error` and `on_llm_blocked` were given only the
error (or the refusal's reason), so a hook could not tell the third failed attempt from the
first, a declined retry from an exhausted one, or a refused prompt from a refused answer. PicoFlow
passes a context object; these are those records, frozen so a hook cannot change what the
framework does next by editing one. A hook that declares a second parameter receives one (see
`picoflow._runner.llm_hooks`); a hook of the old one-argument form keeps working unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["LlmAttemptErrorContext", "LlmBlockedContext", "LlmCallPolicy", "LlmErrorContext"]

LlmErrorKind = Literal["invocation_error", "empty_response", "response_rejected"]
StoppedBecause = Literal["retry_declined", "attempts_exhausted"]


@dataclass(frozen=True, slots=True)
class LlmAttemptErrorContext:
    """One failed attempt of a model call, as `should_retry_llm_error` sees it (D4).

    Attributes:
        step_id: the step whose call failed.
        provider: the model's provider ("openai"), or the chat model's class name.
        model: the model's name.
        error: what the attempt raised.
        attempt: this attempt's number, from 1.
        max_attempts: how many attempts the call may make in all (`retry_attempts` + 1).
    """

    step_id: str
    provider: str
    model: str
    error: BaseException
    attempt: int
    max_attempts: int


@dataclass(frozen=True, slots=True)
class LlmErrorContext:
    """A model call that failed for good, as `on_llm_error` sees it (D4).

    Attributes:
        kind: "invocation_error" (the call raised); "empty_response" and "response_rejected"
            are PicoFlow's other kinds, reserved: picoflow still nudges an empty reply once
            and keeps checking answers in `on_response`, without calling this hook.
        step_id: the step whose call failed.
        provider: the model's provider, or the chat model's class name.
        model: the model's name (the fallback's, when a `retry_with_model` call failed).
        error: the `ModelCallError`, which names the model and the cause.
        stopped_because: "attempts_exhausted" when every attempt failed, "retry_declined" when
            the error was not worth another attempt (not transient, refused by
            `should_retry_llm_error`, or no time left before the turn's deadline).
        attempts: how many calls were made.
        raw_reason: the cause in a line (class name, HTTP status, the provider's text).
        fallback: True when the call that failed was a `retry_with_model` fallback.
        last_response: the last reply, for the reserved kinds; None for an invocation error.
    """

    kind: LlmErrorKind
    step_id: str
    provider: str
    model: str
    error: BaseException
    stopped_because: StoppedBecause
    attempts: int
    raw_reason: str
    fallback: bool = False
    last_response: Any = None


@dataclass(frozen=True, slots=True)
class LlmBlockedContext:
    """A provider's refusal, as `on_llm_blocked` sees it (D4).

    Attributes:
        step_id: the step whose call was refused.
        provider: the model's provider, or the chat model's class name.
        reason: the normalised reason: "refusal", "content_filter", "safety", ...
        raw_reason: what the provider said: the refusal text or its finish reason as sent.
        phase: "candidate": picoflow reads refusals from a reply (a refused prompt arrives as
            a provider error, which goes to `on_llm_error`).
        safety_ratings: the provider's ratings when it sent any (Gemini), else empty.
        details: the reply's response metadata.
    """

    step_id: str
    provider: str
    reason: str
    raw_reason: str
    phase: Literal["prompt", "candidate"] = "candidate"
    safety_ratings: tuple[Any, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class LlmCallPolicy:
    """How a step's model calls are made: the timeout of one attempt and the retries (D4).

    PicoFlow keeps this apart as `configLlmCallPolicy()`; picoflow keeps both on the model
    selection (`ModelSpec(timeout=..., retry_attempts=...)`), so this is read from the
    selection in force (`Step.get_llm_call_policy()`) and set there.

    Attributes:
        timeout: seconds one attempt may take; None: no limit but the turn's.
        retry_attempts: attempts after the first for transient failures.
    """

    timeout: float | None
    retry_attempts: int

    @property
    def max_attempts(self) -> int:
        """Attempts in all: the first one and its retries."""
        return self.retry_attempts + 1
