"""The reply call's shortcut around `ainvoke` (E3): the same call, or the long way.

`picoflow._invoke` calls `agenerate` directly where `RunnableBinding.ainvoke` and
`BaseChatModel.ainvoke` would only convert the history back and forth. These tests pin what that
relies on: the installed LangChain is one the shortcut was checked against, the shortcut makes
exactly the call `ainvoke` makes (messages, arguments, tags, metadata, callback events), and a
LangChain whose code differs gets `ainvoke` itself.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableBinding

from picoflow._invoke import (
    VERIFIED_LANGCHAIN,
    _shortcut_target,
    invoke,
    is_shortcut_verified,
    langchain_fingerprint,
)


class Recorder(BaseChatModel):
    """Answers with a fixed reply and records what each `_agenerate` received."""

    calls: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "recorder"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        raise NotImplementedError("only the async path is used")

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.calls.append({"messages": messages, "stop": stop, "kwargs": kw})
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
        "LangChain's RunnableBinding.ainvoke/_merge_configs or BaseChatModel.ainvoke/"
        "agenerate_prompt/_convert_input changed, so picoflow's reply shortcut is OFF and every "
        "model call takes the slower ainvoke path. Read the new code: if `invoke` in "
        "picoflow/_invoke.py still makes the same call (test_e3_the_shortcut_makes_the_call_"
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
