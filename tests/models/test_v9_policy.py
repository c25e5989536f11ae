"""V9: the model-call policy (retries with backoff, Retry-After, timeout, empty-reply nudge)."""

from __future__ import annotations

import asyncio
import importlib
import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anthropic
import httpx
import openai
import pytest
from support.failed_turns import apart_from_error
from support.vkit import STORES, engine_of, flow_of, make_store, messages

from picoflow import ModelSpec, Step, go
from picoflow.models._retries import backoff, is_model_error, is_transient, retry_after
from picoflow.testing import ScriptedChatModel, transient_error


def _http_of(sdk_error: type) -> Any:
    """The HTTP library an SDK builds its errors from (httpx, or its fork httpx2)."""
    return getattr(importlib.import_module(sdk_error.__module__), "httpx2", None) or httpx


def _anthropic_status(error: type[anthropic.APIStatusError], status: int) -> Exception:
    http = _http_of(error)
    request = http.Request("POST", "https://api.anthropic.com/v1/messages")
    return error("refused", response=http.Response(status, request=request), body=None)


def _anthropic_transport(error: type[Exception]) -> Exception:
    http = _http_of(error)
    return error(request=http.Request("POST", "https://api.anthropic.com/v1/messages"))


def _openai_status(error: type[openai.APIStatusError], status: int, **headers: str) -> Exception:
    http = _http_of(error)
    request = http.Request("POST", "https://api.openai.com/v1/chat/completions")
    return error(
        "refused", response=http.Response(status, headers=headers, request=request), body=None
    )


class OverloadedError(Exception):
    """Named like anthropic's 529 error, from a module no list knows."""


class ProviderError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


class GoogleStyleError(Exception):
    def __init__(self, code: int) -> None:
        super().__init__("google")
        self.code = code


def _wrapped(cause: Exception) -> Exception:
    try:
        raise RuntimeError("the integration wrapped it") from cause
    except RuntimeError as exc:
        return exc


REQUEST = httpx.Request("POST", "https://example.invalid/v1")


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (transient_error("rate_limit"), True),
        (transient_error("server_error"), True),
        (transient_error("timeout"), True),
        (transient_error("connection"), True),
        (_openai_status(openai.AuthenticationError, 401), False),
        (_openai_status(openai.BadRequestError, 400), False),
        (_openai_status(openai.NotFoundError, 404), False),
        (_anthropic_status(anthropic.RateLimitError, 429), True),
        (_anthropic_status(anthropic.OverloadedError, 529), True),
        (_anthropic_status(anthropic.InternalServerError, 500), True),
        (_anthropic_transport(anthropic.APITimeoutError), True),
        (_anthropic_transport(anthropic.APIConnectionError), True),
        (_anthropic_status(anthropic.AuthenticationError, 401), False),
        (_anthropic_status(anthropic.BadRequestError, 400), False),
        (httpx.ReadTimeout("slow", request=REQUEST), True),
        (httpx.ConnectError("refused", request=REQUEST), True),
        (
            httpx.HTTPStatusError(
                "x", request=REQUEST, response=httpx.Response(503, request=REQUEST)
            ),
            True,
        ),
        (
            httpx.HTTPStatusError(
                "x", request=REQUEST, response=httpx.Response(422, request=REQUEST)
            ),
            False,
        ),
        (TimeoutError(), True),
        (ConnectionResetError(), True),
        (OverloadedError("busy"), True),
        (ProviderError(529), True),
        (ProviderError(408), True),
        (ProviderError(403), False),
        (GoogleStyleError(503), True),
        (GoogleStyleError(400), False),
        (_wrapped(transient_error("rate_limit")), True),
        (ValueError("a bug"), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, Exception) else str(v),
)
def test_v9_errors_are_classified_by_type_and_status_not_by_provider(
    error: Exception, transient: bool
) -> None:
    assert is_transient(error) is transient
    assert is_model_error(error) is (not isinstance(error, ValueError))


def test_v9_retry_after_is_read_in_every_form() -> None:
    assert retry_after(transient_error("rate_limit", retry_after=2)) == 2.0
    assert (
        retry_after(_openai_status(openai.RateLimitError, 429, **{"retry-after-ms": "1500"})) == 1.5
    )
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    from_date = retry_after(_openai_status(openai.RateLimitError, 429, **{"retry-after": later}))
    assert from_date is not None and 28 <= from_date <= 30
    error = ProviderError(429)
    error.retry_after = 4  # type: ignore[attr-defined]
    assert retry_after(error) == 4.0
    assert retry_after(transient_error("timeout")) is None


