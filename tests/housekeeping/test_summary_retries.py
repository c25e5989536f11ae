"""V9 + M8: summary calls follow the model-call policy; when it gives up, compaction is skipped.

The built-in providers leave retrying to picoflow (their clients' own retries are off), so a
summary call is retried like a reply call: transient failures with backoff, under the summary
model's `retry_attempts` and per-call `timeout`, the whole effort bounded by
`SummaryConfig.timeout`. What survives the policy is still only a warning (M8).
"""

from __future__ import annotations

import asyncio
import importlib
from typing import Any

import httpx
import openai
from langchain_core.language_models import BaseChatModel

from picoflow import Flow, FlowEngine, ModelSpec, Step
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, transient_error

SKIP_TAIL = (
    " (namespace 'chat'). The history was kept in full; compaction is tried again at the end "
    "of the next turn."
)


class Chat(Step):
    pass


class Recorder:
    """The engine's `sleep`: records each delay and returns at once (no test ever waits)."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def engine_with(
    replies: ScriptedChatModel,
    summariser: ScriptedChatModel,
    spec: ModelSpec | None = None,
    sleep: Any = None,
    turn_timeout: float | None = None,
    **config: Any,
) -> FlowEngine:
    """A one-step flow compacting 'chat' at 8 messages, keeping 4; the summary model is
    `summariser`, selected by `spec` (provider "summaries") when given."""

    class ChatFlow(Flow):
        def __init__(self) -> None:
            super().__init__()
            memory = self.get_memory().set_summary_model(spec or summariser)
            settings = {"min_messages": 8, "recent_messages": 4, **config}
            memory.set_summary_config(**settings).enable_summary("chat")

        def config_model(self) -> Any:
            return replies

        def define_steps(self) -> list[Step]:
            return [Chat(self).use_memory("chat")]

    def factory(selection: ModelSpec) -> BaseChatModel:
        return summariser

    return FlowEngine(
        flows=[ChatFlow],
        store=MemoryStore(),
        providers={"summaries": factory},
        sleep=sleep or Recorder(),
        turn_timeout=turn_timeout,
    )


async def four_turns(engine: FlowEngine) -> tuple[list[Any], dict[str, Any]]:
    """Four turns: the fourth reaches 9 messages, so compaction runs at its end."""
    results, session_id = [], None
    for number in range(1, 5):
        result = await engine.run("ChatFlow", f"m{number}", session_id=session_id)
        assert result.success, result.message
        session_id = result.session_id
        results.append(result)
    doc = await engine.get_session(session_id or "")
    assert doc is not None
    return results, doc


def _replies() -> ScriptedChatModel:
    return ScriptedChatModel(script=[f"r{n}" for n in range(1, 5)])


async def test_v9_m8_a_summary_call_is_retried_after_transient_failures() -> None:
    summariser = ScriptedChatModel(
        script=[transient_error("rate_limit"), transient_error("connection"), "User plans a trip."]
    )
    sleep = Recorder()
    results, doc = await four_turns(engine_with(_replies(), summariser, sleep=sleep))
    assert results[-1].warnings == []
    assert doc["memory"]["chat"]["summary"] == "User plans a trip."
    assert len(summariser.requests) == 3
    assert len(sleep.delays) == 2 and 0.25 <= sleep.delays[0] <= 0.5 <= sleep.delays[1] <= 1


async def test_v9_m8_retries_run_out_compaction_is_skipped_and_the_turn_succeeds() -> None:
    spec = ModelSpec("summaries", "cheap", retry_attempts=1)
    summariser = ScriptedChatModel(script=[transient_error("server_error")] * 2)
    results, doc = await four_turns(engine_with(_replies(), summariser, spec))
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model raised InternalServerError: The server "
        "had an error (tried 2 times)" + SKIP_TAIL
    ]
    assert len(summariser.requests) == 2
    assert len(doc["memory"]["chat"]["messages"]) == 9 and doc["memory"]["chat"]["summary"] is None


async def test_v9_m8_a_refusal_is_not_retried() -> None:
    sdk = importlib.import_module(openai.AuthenticationError.__module__)
    http = getattr(sdk, "httpx2", None) or httpx  # the HTTP library the SDK's errors take
    request = http.Request("POST", "https://api.openai.com/v1/chat/completions")
    refusal = openai.AuthenticationError(
        "Incorrect API key", response=http.Response(401, request=request), body=None
    )
    summariser = ScriptedChatModel(script=[refusal, "never asked"])
    sleep = Recorder()
    results, _ = await four_turns(engine_with(_replies(), summariser, sleep=sleep))
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model raised AuthenticationError: Incorrect "
        "API key (tried once)" + SKIP_TAIL
    ]
    assert len(summariser.requests) == 1 and sleep.delays == []


async def test_v9_m8_a_wait_beyond_the_summary_timeout_is_not_begun() -> None:
    """V9/M8: `SummaryConfig.timeout` bounds the attempts and their waits: a backoff that would
    end after it is not slept; the warning names the real cause, not a timeout."""
    summariser = ScriptedChatModel(script=[transient_error("rate_limit"), "too late"])
    sleep = Recorder()
    engine = engine_with(_replies(), summariser, sleep=sleep, timeout=0.05)
    results, doc = await four_turns(engine)
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model raised RateLimitError: Rate limit reached "
        "(tried once)" + SKIP_TAIL
    ]
    assert sleep.delays == [] and len(summariser.requests) == 1
    assert doc["memory"]["chat"]["summary"] is None


async def test_v9_m8_the_summary_timeout_ends_an_attempt_that_hangs_after_a_retry() -> None:
    """M8: a retry that hangs is ended by `SummaryConfig.timeout`, counted from the first
    attempt."""

    async def limited_then_hangs(messages: list[Any], tools: list[str]) -> str:
        if len(summariser.requests) == 1:
            raise transient_error("rate_limit")
        await asyncio.Event().wait()
        return "unreachable"  # pragma: no cover

    summariser = ScriptedChatModel(policy=limited_then_hangs)
    sleep = Recorder()
    results, _ = await four_turns(engine_with(_replies(), summariser, sleep=sleep, timeout=1))
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model did not answer within 1 s" + SKIP_TAIL
    ]
    assert len(sleep.delays) == 1 and len(summariser.requests) == 2


async def test_v9_m8_a_summary_model_spec_timeout_applies_to_each_attempt() -> None:
    calls = 0

    async def slow_then_quick(messages: list[Any], tools: list[str]) -> str:
        nonlocal calls
        calls += 1
        if calls == 1:
            await asyncio.Event().wait()  # the first attempt hangs; its own timeout ends it
        return "User plans a trip."

    spec = ModelSpec("summaries", "cheap", timeout=0.05)
    summariser = ScriptedChatModel(policy=slow_then_quick)
    results, doc = await four_turns(engine_with(_replies(), summariser, spec))
    assert results[-1].warnings == []
    assert calls == 2 and doc["memory"]["chat"]["summary"] == "User plans a trip."


async def test_v9_m8_h6_a_retry_after_beyond_the_turn_deadline_gives_up_with_its_cause() -> None:
    """V9/M8/H6: inside a turn with a deadline, a wait that would outlast it is not begun;
    compaction is skipped naming the rate limit, and the turn succeeds and is saved."""
    summariser = ScriptedChatModel(script=[transient_error("rate_limit", retry_after=30), "S"])
    sleep = Recorder()
    engine = engine_with(_replies(), summariser, sleep=sleep, turn_timeout=10)
    results, doc = await four_turns(engine)
    assert results[-1].warnings == [
        "Memory compaction skipped: the summary model raised RateLimitError: Rate limit reached "
        "(tried once)" + SKIP_TAIL
    ]
    assert sleep.delays == [] and len(summariser.requests) == 1
    assert doc["revision"] == 3 and len(doc["memory"]["chat"]["messages"]) == 9


async def test_v9_m8_h6_a_hanging_summariser_ends_before_the_turn_deadline() -> None:
    """M8/H6: a summary call that hangs is given up a little before the turn's deadline (not
    at its own 60 s), so the turn is saved with a warning instead of failing at the deadline."""

    async def hangs_on_summaries(messages: list[Any], tools: list[str]) -> str:
        await asyncio.Event().wait()
        return "unreachable"  # pragma: no cover

    summariser = ScriptedChatModel(policy=hangs_on_summaries)
    engine = engine_with(_replies(), summariser, turn_timeout=0.4)
    results, doc = await four_turns(engine)
    warning = results[-1].warnings[0]
    assert warning.startswith("Memory compaction skipped: the summary model did not answer ")
    assert warning.endswith("the turn had left (turn_timeout)" + SKIP_TAIL)
    assert doc["revision"] == 3 and len(doc["memory"]["chat"]["messages"]) == 9
