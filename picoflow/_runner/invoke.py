"""A reply's model call: `ainvoke`, minus work LangChain would do only to undo it.

For a chat model with bound tools, `RunnableBinding.ainvoke` merges the binding's (empty)
config, and `BaseChatModel.ainvoke` converts our messages into a prompt value and back again (a
pass over the whole history on every call) before it calls `agenerate`. Where nobody has
overridden those layers, calling `agenerate` with the same callbacks, tags, metadata and
arguments is the same call: callbacks, tracing, caching and rate limiting all live in
`agenerate` and below. Anything else goes the long way, through `ainvoke`.

When no callback handler would see the call (none passed, none on the model, no tracing,
`verbose` off: what `AsyncCallbackManager.configure` finds), `agenerate`'s own work is for
nobody either: it formats the history for tracing, opens a run that nothing records, and runs
the one request in a task of its own. Then `_agenerate_with_cache` is called directly, with the
messages normalised as `agenerate` normalises them; the cache, the rate limiter and streaming
(`streaming=True`) all live there and below, so they still apply. The reply differs only in its
id (LangChain would name it after the run; the turn gives every reply an id of its own anyway).
On these machines that is about 0.4 ms of CPU less per model call (issue 24).

The shortcut relies on what those LangChain methods do, so it is taken only while their code is
the code it was checked against (`VERIFIED_LANGCHAIN`, hashes of their source). A LangChain
release that changes any of them turns the shortcut off by itself: turns then take `ainvoke`,
slower but exactly LangChain's own call, and `tests/runner/test_invoke.py` fails until one checks
the new code and records its hash.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from langchain_core.callbacks import AsyncCallbackManager
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models._utils import _normalize_messages
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration
from langchain_core.runnables import RunnableBinding, RunnableConfig, ensure_config

__all__ = ["invoke", "langchain_fingerprint", "is_shortcut_verified", "VERIFIED_LANGCHAIN"]

# `langchain_fingerprint()` of each LangChain release where the shortcut was checked to make the
# same call as `ainvoke` (tests/runner/test_invoke.py), with the release it was taken from.
VERIFIED_LANGCHAIN = {
    "1cc4b2e22c3d3b6d44e1528161f3da1844b2a1d32f6f77a7221fee2cf3845b68": "langchain-core 1.8.3",
}


def _relied_on() -> tuple[Callable[..., Any], ...]:
    """The LangChain methods whose work the shortcut skips or repeats."""
    return (
        RunnableBinding.ainvoke,
        RunnableBinding._merge_configs,
        BaseChatModel.ainvoke,
        BaseChatModel.agenerate_prompt,
        BaseChatModel._convert_input,
        BaseChatModel.agenerate,
    )


def langchain_fingerprint() -> str:
    """A hash of the source of the LangChain methods the shortcut relies on."""
    digest = hashlib.sha256()
    for method in _relied_on():
        try:
            source = inspect.getsource(method)
        except (OSError, TypeError):  # no source to check (a frozen build): never verified
            return "unavailable"
        digest.update(inspect.cleandoc(source).encode())
    return digest.hexdigest()


@functools.cache
def is_shortcut_verified() -> bool:
    """Whether the installed LangChain is the one the shortcut was checked against.

    Reading the source costs a few milliseconds, once per process, at the first model call.
    """
    return langchain_fingerprint() in VERIFIED_LANGCHAIN


async def invoke(runnable: Any, messages: list[BaseMessage], config: RunnableConfig) -> Any:
    """`runnable.ainvoke(messages, config)`, the short way where that is the same call."""
    target = _shortcut_target(runnable)
    if target is None:
        return await runnable.ainvoke(messages, config=config)
    model, kwargs = target
    merged = ensure_config(config)  # picks up a caller's callbacks from the running context
    if _unobserved(model, merged, kwargs):
        generated = await model._agenerate_with_cache(_normalize_messages(messages), **kwargs)
        return generated.generations[0].message
    result = await model.agenerate(
        [messages],
        callbacks=merged.get("callbacks"),
        tags=merged.get("tags"),
        metadata=merged.get("metadata"),
        run_name=merged.get("run_name"),
        run_id=merged.pop("run_id", None),
        **kwargs,
    )
    return cast(ChatGeneration, result.generations[0][0]).message


def _shortcut_target(runnable: Any) -> tuple[BaseChatModel, Mapping[str, Any]] | None:
    """The chat model and bound arguments to call `agenerate` with, or None: use `ainvoke`."""
    if (
        isinstance(runnable, RunnableBinding)
        and type(runnable).ainvoke is RunnableBinding.ainvoke
        and not runnable.config
        and not runnable.config_factories
    ):
        model, kwargs = runnable.bound, runnable.kwargs
    else:
        model, kwargs = runnable, {}
    if not isinstance(model, BaseChatModel) or not _plain_invoke(type(model)):
        return None
    return (model, kwargs) if is_shortcut_verified() else None


# Arguments `agenerate` takes out for tracing before the call: such a call goes through it.
_TRACING_ARGUMENTS = frozenset({"ls_structured_output_format", "structured_output_format"})


def _unobserved(model: BaseChatModel, config: RunnableConfig, kwargs: Mapping[str, Any]) -> bool:
    """Whether no callback handler would see this call, so `agenerate` would work for nobody.

    The handlers are found as `agenerate` finds them (the call's, the model's, `verbose`,
    tracing switched on by the environment or a surrounding `tracing_context`, LangChain's
    configure hooks); tags and metadata only label a run, and do not make one observed.
    """
    if type(model).agenerate is not BaseChatModel.agenerate or kwargs.keys() & _TRACING_ARGUMENTS:
        return False
    manager = AsyncCallbackManager.configure(
        config.get("callbacks"), model.callbacks, model.verbose
    )
    return not manager.handlers


def _plain_invoke(model_class: type[BaseChatModel]) -> bool:
    return (
        model_class.ainvoke is BaseChatModel.ainvoke
        and model_class.agenerate_prompt is BaseChatModel.agenerate_prompt
        and model_class._convert_input is BaseChatModel._convert_input
    )
