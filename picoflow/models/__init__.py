"""Which chat model a step talks to: `ModelLike`, `ModelSpec` and the provider registry.

A flow names its models as data (`"openai:gpt-4o"` or a `ModelSpec`) so that the same flow code
runs against OpenAI in production and a scripted model in tests: the engine's provider registry
decides what a name becomes. A ready `BaseChatModel` instance is accepted too, for tests and for
providers that need hand-built clients. The built-in providers (`_providers.BUILTIN_PROVIDERS`)
are checked when the engine starts: the integration package must be installed and the params
must be ones the chat model class accepts. A model that cannot be built yet for want of a
credential is built on first use, so a missing API key never stops an engine that does not need
that model.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel

from picoflow.errors import FlowDefinitionError
from picoflow.models._catalog import check_catalog
from picoflow.models._providers import BUILTIN_PROVIDERS

__all__ = ["ModelSpec", "ModelLike", "ProviderFactory", "parse_model", "ProviderRegistry"]


@dataclass(frozen=True)
class ModelSpec:
    """A model selection: provider name, model name, constructor params, retries and timeout.

    `retry_attempts` is how many times picoflow retries a call that failed for a transient
    reason (timeout, rate limit, 5xx, dropped connection), with backoff (V9); `timeout` is the
    most seconds one call may take (None: no limit of picoflow's own). The built-in providers
    turn the client's own retries off, so attempts are not multiplied.
    """

    provider: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    retry_attempts: int = 3
    timeout: float | None = field(default=None, kw_only=True)

    def __repr__(self) -> str:
        """Like the dataclass repr, with credential-like params masked (it may reach a log)."""
        params = _masked(self.params)
        timeout = "" if self.timeout is None else f", timeout={self.timeout!r}"
        return (
            f"ModelSpec(provider={self.provider!r}, name={self.name!r}, params={params!r}, "
            f"retry_attempts={self.retry_attempts!r}{timeout})"
        )

    def describe(self) -> dict[str, Any]:
        """The persisted form, with credential-like parameters removed."""
        described = {
            "provider": self.provider,
            "name": self.name,
            "params": _without_secrets(self.params),
            "retry_attempts": self.retry_attempts,
        }
        if self.timeout is not None:
            described["timeout"] = self.timeout
        return described


ModelLike: TypeAlias = "str | ModelSpec | BaseChatModel"
CLIENT_RETRIES = 0  # the built-in clients' own retry setting: picoflow retries itself (V9)
ProviderFactory: TypeAlias = Callable[[ModelSpec], BaseChatModel]

_MODEL_STRING = re.compile(r"^([A-Za-z][\w.-]*):(\S+)$")
# A key ending in "token" is a credential (`token`, `azure_ad_token`, `accessToken`); one ending
# in "tokens" is a limit (`max_tokens`) and is kept.
_SECRET = re.compile(
    r"api_?key|authorization|credential|password|secret|token$|token_provider$", re.I
)


def parse_model(model: Any, where: str) -> ModelSpec | BaseChatModel:
    """Normalise a ModelLike; `where` names the flow or step for the error message."""
    if isinstance(model, (ModelSpec, BaseChatModel)):
        return model
    if isinstance(model, str):
        match = _MODEL_STRING.match(model.strip())
        if match:
            return ModelSpec(match.group(1), match.group(2))
    raise FlowDefinitionError(
        f"{where}: {model!r} is not a model. Use a 'provider:model' string such as "
        "'openai:gpt-4o', a ModelSpec(provider, name), or a LangChain BaseChatModel instance."
    )


class ProviderRegistry:
    """Resolves model selections to chat models, building each distinct model once."""

    def __init__(self, providers: Mapping[str, ProviderFactory] | None = None) -> None:
        """The built-in providers, plus `providers`, which add names or replace built-in ones."""
        self._factories: dict[str, ProviderFactory] = {
            name: _builtin(name) for name in BUILTIN_PROVIDERS
        }
        self._factories.update(providers or {})
        self._custom = set(providers or {})
        self._built: dict[tuple[str, str, str, int], BaseChatModel] = {}
        self._bound: dict[tuple[int, ...], tuple[BaseChatModel, list[dict[str, Any]], Any]] = {}

    def check(self, model: ModelSpec | BaseChatModel, where: str) -> None:
        """Fail now, at engine start, if nothing can build this model (F5).

        A built-in provider's model is also built here when it can be, which validates its
        params with the integration's own checks; the model is then reused by `resolve`.
        """
        if not isinstance(model, ModelSpec):
            return
        if model.provider not in self._factories:
            known = sorted(self._factories)
            close = difflib.get_close_matches(model.provider, known, n=1)
            hint = f"Did you mean '{close[0]}'? " if close else ""
            raise FlowDefinitionError(
                f"{where}: unknown model provider '{model.provider}' in "
                f"'{model.provider}:{model.name}'. {hint}Known providers: {', '.join(known)}. "
                "Register it with FlowEngine(providers={'" + model.provider + "': factory})."
            )
        key = _key(model)
        if model.provider in self._custom or key in self._built:
            return
        builtin = BUILTIN_PROVIDERS[model.provider]
        builtin.chat_class(where)  # a missing integration is named before anything else
        check_catalog(model.provider, model.name, model.params, where)  # U7
        built = builtin.check(model.name, model.params, CLIENT_RETRIES, where)
        if built is not None:
            self._built[key] = built

    def bound(self, model: BaseChatModel, tools: list[dict[str, Any]]) -> Any:
        """`model.bind_tools(tools)`, built once per model and tool set.

        Providers do real work in `bind_tools` (ChatOpenAI converts every schema), and a step
        exposes the same tools on every call, so the bound runnable is reused across turns.
        Tool schemas are built once per tool (`ToolSpec.schema`), so the key is their identity;
        the entry holds the model and the schemas, so no id in a live key can be reused.
        """
        if not tools:
            return model
        key = (id(model), *map(id, tools))
        hit = self._bound.get(key)
        if hit is None:
            hit = self._bound[key] = (model, list(tools), model.bind_tools(tools))
        return hit[2]

    def resolve(self, model: ModelSpec | BaseChatModel) -> BaseChatModel:
        """The chat model for a selection, built on first use and then reused."""
        if isinstance(model, BaseChatModel):
            return model
        key = _key(model)
        built = self._built.get(key)
        if built is None:
            built = self._factories[model.provider](model)
            self._built[key] = built
        return built


def _key(spec: ModelSpec) -> tuple[str, str, str, int]:
    return (spec.provider, spec.name, repr(sorted(spec.params.items())), spec.retry_attempts)


def _builtin(name: str) -> ProviderFactory:
    provider = BUILTIN_PROVIDERS[name]

    def build(spec: ModelSpec) -> BaseChatModel:
        # V9: picoflow retries transient failures itself (`_retries`), with backoff and
        # Retry-After; the client's own retries are off, so attempts are never multiplied.
        return provider.build(spec.name, spec.params, CLIENT_RETRIES)

    return build


def describe_model(model: ModelSpec | BaseChatModel) -> dict[str, Any]:
    """What a session document records about a model (never a secret)."""
    if isinstance(model, ModelSpec):
        return model.describe()
    return {"provider": "instance", "name": type(model).__name__}


def _masked(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: "***" if _SECRET.search(str(key)) else _nested(value, _masked)
        for key, value in params.items()
    }


def _without_secrets(params: Mapping[str, Any]) -> dict[str, Any]:
    return {
        key: _nested(value, _without_secrets)
        for key, value in params.items()
        if not _SECRET.search(str(key))
    }


def _nested(value: Any, clean: Callable[[Mapping[str, Any]], dict[str, Any]]) -> Any:
    """Apply `clean` to mappings at any depth, inside lists too (a list of header dicts)."""
    if isinstance(value, Mapping):
        return clean(value)
    if isinstance(value, (list, tuple)):
        return [_nested(item, clean) for item in value]
    return value
