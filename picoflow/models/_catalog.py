"""What the built-in providers' own endpoints accept (U7): model names, and params per model.

PicoFlow's model catalog refuses an unknown model of a built-in provider, and a parameter the
model rejects (`temperature` on OpenAI's reasoning models), when the flow is set up rather than
at the first call. This is the same check, as a short table of name patterns per provider.

A name is only checked against the provider's **own** endpoint: with a base URL of your own
(`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, ... or `params={"base_url": ...}`) any name is
accepted, because an OpenAI-compatible server (vLLM, LM Studio, a proxy) has models of its own.
Ollama and Azure OpenAI (deployment names) take any name. Parameters are checked whatever the
endpoint, since they follow from the model named.

    >>> catalog_problem("openai", "gpt-4o", {"temperature": 0.2}, env={}) is None
    True
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from typing import Any

from picoflow.errors import FlowDefinitionError

__all__ = ["check_catalog", "catalog_problem"]

_DATED = r"(?:-\d{4}-\d{2}-\d{2}|-\d{4})?"
KNOWN: dict[str, tuple[re.Pattern[str], list[str]]] = {
    "openai": (
        re.compile(
            r"^(?:gpt-4o(?:-mini)?(?:-audio-preview|-search-preview)?|chatgpt-4o-latest|"
            r"gpt-4\.1(?:-mini|-nano)?|gpt-4\.5-preview|gpt-4(?:-turbo)?(?:-preview)?|"
            r"gpt-3\.5-turbo(?:-16k|-instruct)?|gpt-5(?:\.\d+)?(?:-mini|-nano|-chat(?:-latest)?|"
            r"-codex|-pro)?|o1(?:-mini|-preview|-pro)?|o3(?:-mini|-pro|-deep-research)?|"
            r"o4-mini(?:-deep-research)?|gpt-oss-\d+b)" + _DATED + "$"
        ),
        ["gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "gpt-5", "gpt-5-mini", "o3",
         "o4-mini"],
    ),
    "anthropic": (
        re.compile(r"^claude-[a-z0-9.-]+$"),
        ["claude-sonnet-4-5", "claude-opus-4-1", "claude-3-5-haiku-latest"],
    ),
    "google_genai": (
        re.compile(r"^(?:models/)?(?:gemini|gemma|learnlm)-[a-z0-9.-]+$"),
        ["gemini-2.5-flash", "gemini-2.5-pro", "gemini-2.0-flash"],
    ),
    "deepseek": (re.compile(r"^deepseek-[a-z0-9.-]+$"), ["deepseek-chat", "deepseek-reasoner"]),
    "openrouter": (
        re.compile(r"^[\w.-]+/[\w.:-]+$"), ["openai/gpt-4o", "anthropic/claude-sonnet-4.5"]
    ),
}  # fmt: skip
"""Per provider: the names its own endpoint serves, and a few to suggest."""

BASE_URL_ENV: dict[str, tuple[str, ...]] = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_URL"),
    "google_genai": ("GOOGLE_GEMINI_BASE_URL",),
    "deepseek": ("DEEPSEEK_API_BASE",),
    "openrouter": ("OPENROUTER_BASE_URL",),
}
_BASE_URL_PARAMS = ("base_url", "openai_api_base", "anthropic_api_url", "api_base")

_REASONING = re.compile(r"^(?:o\d(?:-|$)|gpt-5(?!(?:\.\d+)?-chat))")
_SAMPLING = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "logprobs")


def _own_endpoint(provider: str, params: Mapping[str, Any], env: Mapping[str, str]) -> bool:
    if any(params.get(key) for key in _BASE_URL_PARAMS):
        return False
    return not any(env.get(name) for name in BASE_URL_ENV.get(provider, ()))


def catalog_problem(
    provider: str, name: str, params: Mapping[str, Any], *, env: Mapping[str, str] | None = None
) -> str | None:
    """What the provider's catalog has against this selection, or None."""
    environment = os.environ if env is None else env
    known = KNOWN.get(provider)
    if known is not None and _own_endpoint(provider, params, environment):
        pattern, examples = known
        if not pattern.match(name):
            close = difflib.get_close_matches(name, examples, n=1, cutoff=0.5)
            hint = f"Did you mean '{close[0]}'? " if close else f"For example: {examples[0]}. "
            return (
                f"'{provider}:{name}' is not a model the {provider} provider serves. {hint}"
                "Check the name, or give the endpoint that serves it (params={'base_url': ...})."
            )
    if provider in ("openai", "azure_openai", "openrouter"):
        bare = name.split("/")[-1]
        rejected = [key for key in _SAMPLING if key in params]
        if _REASONING.match(bare) and rejected:
            return (
                f"'{provider}:{name}' is a reasoning model and does not accept "
                f"{', '.join(repr(key) for key in rejected)}. Remove it from the params; to "
                "steer it, set params={'reasoning_effort': 'low' | 'medium' | 'high'}."
            )
    return None


def check_catalog(provider: str, name: str, params: Mapping[str, Any], where: str) -> None:
    """Raise FlowDefinitionError at engine start when the catalog refuses the selection (U7)."""
    problem = catalog_problem(provider, name, params)
    if problem is not None:
        raise FlowDefinitionError(f"{where}: {problem}")
