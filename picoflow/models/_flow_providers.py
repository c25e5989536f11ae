"""The model providers a flow brings with it (`Flow.providers`), merged into the engine's.

A flow whose default model is not a built-in provider (the demos' `"offline:hotel"`) would
otherwise need every caller to know its factory: the scenario runner, the server, each test.
Declaring it on the flow lets `FlowEngine([HotelFlow])` run as it is. The engine's own
`providers=` always wins, so a test can still swap any provider.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from picoflow.errors import FlowDefinitionError
from picoflow.models import ProviderFactory

__all__ = ["merged_providers"]


def merged_providers(
    flows: Iterable[Any], explicit: Mapping[str, ProviderFactory] | None
) -> dict[str, ProviderFactory]:
    """The flows' declared providers under the engine's explicit ones.

    Two flows declaring the same provider name with different factories is a
    `FlowDefinitionError`: the registry is shared by every flow of an engine, so one of the
    two would silently build the other's models.
    """
    chosen: dict[str, tuple[ProviderFactory, str]] = {}
    given = explicit or {}
    for flow_class in flows:
        declared = getattr(flow_class, "providers", None) or {}
        flow_name = getattr(flow_class, "name", repr(flow_class))
        for name, factory in dict(declared).items():
            if name in given:
                continue
            seen = chosen.get(name)
            if seen is not None and seen[0] is not factory:
                raise FlowDefinitionError(
                    f"Flows '{seen[1]}' and '{flow_name}' both declare a model provider "
                    f"'{name}', with different factories; one engine has one provider per name. "
                    f"Pass the one to use with FlowEngine(providers={{'{name}': factory}}), or "
                    "run the flows on separate engines."
                )
            chosen[name] = (factory, flow_name)
    return {**{name: pair[0] for name, pair in chosen.items()}, **given}