def test_v9_backoff_doubles_with_jitter_and_is_capped() -> None:
    rng = random.Random(7)
    for retry, (low, high) in enumerate([(0.25, 0.5), (0.5, 1), (1, 2), (2, 4), (4, 8), (4, 8)]):
        for _ in range(50):
            assert low <= backoff(retry, rng) <= high


class ChatStep(Step):
    pass


class Recorder:
    """The engine's `sleep`: records each delay and returns at once (no test ever waits)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def engine_with(model: ScriptedChatModel, spec: ModelSpec, store: Any = None, **kw: Any) -> Any:
    built: list[ModelSpec] = []

    def factory(selection: ModelSpec) -> ScriptedChatModel:
        built.append(selection)
        return model

    steps = kw.pop("steps", lambda f: [ChatStep(f)])
    sleep = Recorder()
    engine = engine_of(
        flow_of(steps, spec, **kw), store=store, providers={"scripted": factory}, sleep=sleep
    )
    return engine, sleep, built


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


async def test_v9_transient_failures_are_retried_with_backoff(store: Any) -> None:
    model = ScriptedChatModel(
        script=[transient_error("rate_limit"), transient_error("server_error"), "Hello."]
    )
    engine, sleep, _ = engine_with(model, ModelSpec("scripted", "m"), store)
    result = await engine.run("VFlow", "hi")
    assert (result.success, result.message) == (True, "Hello.")
    assert len(sleep.delays) == 2
    assert 0.25 <= sleep.delays[0] <= 0.5 and 0.5 <= sleep.delays[1] <= 1
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "ChatStep") == [("human", "hi"), ("ai", "Hello.")]
    await engine.aclose()


async def test_v9_retry_after_is_honoured() -> None:
    model = ScriptedChatModel(script=[transient_error("rate_limit", retry_after=3), "Hi."])
    engine, sleep, _ = engine_with(model, ModelSpec("scripted", "m"))
    assert (await engine.run("VFlow", "hi")).message == "Hi."
    assert sleep.delays == [3.0]


async def test_v9_retries_exhausted_fail_the_turn_naming_model_and_cause(store: Any) -> None:
    model = ScriptedChatModel(script=["Hi."] + [transient_error("rate_limit")] * 3)
    engine, sleep, _ = engine_with(model, ModelSpec("scripted", "m", retry_attempts=2), store)
    first = await engine.run("VFlow", "hi")
    before = await engine.get_session(first.session_id)
    failed = await engine.run("VFlow", "again", session_id=first.session_id)
    assert (failed.success, failed.completed, failed.error) == (
        False,
        False,
        "ModelUnavailableError",
    )
    assert failed.message == (
        "The model 'scripted:m' failed in VFlow.ChatStep (tried 3 times): RateLimitError (HTTP "
        "429): Rate limit reached. The session was not changed; send the message again in a "
        "moment."
    )
    assert len(sleep.delays) == 2
    after = await engine.get_session(first.session_id)
    assert apart_from_error(after) == apart_from_error(before)  # U5: only the error is written
    await engine.aclose()


async def test_v9_a_refusal_is_not_retried() -> None:
    model = ScriptedChatModel(script=[_openai_status(openai.AuthenticationError, 401)])
    engine, sleep, _ = engine_with(model, ModelSpec("scripted", "m"))
    failed = await engine.run("VFlow", "hi")
    assert failed.error == "ModelCallError"
    assert failed.message == (
        "The model 'scripted:m' refused the call in VFlow.ChatStep: AuthenticationError (HTTP "
        "401): refused. The session was not changed; check the model's name, API key and "
        "parameters."
    )
    assert sleep.delays == []


async def test_v9_a_long_retry_after_ends_the_retries() -> None:
    model = ScriptedChatModel(script=[transient_error("rate_limit", retry_after=120)])
    engine, sleep, _ = engine_with(model, ModelSpec("scripted", "m"))
    failed = await engine.run("VFlow", "hi")
    assert failed.error == "ModelUnavailableError" and sleep.delays == []


async def _never(sent: list[Any], tools: list[str]) -> str:
    await asyncio.Event().wait()
    return "unreachable"


async def test_v9_a_call_over_its_timeout_counts_as_transient(store: Any) -> None:
    model = ScriptedChatModel(policy=_never)
    spec = ModelSpec("scripted", "m", retry_attempts=1, timeout=0.01)
    engine, sleep, _ = engine_with(model, spec, store)
    failed = await engine.run("VFlow", "hi")
    assert failed.message == (
        "The model 'scripted:m' failed in VFlow.ChatStep (tried 2 times): TimeoutError: no "
        "reply within 0.01 s. The session was not changed; send the message again in a moment."
    )
    assert len(model.requests) == 2 and len(sleep.delays) == 1
    await engine.aclose()


async def test_v9_a_step_naming_the_flow_model_inherits_its_params_and_policy() -> None:
    model = ScriptedChatModel(policy=_never)
    flow_spec = ModelSpec("scripted", "m", params={"temperature": 0.2}, retry_attempts=0)
    step_spec = ModelSpec("scripted", "m", params={"top_p": 0.5}, timeout=0.01)
    engine, sleep, built = engine_with(
        model, flow_spec, steps=lambda f: [ChatStep(f).use_model(step_spec)]
    )
    failed = await engine.run("VFlow", "hi")
    assert failed.error == "ModelUnavailableError" and sleep.delays == []  # 0 retries
    assert built == [
        ModelSpec(
            "scripted",
            "m",
            params={"temperature": 0.2, "top_p": 0.5},
            retry_attempts=0,
            timeout=0.01,
        )
    ]


async def test_v9_an_empty_reply_is_retried_once_with_a_nudge(store: Any) -> None:
    model = ScriptedChatModel(script=["", "Hello."])
    engine, _, _ = engine_with(model, ModelSpec("scripted", "m"), store)
    result = await engine.run("VFlow", "hi")
    assert result.message == "Hello."
    nudged = model.requests[1].messages
    assert [m.type for m in nudged] == ["system", "human", "human"]
    assert nudged[-1].text == (
        "Your last reply was empty. Follow the system prompt and answer the conversation above."
    )
    doc = await engine.get_session(result.session_id)
    assert messages(doc, "ChatStep") == [("human", "hi"), ("ai", "Hello.")]
    await engine.aclose()


class ApologeticStep(Step):
    def on_llm_error(self, error: Exception) -> Any:
        if self.get_context("config.handoff"):
            return go(HumanAgentStep).with_prompt("Say a human will take over.")
        if self.get_context("config.apologise"):
            return f"Sorry, try again later. ({type(error).__name__})"
        return None


class HumanAgentStep(Step):
    pass


async def test_v9_on_llm_error_can_answer_instead_or_move_on() -> None:
    model = ScriptedChatModel(
        script={
            "ApologeticStep": [transient_error("server_error")] * 3,
            "HumanAgentStep": ["A person will answer shortly."],
        }
    )
    engine, _, _ = engine_with(
        model,
        ModelSpec("scripted", "m", retry_attempts=0),
        steps=lambda f: [ApologeticStep(f), HumanAgentStep(f)],
    )
    sorry = await engine.run("VFlow", "hi", config={"apologise": True})
    assert (sorry.success, sorry.message) == (
        True,
        "Sorry, try again later. (ModelUnavailableError)",
    )
    moved = await engine.run("VFlow", "hi", config={"handoff": True})
    assert (moved.step, moved.message) == ("HumanAgentStep", "A person will answer shortly.")
    plain = await engine.run("VFlow", "hi")
    assert (plain.success, plain.error) == (False, "ModelUnavailableError")


async def test_v9_h6_a_retry_wait_beyond_the_turn_deadline_is_not_begun() -> None:
    """V9/H6: a Retry-After longer than the turn has left is not slept into a turn timeout:
    the call fails at once with its cause, so `on_llm_error` can still answer, or the turn
    fails as the model's failure (a 503 "try again in a moment"), not as a timeout."""
    model = ScriptedChatModel(script=[transient_error("rate_limit", retry_after=30)] * 2)
    sleep = Recorder()
    flow = flow_of(lambda f: [ApologeticStep(f)], ModelSpec("scripted", "m"))
    engine = engine_of(
        flow, providers={"scripted": lambda spec: model}, sleep=sleep, turn_timeout=10
    )
    sorry = await engine.run("VFlow", "hi", config={"apologise": True})
    assert (sorry.success, sorry.message) == (
        True,
        "Sorry, try again later. (ModelUnavailableError)",
    )
    plain = await engine.run("VFlow", "hi")
    assert (plain.success, plain.error) == (False, "ModelUnavailableError")
    assert plain.message == (
        "The model 'scripted:m' failed in VFlow.ApologeticStep (tried once): RateLimitError "
        "(HTTP 429): Rate limit reached. The session was not changed; send the message again "
        "in a moment."
    )
    assert sleep.delays == [] and len(model.requests) == 2
