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

Two more things cost more than the rest of such a call (issue 39, about 70 µs a call here):
building a callback manager only to find it empty, and `_agenerate_with_cache` inspecting the
signature of `_agenerate` on every call. So the certain case is decided first: no callbacks in
the call or on the model, no `verbose`, no debug, no tracing and no configure hook set is what
makes `configure` find no handler, and anything else asks `configure` itself. And when the
model has no cache, no rate limiter, does not stream and keeps LangChain's v0 output,
`_agenerate_with_cache` would only call `_agenerate` and stamp the metadata; then that is done
here, with the signature read once per model class.

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
from langchain_core.callbacks import manager as _manager
from langchain_core.globals import get_debug, get_llm_cache
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models._utils import _normalize_messages
from langchain_core.language_models.chat_models import _gen_info_and_msg_metadata
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableBinding, RunnableConfig, ensure_config
from langchain_core.tracers import context as _tracing
from langchain_core.utils._signature import _signature_parameters
from langchain_core.utils.env import env_var_is_set

__all__ = ["invoke", "langchain_fingerprint", "is_shortcut_verified", "VERIFIED_LANGCHAIN"]

# `langchain_fingerprint()` of each LangChain release where the shortcut was checked to make the
# same call as `ainvoke` (tests/runner/test_invoke.py), with the release it was taken from.
VERIFIED_LANGCHAIN = {
    "dd35f2b161ea0edad78946bc371abb49c253f2e269f00b1dfc003b22d997f668": "langchain-core 1.8.3",
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
        BaseChatModel._agenerate_with_cache,
        _manager._configure,
        _tracing._tracing_v2_is_enabled,
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
        generated = await _generate(model, _normalize_messages(messages), kwargs)
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
    if _surely_unobserved(model, config):
        return True
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


def _surely_unobserved(model: BaseChatModel, config: RunnableConfig) -> bool:
    """True where `configure` would certainly find no handler; False: ask `configure`.

    Each source of a handler in `_configure` is looked at (the call's and the model's
    callbacks, `verbose`, debug, tracing by context or environment, the configure hooks), and
    the retired v1 tracing switch sends the call to `configure`, which refuses it.
    """
    if config.get("callbacks") or model.callbacks or model.verbose or get_debug():
        return False
    if _tracing._tracing_v2_is_enabled():
        return False
    if env_var_is_set("LANGCHAIN_TRACING") or env_var_is_set("LANGCHAIN_HANDLER"):
        return False
    for var, _inheritable, handler_class, env_var in _tracing._configure_hooks:
        if var.get() is not None:
            return False
        if env_var is not None and handler_class is not None and env_var_is_set(env_var):
            return False
    return True


async def _generate(
    model: BaseChatModel, messages: list[BaseMessage], kwargs: Mapping[str, Any]
) -> ChatResult:
    """`model._agenerate_with_cache(messages, **kwargs)` with no run manager.

    Where the cache, the rate limiter, streaming and the v1 output would each do nothing, the
    call is `_agenerate` and the metadata stamp that `_agenerate_with_cache` adds after it.
    """
    plain = (
        (model.cache is False or (model.cache is None and get_llm_cache() is None))
        and model.rate_limiter is None
        and model.output_version != "v1"
        and "_agenerate" not in vars(model)
        and not model._should_use_protocol_streaming(async_api=True, run_manager=None, **kwargs)
        and not model._should_stream(async_api=True, run_manager=None, **kwargs)
    )
    if not plain:
        return await model._agenerate_with_cache(messages, **kwargs)
    if _takes_run_manager(type(model)._agenerate):
        result = await model._agenerate(messages, stop=None, run_manager=None, **kwargs)
    else:
        result = await model._agenerate(messages, stop=None, **kwargs)
    for generation in result.generations:
        generation.message.response_metadata = _gen_info_and_msg_metadata(generation)
    if len(result.generations) == 1 and result.llm_output is not None:
        message = result.generations[0].message
        message.response_metadata = {**result.llm_output, **message.response_metadata}
    return result


@functools.cache
def _takes_run_manager(method: Callable[..., Any]) -> bool:
    """Whether `_agenerate` names `run_manager`, as LangChain asks on every call."""
    return "run_manager" in _signature_parameters(method)
