"""Which chat model a step talks to: `ModelLike`, `ModelSpec` and the provider registry.

A flow names its models as data (`"openai:gpt-4o"` or a `ModelSpec`) so that the same flow code
runs against OpenAI in production and a scripted model in tests: the engine's provider registry
decides what a name becomes. A ready `BaseChatModel` instance is accepted too, for tests and for
providers that need hand-built clients. Provider names are checked when the engine starts; chat
model objects are built on first use, so a missing API key never stops an engine that does not
need that model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from langchain_core.language_models import BaseChatModel

from .errors import FlowDefinitionError

__all__ = ["ModelSpec", "ModelLike", "ProviderFactory", "parse_model", "ProviderRegistry"]


@dataclass(frozen=True)
class ModelSpec:
    """A model selection: provider name, model name, constructor params, call policy.

    `retry_attempts` is how many times picoflow retries a call that failed for a transient
    reason (timeout, rate limit, 5xx, dropped connection), with backoff (V9); `timeout` is the
    most seconds one call may take (None: no limit of picoflow's own). The built-in OpenAI
    provider turns the client's own retries off, so attempts are not multiplied.
    """

    provider: str
    name: str
    params: dict[str, Any] = field(default_factory=dict)
    retry_attempts: int = 3
    timeout: float | None = field(default=None, kw_only=True)

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
ProviderFactory: TypeAlias = Callable[[ModelSpec], BaseChatModel]

_MODEL_STRING = re.compile(r"^([A-Za-z][\w.-]*):(\S+)$")
_SECRET = re.compile(r"api_?key|authorization|credential|password|secret|token", re.I)


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


def _openai(spec: ModelSpec) -> BaseChatModel:
    """The built-in provider; langchain-openai reads OPENAI_API_KEY and OPENAI_BASE_URL."""
    from langchain_openai import ChatOpenAI

    params = {"max_retries": 0, **spec.params}  # picoflow retries (V9); never twice over
    return ChatOpenAI(model=spec.name, **params)


class ProviderRegistry:
    """Resolves model selections to chat models, building each distinct model once."""

    def __init__(self, providers: Mapping[str, ProviderFactory] | None = None) -> None:
        self._factories: dict[str, ProviderFactory] = {"openai": _openai, **(providers or {})}
        self._built: dict[tuple[str, str, str, int], BaseChatModel] = {}
        self._bound: dict[tuple[int, ...], tuple[BaseChatModel, list[dict[str, Any]], Any]] = {}

    def check(self, model: ModelSpec | BaseChatModel, where: str) -> None:
        """Fail now, at engine start, if nothing can build this model (F5)."""
        if isinstance(model, ModelSpec) and model.provider not in self._factories:
            known = ", ".join(sorted(self._factories))
            raise FlowDefinitionError(
                f"{where}: unknown model provider '{model.provider}' in "
                f"'{model.provider}:{model.name}'. Known providers: {known}. Register it with "
                "FlowEngine(providers={'" + model.provider + "': factory})."
            )

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
        key = (model.provider, model.name, repr(sorted(model.params.items())), model.retry_attempts)
        built = self._built.get(key)
        if built is None:
            built = self._factories[model.provider](model)
            self._built[key] = built
        return built


def describe_model(model: ModelSpec | BaseChatModel) -> dict[str, Any]:
    """What a session document records about a model (never a secret)."""
    if isinstance(model, ModelSpec):
        return model.describe()
    return {"provider": "instance", "name": type(model).__name__}


def _without_secrets(params: Mapping[str, Any]) -> dict[str, Any]:
    clean: dict[str, Any] = {}
    for key, value in params.items():
        if _SECRET.search(key):
            continue
        clean[key] = _without_secrets(value) if isinstance(value, Mapping) else value
    return clean
