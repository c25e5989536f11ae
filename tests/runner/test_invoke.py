"""The reply call's shortcut around `ainvoke` (E3): the same call, or the long way.

`picoflow._runner.invoke` calls `agenerate` directly where `RunnableBinding.ainvoke` and
`BaseChatModel.ainvoke` would only convert the history back and forth. These tests pin what that
relies on: the installed LangChain is one the shortcut was checked against, the shortcut makes
exactly the call `ainvoke` makes (messages, arguments, tags, metadata, callback events), a call
no handler would see skips `agenerate`'s bookkeeping and still gets the cache, and a LangChain
whose code differs gets `ainvoke` itself.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.rate_limiters import InMemoryRateLimiter
from langchain_core.runnables import RunnableBinding
from langchain_core.tracers.context import collect_runs

from picoflow._runner.invoke import (
    VERIFIED_LANGCHAIN,
    _shortcut_target,
    _surely_unobserved,
    _unobserved,
    invoke,
    is_shortcut_verified,
    langchain_fingerprint,
)


class Recorder(BaseChatModel):
    """Answers with a fixed reply and records what each `_agenerate` received."""

    calls: list[dict[str, Any]] = []
    run_managers: list[Any] = []  # what each call got: None where `agenerate` was skipped

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        raise NotImplementedError("only the async path is used")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls.append({"messages": messages, "stop": stop, "kwargs": kw})
        self.run_managers.append(run_manager)
        return ChatResult(generations=[ChatGeneration(message=AIMessage("ok", id="r1"))])


class Events(BaseCallbackHandler):
    def __init__(self) -> None:
        self.starts: list[dict[str, Any]] = []

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[BaseMessage]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.starts.append(
            {
                "name": kwargs.get("name"),
                "messages": messages,
                "tags": tags,
                "metadata": metadata,
                "invocation_params": kwargs.get("invocation_params"),
            }
        )


def _bound() -> tuple[Recorder, RunnableBinding[Any, Any]]:
    model = Recorder(calls=[])
    return model, model.bind(tool_choice="auto", extra={"n": 1})


MESSAGES = [SystemMessage("Be brief."), HumanMessage("Hi")]


def _config(handler: Events) -> dict[str, Any]:
    return {
        "callbacks": [handler],
        "tags": ["picoflow", "picoflow:reply"],
        "metadata": {"picoflow_step": "Chat"},
        "run_name": "F.Chat",
    }


def test_e3_the_installed_langchain_is_one_the_shortcut_was_checked_against() -> None:
    fingerprint = langchain_fingerprint()
    assert fingerprint in VERIFIED_LANGCHAIN, (
        "LangChain's RunnableBinding.ainvoke/_merge_configs, BaseChatModel.ainvoke/"
        "agenerate_prompt/_convert_input/agenerate/_agenerate_with_cache, callbacks.manager."
        "_configure or tracers.context._tracing_v2_is_enabled changed, so picoflow's reply "
        "shortcut is OFF and every model call takes the slower ainvoke path. Read the new "
        "code: if `invoke` in "
        "picoflow/_runner/invoke.py still makes the same call (test_e3_the_shortcut_makes_the_call_"
        f"ainvoke_makes must pass), add {fingerprint!r} to VERIFIED_LANGCHAIN; otherwise fix "
        "the shortcut."
    )
    assert is_shortcut_verified()


async def test_e3_the_shortcut_makes_the_call_ainvoke_makes() -> None:
    model, bound = _bound()
    assert _shortcut_target(bound) == (model, {"tool_choice": "auto", "extra": {"n": 1}})
    short, long = Events(), Events()
    reply_short = await invoke(bound, MESSAGES, _config(short))  # type: ignore[arg-type]
    reply_long = await bound.ainvoke(MESSAGES, config=_config(long))  # type: ignore[arg-type]
    assert reply_short == reply_long
    assert model.calls[0] == model.calls[1]
    assert model.calls[0]["kwargs"] == {"tool_choice": "auto", "extra": {"n": 1}}
    assert short.starts == long.starts
    assert short.starts[0]["tags"] == ["picoflow", "picoflow:reply"]
    assert short.starts[0]["metadata"]["picoflow_step"] == "Chat"
    assert short.starts[0]["name"] == "F.Chat"


async def test_e3_a_changed_langchain_gets_ainvoke_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release whose `RunnableBinding.ainvoke` differs (here: a wrapper) is not trusted."""
    original = RunnableBinding.ainvoke
    through: list[str] = []

    async def changed(self: Any, input: Any, config: Any = None, **kwargs: Any) -> Any:
        through.append("ainvoke")
        return await original(self, input, config, **kwargs)

    model, bound = _bound()
    monkeypatch.setattr(RunnableBinding, "ainvoke", changed)
    is_shortcut_verified.cache_clear()
    try:
        assert langchain_fingerprint() not in VERIFIED_LANGCHAIN
        assert _shortcut_target(bound) is None
        reply = await invoke(bound, MESSAGES, _config(Events()))  # type: ignore[arg-type]
    finally:
        monkeypatch.undo()
        is_shortcut_verified.cache_clear()
    assert through == ["ainvoke"] and reply.content == "ok" and len(model.calls) == 1
    assert is_shortcut_verified()


def test_e3_a_model_that_overrides_the_invoke_layers_takes_ainvoke() -> None:
    class Custom(Recorder):
        async def ainvoke(self, input: Any, config: Any = None, **kwargs: Any) -> Any:
            return await super().ainvoke(input, config, **kwargs)

    model = Custom(calls=[])
    assert _shortcut_target(model.bind(tool_choice="auto")) is None
    assert _shortcut_target(Recorder(calls=[])) is not None


