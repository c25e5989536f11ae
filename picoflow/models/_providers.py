"""The built-in model providers: a small table from provider name to LangChain chat model class.

Why a table and not LangChain's `init_chat_model`: that function lives in the `langchain`
package, which pulls in LangGraph; picoflow needs only the class per provider, and with its own
table it can name picoflow's extra in the install hint, check parameter names (most chat model
classes silently ignore an unknown one) and keep OpenRouter from ever receiving the OpenAI key.
docs/models.md records the decision.

Each integration is imported only when a flow names its provider, so an unused provider costs
nothing and a missing one is reported at engine start (F5), not at the first model call.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import ValidationError

from picoflow.errors import FlowDefinitionError

__all__ = ["BUILTIN_PROVIDERS", "BuiltinProvider"]

logger = logging.getLogger("picoflow.models")

OPENROUTER_URL = "https://openrouter.ai/api/v1"
_RESERVED = ("model", "model_name")


@dataclass(frozen=True, slots=True)
class BuiltinProvider:
    """How one provider name becomes a chat model: which class, from which package."""

    name: str
    module: str
    class_name: str
    package: str
    extra: str | None
    retry_param: str | None = "max_retries"
    defaults: Callable[[dict[str, Any]], dict[str, Any]] | None = None

    def install_hint(self) -> str:
        """The command that installs the integration (the picoflow extra when there is one)."""
        if self.extra is None:
            return f"pip install {self.package}"
        return f"pip install 'picoflow[{self.extra}]' (or: pip install {self.package})"

    def chat_class(self, where: str) -> type[BaseChatModel]:
        """Import the integration, or explain which package is missing and how to install it."""
        try:
            module = importlib.import_module(self.module)
        except ImportError as exc:
            raise FlowDefinitionError(
                f"{where}: the '{self.name}' model provider needs the {self.package} package, "
                f"which is not installed. Install it with: {self.install_hint()}"
            ) from exc
        chat_class: type[BaseChatModel] = getattr(module, self.class_name)
        return chat_class

    def arguments(self, name: str, params: dict[str, Any], retry_attempts: int) -> dict[str, Any]:
        """The constructor arguments: model name, retries, provider defaults, then params."""
        arguments: dict[str, Any] = {"model": name}
        if self.retry_param is not None:
            arguments[self.retry_param] = retry_attempts
        if self.defaults is not None:
            arguments.update(self.defaults(params))
        arguments.update(params)
        return arguments

    def build(self, name: str, params: dict[str, Any], retry_attempts: int) -> BaseChatModel:
        """Construct the chat model (the provider's own errors, e.g. a missing key, pass up)."""
        chat_class = self.chat_class(f"'{self.name}:{name}'")
        return chat_class(**self.arguments(name, params, retry_attempts))

    def check(
        self, name: str, params: dict[str, Any], retry_attempts: int, where: str
    ) -> BaseChatModel | None:
        """Validate the selection at engine start; return the built model when it builds.

        A parameter the class does not know, or a value its validation rejects, is a
        FlowDefinitionError. Anything else that stops construction (a missing API key or
        endpoint in the environment) is left for the first call that needs the model, so an
        engine never fails to start over a credential it may not use.
        """
        chat_class = self.chat_class(where)
        _check_names(chat_class, params, f"{where}: '{self.name}:{name}'")
        try:
            return chat_class(**self.arguments(name, params, retry_attempts))
        except ValidationError as exc:
            bad = [e for e in exc.errors() if e["loc"] and _known(chat_class, e["loc"][0], params)]
            if bad:
                raise FlowDefinitionError(
                    f"{where}: '{self.name}:{name}' has invalid model params: "
                    + "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in bad)
                    + f". Fix them in the ModelSpec params ({chat_class.__name__} rejects them)."
                ) from exc
            _defer(self.name, name, exc)
        except Exception as exc:  # the provider's own start-up checks, deferred (see above)
            _defer(self.name, name, exc)
        return None


def _defer(provider: str, name: str, exc: Exception) -> None:
    # The message names the problem only: it never echoes the params, which may hold a key.
    logger.info(
        "model '%s:%s' cannot be built yet (%s); it will be built on first use",
        provider,
        name,
        type(exc).__name__,
    )


def _field_names(chat_class: type[BaseChatModel]) -> set[str]:
    names: set[str] = set()
    for field_name, field in chat_class.model_fields.items():
        names.add(field_name)
        if isinstance(field.alias, str):
            names.add(field.alias)
        if isinstance(field.validation_alias, str):
            names.add(field.validation_alias)
    return names


def _known(chat_class: type[BaseChatModel], loc: Any, params: dict[str, Any]) -> bool:
    """Whether a validation error is about a parameter the flow passed (not the environment)."""
    if loc in params:
        return True
    field = chat_class.model_fields.get(str(loc))
    return field is not None and (field.alias in params or field.validation_alias in params)


def _check_names(chat_class: type[BaseChatModel], params: dict[str, Any], where: str) -> None:
    for key in params:
        if key in _RESERVED:
            raise FlowDefinitionError(
                f"{where}: params may not set '{key}'; the model name is the part after the "
                "colon (or ModelSpec's name)."
            )
    known = _field_names(chat_class)
    for key in params:
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f" Did you mean '{close[0]}'?" if close else ""
            if "model_kwargs" in known:
                hint += " Pass provider-specific request fields inside model_kwargs instead."
            raise FlowDefinitionError(
                f"{where}: {chat_class.__name__} has no parameter '{key}'.{hint}"
            )


def _openrouter_defaults(params: dict[str, Any]) -> dict[str, Any]:
    """OpenRouter's endpoint and key, never the OpenAI ones ChatOpenAI would otherwise read."""
    key = params.get("api_key") or os.environ.get("OPENROUTER_API_KEY")
    if not key:
        # Without this, ChatOpenAI would fall back to OPENAI_API_KEY and send it to OpenRouter.
        raise ValueError(
            "the 'openrouter' provider needs an API key: set OPENROUTER_API_KEY or pass "
            "params={'api_key': ...}."
        )
    return {"base_url": os.environ.get("OPENROUTER_BASE_URL", OPENROUTER_URL), "api_key": key}


BUILTIN_PROVIDERS: dict[str, BuiltinProvider] = {
    provider.name: provider
    for provider in [
        BuiltinProvider("openai", "langchain_openai", "ChatOpenAI", "langchain-openai", None),
        BuiltinProvider(
            "azure_openai", "langchain_openai", "AzureChatOpenAI", "langchain-openai", None
        ),
        BuiltinProvider(
            "anthropic", "langchain_anthropic", "ChatAnthropic", "langchain-anthropic", "anthropic"
        ),
        BuiltinProvider(
            "google_genai",
            "langchain_google_genai",
            "ChatGoogleGenerativeAI",
            "langchain-google-genai",
            "google-genai",
        ),
        BuiltinProvider(
            "ollama", "langchain_ollama", "ChatOllama", "langchain-ollama", "ollama", None
        ),
        BuiltinProvider(
            "deepseek", "langchain_deepseek", "ChatDeepSeek", "langchain-deepseek", "deepseek"
        ),
        BuiltinProvider(
            "openrouter",
            "langchain_openai",
            "ChatOpenAI",
            "langchain-openai",
            None,
            defaults=_openrouter_defaults,
        ),
    ]
}
