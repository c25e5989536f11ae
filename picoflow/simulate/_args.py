"""Argument checks of the compaction simulator: every mistake is reported before any read.

Each message says what was wrong and what to pass instead (STYLE section 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from picoflow.memory import SummaryConfig
from picoflow.models import ModelLike, ProviderRegistry, parse_model
from picoflow.simulate._replay import ReplayOptions

__all__ = ["Options", "check_options", "session_ids_of"]

_PRICE_NAMES = ("price_per_million_tokens", "summary_price_per_million_tokens")


@dataclass(frozen=True)
class Options:
    """Checked arguments of a simulation, shared by the API and the CLI."""

    replay: ReplayOptions
    settings: list[SummaryConfig | None]
    namespaces: list[str] | None
    price: float | None
    summary_price: float | None


def session_ids_of(session_ids: str | Sequence[str]) -> list[str]:
    ids = [session_ids] if isinstance(session_ids, str) else list(session_ids)
    if not ids or not all(isinstance(session_id, str) for session_id in ids):
        raise ValueError(
            f"session_ids must be a session id or a non-empty list of them, got {session_ids!r}."
        )
    return ids


def check_options(
    settings: Sequence[SummaryConfig | None],
    namespaces: Sequence[str] | None,
    summary_tokens: int | None,
    summary_model: ModelLike | None,
    context_window: int | None,
    prices: tuple[float | None, float | None],
) -> Options:
    """Check every argument before anything is read, so a mistake costs no store round trip."""
    checked = _settings(settings)
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    _positive("summary_tokens", summary_tokens)
    _positive("context_window", context_window)
    for name, price in zip(_PRICE_NAMES, prices, strict=True):
        if price is not None and (isinstance(price, bool) or not isinstance(price, int | float)):
            raise TypeError(f"{name} must be a number (per million tokens), got {price!r}.")
        if price is not None and price < 0:
            raise ValueError(f"{name} must be 0 or more, got {price!r}.")
    replay = ReplayOptions(summary_tokens, _summary_model(summary_model), context_window)
    names = None if namespaces is None else list(namespaces)
    return Options(replay, checked, names, prices[0], prices[1])


def _settings(settings: Sequence[SummaryConfig | None]) -> list[SummaryConfig | None]:
    if isinstance(settings, str):
        raise TypeError(
            f"settings must be a list of SummaryConfig or None, got the string {settings!r}; "
            "parse_setting('16/8') turns the CLI's MIN/RECENT form into a SummaryConfig."
        )
    checked: list[SummaryConfig | None] = (
        [settings] if isinstance(settings, SummaryConfig) else list(settings)
    )
    if not checked:
        raise ValueError(
            "No settings to simulate: pass at least one SummaryConfig, or None for compaction "
            "off, e.g. settings=[None, SummaryConfig(16, 8)]."
        )
    for index, setting in enumerate(checked):
        if setting is not None and not isinstance(setting, SummaryConfig):
            raise TypeError(
                f"settings[{index}] is {setting!r}; pass SummaryConfig(min_messages, "
                "recent_messages, ...) or None (compaction off). parse_setting('16/8') reads "
                "the CLI's MIN/RECENT form."
            )
    return checked


def _positive(name: str, value: int | None) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{name} must be a positive integer (tokens) or None, got {value!r}.")


def _summary_model(model: ModelLike | None) -> BaseChatModel | None:
    """A ModelLike as a chat model: instances as they are, strings with the built-in providers."""
    if model is None:
        return None
    spec = parse_model(model, "simulate_compaction(summary_model=...)")
    registry = ProviderRegistry()
    registry.check(spec, "simulate_compaction(summary_model=...)")
    return registry.resolve(spec)