async def test_e3_a_call_no_handler_sees_skips_agenerate_and_makes_the_same_model_call() -> None:
    """Issue 24: nothing observes the call, so `_agenerate` gets exactly what `ainvoke` gives it."""
    model, bound = _bound()
    bare: dict[str, Any] = {
        "tags": ["picoflow"],
        "metadata": {"picoflow_step": "Chat"},
        "run_name": "F.Chat",
    }
    assert _unobserved(model, bare, bound.kwargs)  # type: ignore[arg-type]
    reply_short = await invoke(bound, MESSAGES, bare)  # type: ignore[arg-type]
    reply_long = await bound.ainvoke(MESSAGES, config=bare)  # type: ignore[arg-type]
    assert model.calls[0] == model.calls[1]
    assert model.run_managers[0] is None and model.run_managers[1] is not None
    assert reply_short.content == reply_long.content == "ok"
    assert reply_short.response_metadata == reply_long.response_metadata


def test_e3_a_handler_from_anywhere_makes_the_call_observed() -> None:
    """The call's callbacks, the model's, `verbose` and the running context each count."""
    model = Recorder(calls=[])
    assert not _unobserved(model, {"callbacks": [Events()]}, {})
    assert not _unobserved(Recorder(calls=[], callbacks=[Events()]), {}, {})
    assert not _unobserved(Recorder(calls=[], verbose=True), {}, {})
    with collect_runs():  # a handler that LangChain's configure hooks add from a context var
        assert not _unobserved(model, {}, {})
    assert _unobserved(model, {}, {})
    assert not _unobserved(model, {}, {"ls_structured_output_format": {"schema": {}}})


async def test_e3_an_observed_call_goes_through_agenerate_and_is_seen() -> None:
    model = Recorder(calls=[], run_managers=[])
    handler = Events()
    await invoke(model, MESSAGES, _config(handler))  # type: ignore[arg-type]
    await invoke(model, MESSAGES, {})
    with collect_runs() as runs:
        await invoke(model, MESSAGES, {"run_name": "F.Chat"})
    observed = [manager is not None for manager in model.run_managers]
    assert observed == [True, False, True]
    assert len(handler.starts) == 1 and handler.starts[0]["name"] == "F.Chat"
    assert [run.name for run in runs.traced_runs] == ["F.Chat"]


async def test_e3_an_unobserved_call_still_reads_and_fills_the_models_cache() -> None:
    model = Recorder(calls=[], cache=InMemoryCache())
    first = await invoke(model, MESSAGES, {})
    second = await invoke(model, MESSAGES, {})
    assert len(model.calls) == 1 and first.content == second.content == "ok"


class Usage(Recorder):
    """A provider-like model: usage in `llm_output`, and no `run_manager` parameter."""

    async def _agenerate(  # type: ignore[override]
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls.append({"messages": messages, "stop": stop, "kwargs": kw})
        message = AIMessage("ok", response_metadata={"finish_reason": "stop"})
        generation = ChatGeneration(message=message, generation_info={"logprobs": None})
        return ChatResult(generations=[generation], llm_output={"model_name": "m-1"})


async def test_e3_issue39_the_plain_generation_stamps_what_agenerate_with_cache_stamps() -> None:
    """Issue 39: `_agenerate` called here gets the same arguments and its reply the same metadata
    as through LangChain's `_agenerate_with_cache`, with or without a `run_manager` parameter."""
    for model in (Usage(calls=[]), Recorder(calls=[], run_managers=[])):
        short = await invoke(model.bind(tool_choice="auto"), MESSAGES, {})
        long = await model.bind(tool_choice="auto").ainvoke(MESSAGES)
        assert model.calls[0] == model.calls[1]
        assert short.content == long.content
        assert short.response_metadata == long.response_metadata
    assert short.response_metadata == long.response_metadata  # Recorder: no llm_output
    usage = Usage(calls=[])
    reply = await invoke(usage, MESSAGES, {})
    assert reply.response_metadata == {
        "model_name": "m-1",
        "finish_reason": "stop",
        "logprobs": None,
    }


async def test_e3_issue39_a_rate_limited_model_keeps_langchains_own_path() -> None:
    """The limiter lives in `_agenerate_with_cache` (as the cache and streaming): it applies."""
    acquired: list[bool] = []

    class Limiter(InMemoryRateLimiter):
        async def aacquire(self, *, blocking: bool = True) -> bool:
            acquired.append(blocking)
            return True

    limited = Recorder(calls=[], rate_limiter=Limiter(requests_per_second=100))
    await invoke(limited, MESSAGES, {})
    assert acquired == [True]


def test_e3_issue39_the_quick_verdict_is_configures_verdict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where the quick check cannot be sure, `configure` decides, and refuses what it refuses."""
    model = Recorder(calls=[])
    assert _surely_unobserved(model, {})
    assert not _surely_unobserved(Recorder(calls=[], verbose=True), {})
    with collect_runs():
        assert not _surely_unobserved(model, {})
    monkeypatch.setenv("LANGCHAIN_TRACING", "true")  # the retired v1 switch
    assert not _surely_unobserved(model, {})
    with pytest.raises(RuntimeError, match="LANGCHAIN_TRACING_V2"):
        _unobserved(model, {}, {})
