"""Retries of model calls (V9): backoff for transient failures, a timeout per call.

Providers fail in passing all the time: rate limits, overloaded servers, dropped connections,
slow replies. Those are retried `retry_attempts` times with exponential backoff and jitter,
waiting at least what a `Retry-After` header asks. Everything else (a bad API key, an unknown
model, a request the provider refuses) is not worth retrying and fails at once.

Errors are classified by what they are, not by which library raised them: the exception's
type name across its class hierarchy (openai, anthropic, httpx, google and aiohttp name their
transient errors alike), its HTTP status code (`status_code`, `status`, `response.status_code`
or `code`), and the built-in `TimeoutError`/`ConnectionError`. Wrapped errors are followed
through `__cause__`/`__context__`, as LangChain integrations sometimes re-raise.

    >>> is_transient(TimeoutError()), is_transient(ValueError("bad"))
    (True, False)
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import replace
from email.utils import parsedate_to_datetime
from typing import Any, TypeVar

from langchain_core.language_models import BaseChatModel

from picoflow.errors import PicoflowError
from picoflow.models import ModelSpec

__all__ = [
    "ModelCallError",
    "ModelUnavailableError",
    "is_transient",
    "is_model_error",
    "retry_after",
    "backoff",
    "call_with_retries",
    "inherit",
    "retries_of",
    "model_name",
]

T = TypeVar("T")

BASE_DELAY = 0.5  # seconds before the first retry, doubled for each later one
MAX_DELAY = 8.0
MAX_RETRY_AFTER = 60.0  # a longer Retry-After ends the retries: a turn must not wait minutes

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429})
_TRANSIENT_NAMES = frozenset(
    {
        # openai / anthropic (and the many SDKs generated like them)
        "APITimeoutError",
        "APIConnectionError",
        "RateLimitError",
        "InternalServerError",
        "ServiceUnavailableError",
        "OverloadedError",
        # httpx
        "TimeoutException",
        "NetworkError",
        "RemoteProtocolError",
        # google.api_core
        "DeadlineExceeded",
        "ServiceUnavailable",
        "TooManyRequests",
        "ResourceExhausted",
        # aiohttp
        "ServerDisconnectedError",
        "ClientConnectionError",
    }
)
_PROVIDER_MODULES = (
    "openai",
    "anthropic",
    "httpx",
    "httpx2",
    "httpcore",
    "google",
    "aiohttp",
    "groq",
    "mistralai",
)


class ModelCallError(PicoflowError):
    """A model call failed for good: a transient error outlasted the retries, or a refusal.

    Attributes:
        model: the model as "provider:name" (or the chat model's class name).
        where: "Flow.Step" of the call.
        attempts: how many calls were made.
        transient: True when the cause was transient (worth trying the turn again later).
    """

    def __init__(self, model: str, where: str, attempts: int, cause: BaseException) -> None:
        self.model = model
        self.where = where
        self.attempts = attempts
        self.transient = is_transient(cause)
        reason = describe_error(cause).rstrip(".")  # the sentence goes on after it
        if self.transient:
            tries = "once" if attempts == 1 else f"{attempts} times"
            message = (
                f"The model '{model}' failed in {where} (tried {tries}): {reason}. The session "
                "was not changed; send the message again in a moment."
            )
        else:
            message = (
                f"The model '{model}' refused the call in {where}: {reason}. The session was "
                "not changed; check the model's name, API key and parameters."
            )
        super().__init__(message)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, where={self.where!r}, "
            f"attempts={self.attempts!r}, transient={self.transient!r})"
        )


class ModelUnavailableError(ModelCallError):
    """A transient failure outlasted the retries: the same turn may well succeed later.

    Its own class so that `TurnResult.error` tells a server "try again later" (HTTP 503) apart
    from a refusal that needs a fix ("ModelCallError").
    """


def model_call_error(model: str, where: str, attempts: int, cause: BaseException) -> ModelCallError:
    """The error for a call that failed for good, of the class its cause calls for."""
    error_class = ModelUnavailableError if is_transient(cause) else ModelCallError
    return error_class(model, where, attempts, cause)


def describe_error(exc: BaseException) -> str:
    """The cause in a line: class name, HTTP status if any, and the provider's text."""
    if isinstance(exc, TimeoutError) and not str(exc):
        return "no reply within the timeout"
    status = status_of(exc)
    head = type(exc).__name__ + (f" (HTTP {status})" if status is not None else "")
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{head}: {text}" if text else head


def _chain(exc: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen and len(seen) < 8:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def status_of(exc: BaseException) -> int | None:
    """The HTTP status an exception carries, whichever attribute its library uses."""
    response = getattr(exc, "response", None)
    for value in (
        getattr(exc, "status_code", None),
        getattr(exc, "status", None),
        getattr(response, "status_code", None),
        getattr(exc, "code", None),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599:
            return value
    return None


def _named_transient(exc: BaseException) -> bool:
    return any(klass.__name__ in _TRANSIENT_NAMES for klass in type(exc).__mro__)


def is_transient(exc: BaseException) -> bool:
    """Timeouts, rate limits, 5xx and dropped connections: worth another attempt."""
    for error in _chain(exc):
        if isinstance(error, (TimeoutError, ConnectionError)) or _named_transient(error):
            return True
        status = status_of(error)
        if status is not None:
            return status in _TRANSIENT_STATUS or status >= 500
    return False


def is_model_error(exc: BaseException) -> bool:
    """Whether `exc` came from talking to a provider (and not from a bug in code)."""
    for error in _chain(exc):
        if is_transient(error) or status_of(error) is not None:
            return True
        if type(error).__module__.split(".")[0] in _PROVIDER_MODULES:
            return True
    return False


def retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait (`Retry-After`, `retry-after-ms`), if it did."""
    for error in _chain(exc):
        headers = getattr(getattr(error, "response", None), "headers", None)
        if headers is not None:
            seconds = _header_seconds(headers)
            if seconds is not None:
                return seconds
        value = getattr(error, "retry_after", None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value)
    return None


def _header_seconds(headers: Any) -> float | None:
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000)
        value = headers.get("retry-after")
    except (AttributeError, TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:  # an HTTP date
        when = parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    from datetime import UTC, datetime

    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def backoff(retry: int, rng: random.Random | None = None) -> float:
    """Seconds before retry number `retry` (0-based): doubling from 0.5 s, capped, jittered.

    Retry 0 waits 0.25-0.5 s, retry 1 0.5-1 s, retry 2 1-2 s, ... up to 4-8 s: half fixed, half
    random, so clients that failed together do not all come back at the same instant.
    """
    delay: float = min(MAX_DELAY, BASE_DELAY * 2.0**retry)
    return delay * (0.5 + (rng or random).random() / 2)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    *,
    retries: int,
    timeout: float | None,
    sleep: Callable[[float], Awaitable[Any]],
    describe: Callable[[], tuple[str, str]],
    deadline: float | None = None,
    should_retry: Callable[[BaseException], bool] | None = None,
    on_retry: Callable[[BaseException, int, float], None] | None = None,
) -> T:
    """Run `call` with its retries; raise ModelCallError when it fails for good.

    `describe()` returns (model, where) for the error message; exceptions that do not come from
    a provider (a bug in a test model, a cancelled task) pass through unchanged. With a
    `deadline` (event-loop time), a wait that would end after it is not begun: the call fails
    at once with its real cause instead of sleeping into someone else's timeout.
    `should_retry` replaces the transient rule for what is worth another attempt (U4);
    `on_retry(error, attempt, wait)` hears of each retry before its wait (U5).
    """
    attempt = 0
    while True:
        try:
            if timeout is None:
                return await call()
            return await asyncio.wait_for(call(), timeout)
        except Exception as exc:  # V9: the model-call boundary; classify, then retry or fail
            if not is_model_error(exc):
                raise
            if isinstance(exc, TimeoutError) and timeout is not None and not str(exc):
                exc = TimeoutError(f"no reply within {timeout:g} s")
            wait = _next_wait(exc, attempt, retries, deadline, should_retry)
            if wait is None:
                model, where = describe()
                raise model_call_error(model, where, attempt + 1, exc) from exc
            if on_retry is not None:
                on_retry(exc, attempt + 1, wait)
        attempt += 1
        await sleep(wait)


def _next_wait(
    exc: BaseException,
    attempt: int,
    retries: int,
    deadline: float | None,
    should_retry: Callable[[BaseException], bool] | None = None,
) -> float | None:
    """Seconds to wait before the next attempt, or None when there is none (or no time)."""
    worth_it = should_retry(exc) if should_retry is not None else is_transient(exc)
    if attempt >= retries or not worth_it:
        return None
    asked = retry_after(exc)
    if asked is not None and asked > MAX_RETRY_AFTER:
        return None
    wait = max(asked or 0.0, backoff(attempt))
    if deadline is not None and asyncio.get_running_loop().time() + wait >= deadline:
        return None
    return wait


def inherit(
    own: ModelSpec | BaseChatModel, base: ModelSpec | BaseChatModel | None
) -> ModelSpec | BaseChatModel:
    """A step's model; naming the flow's own model, it inherits the flow's settings.

    `use_model(ModelSpec("openai", "gpt-4o", params={"temperature": 0}))` on a flow whose
    model is `openai:gpt-4o` keeps the flow's other params, its timeout and its retry attempts
    (unless the step sets its own), as PicoFlow's `useModelParams` did.
    """
    if not (isinstance(own, ModelSpec) and isinstance(base, ModelSpec)):
        return own
    if (own.provider, own.name) != (base.provider, base.name):
        return own
    return replace(
        own,
        params={**base.params, **own.params},
        retry_attempts=own.retry_attempts if own.retry_attempts != 3 else base.retry_attempts,
        timeout=own.timeout if own.timeout is not None else base.timeout,
    )


def retries_of(spec: ModelSpec | BaseChatModel) -> tuple[int, float | None]:
    """(retries, timeout) of a model selection; a chat model instance gets the defaults."""
    if isinstance(spec, ModelSpec):
        return spec.retry_attempts, spec.timeout
    return 3, None


def model_name(spec: ModelSpec | BaseChatModel) -> str:
    """How error messages name a model: "provider:name", or the chat model's class."""
    if isinstance(spec, ModelSpec):
        return f"{spec.provider}:{spec.name}"
    name = getattr(spec, "model_name", None) or getattr(spec, "model", None)
    return f"{type(spec).__name__}({name})" if isinstance(name, str) else type(spec).__name__
