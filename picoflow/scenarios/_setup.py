"""What the command line needs before any turn runs: flows, models, targets (X2).

Everything here fails with `SetupError` and a message saying what to pass instead, so the
runner can refuse (exit 2) before a single scenario starts.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from picoflow.engine import FlowEngine
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models import ModelLike, ProviderFactory, ProviderRegistry, parse_model
from picoflow.models._flow_providers import merged_providers
from picoflow.scenarios._targets import EngineTarget, HttpTarget, Target
from picoflow.stores import MemoryStore, Store, from_url

__all__ = ["SetupError", "Setup", "import_object", "flows_from", "providers_from", "bound_to"]


class SetupError(ValueError):
    """An option of the runner that cannot work; the message says what to pass instead."""


def import_object(spec: str, option: str) -> Any:
    """The object `module:attr` names."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise SetupError(f"{option} {spec!r}: write module:name, e.g. demo.hotel.flow:HotelFlow.")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SetupError(f"{option} {spec!r}: cannot import {module_name!r} ({exc}).") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise SetupError(f"{option} {spec!r}: {module_name} has no {attr!r}.") from None


def flows_from(specs: Sequence[str]) -> list[type[Flow]]:
    """The Flow classes of `--flows a:B,c:D` (the option may repeat)."""
    flows = []
    for spec in (part.strip() for text in specs for part in text.split(",")):
        if not spec:
            continue
        found = import_object(spec, "--flows")
        if not (isinstance(found, type) and issubclass(found, Flow)):
            raise SetupError(f"--flows {spec!r} is {found!r}, not a Flow subclass.")
        flows.append(found)
    return flows


def providers_from(specs: Sequence[str]) -> dict[str, ProviderFactory]:
    """The factories of `--provider name=module:factory`."""
    providers = {}
    for spec in specs:
        name, sep, target = spec.partition("=")
        if not sep or not name:
            raise SetupError(
                f"--provider {spec!r}: write name=module:factory, e.g. "
                "offline=demo.ported:offline_provider."
            )
        factory = import_object(target, "--provider")
        if not callable(factory):
            raise SetupError(f"--provider {spec!r}: {factory!r} is not callable.")
        providers[name] = factory
    return providers


def bound_to(flow: type[Flow], model: ModelLike) -> type[Flow]:
    """`flow` with `model` as its default model; steps that pin their own keep it."""

    def config_model(self: Flow) -> ModelLike:
        return model

    return type(flow.__name__, (flow,), {"name": flow.name, "config_model": config_model})


@dataclass
class Setup:
    """The runner's targets, one engine per flow (flows may bring clashing providers)."""

    flows: list[type[Flow]] = field(default_factory=list)
    store_url: str | None = None
    url: str | None = None
    model: str | None = None
    providers: dict[str, ProviderFactory] = field(default_factory=dict)
    _targets: dict[str, Target] = field(default_factory=dict)

    def check(self, flow_names: Sequence[str]) -> None:
        """Build what the scenarios need now, so a mistake is a refusal, not a failed turn."""
        if self.url is None and not self.flows:
            raise SetupError(
                "Name the flows to run in process with --flows module:Flow (e.g. "
                "--flows demo.hotel.flow:HotelFlow), or a live server with --url."
            )
        for name in dict.fromkeys(flow_names):
            self.target(name)

    def target(self, flow_name: str) -> Target:
        """The target that runs `flow_name` (built once)."""
        if flow_name not in self._targets:
            self._targets[flow_name] = self._build(flow_name)
        return self._targets[flow_name]

    def model_for(self, spec: str, option: str) -> BaseChatModel:
        """A judge or user model from `provider:model`, with the flows' providers too."""
        registry = ProviderRegistry(merged_providers(self.flows, self.providers))
        try:
            parsed = parse_model(spec, option)
            if isinstance(parsed, BaseChatModel):  # pragma: no cover - a string never is
                return parsed
            registry.check(parsed, option)
            return registry.resolve(parsed)
        except (FlowDefinitionError, ValueError) as exc:
            raise SetupError(str(exc)) from exc

    async def aclose(self) -> None:
        """Close every engine, client and store the setup built."""
        for target in self._targets.values():
            if isinstance(target, EngineTarget):
                await target.engine.aclose()
            elif isinstance(target, HttpTarget):
                await target.aclose()

    def _build(self, flow_name: str) -> Target:
        if self.url is not None:
            return HttpTarget(self.url, store=self._store() if self.store_url else None)
        flow = _named(self.flows, flow_name)
        if self.model is not None:
            flow = bound_to(flow, self.model)
        store = self._store()
        try:
            engine = FlowEngine([flow], store=store, providers=self.providers or None)
        except (FlowDefinitionError, ValueError, ImportError) as exc:
            raise SetupError(f"{flow_name}: {exc}") from exc
        return EngineTarget(engine)

    def _store(self) -> Store:
        if self.store_url is None:
            return MemoryStore()
        try:
            return from_url(self.store_url)
        except (ValueError, ImportError) as exc:
            raise SetupError(f"--store: {exc}") from exc


def _named(flows: Sequence[type[Flow]], flow_name: str) -> type[Flow]:
    by_name: Mapping[str, type[Flow]] = {flow.name: flow for flow in flows}
    if flow_name not in by_name:
        raise SetupError(
            f"The scenario's flowName {flow_name!r} is not among --flows "
            f"({', '.join(by_name) or 'none'}); add its class, e.g. --flows module:{flow_name}."
        )
    return by_name[flow_name]
