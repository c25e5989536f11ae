"""A reply's model call: `ainvoke`, minus work LangChain would do only to undo it.

For a chat model with bound tools, `RunnableBinding.ainvoke` merges the binding's (empty)
config, and `BaseChatModel.ainvoke` converts our messages into a prompt value and back again (a
pass over the whole history on every call) before it calls `agenerate`. Where nobody has
overridden those layers, calling `agenerate` with the same callbacks, tags, metadata and
arguments is the same call: callbacks, tracing, caching and rate limiting all live in
`agenerate` and below. Anything else goes the long way, through `ainvoke`.

The shortcut relies on what those LangChain methods do, so it is taken only while their code is
the code it was checked against (`VERIFIED_LANGCHAIN`, hashes of their source). A LangChain
release that changes any of them turns the shortcut off by itself: turns then take `ainvoke`,
slower but exactly LangChain's own call, and `tests/test_invoke.py` fails until someone checks
the new code and records its hash.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration
from langchain_core.runnables import RunnableBinding, RunnableConfig, ensure_config

__all__ = ["invoke", "langchain_fingerprint", "is_shortcut_verified", "VERIFIED_LANGCHAIN"]

# `langchain_fingerprint()` of each LangChain release where the shortcut was checked to make the
# same call as `ainvoke` (tests/test_invoke.py), with the release it was taken from.
VERIFIED_LANGCHAIN = {
    "33c227fc67a87223d7ff5ed9418322266cba3bf0d5bca5988e680e4fa141b81e": "langchain-core 1.8.3",
}


def _relied_on() -> tuple[Callable[..., Any], ...]:
    """The LangChain methods whose work the shortcut skips or repeats."""
    return (
        RunnableBinding.ainvoke,
        RunnableBinding._merge_configs,
        BaseChatModel.ainvoke,
        BaseChatModel.agenerate_prompt,
        BaseChatModel._convert_input,
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


def _plain_invoke(model_class: type[BaseChatModel]) -> bool:
    return (
        model_class.ainvoke is BaseChatModel.ainvoke
        and model_class.agenerate_prompt is BaseChatModel.agenerate_prompt
        and model_class._convert_input is BaseChatModel._convert_input
    )
