"""What `FlowEngine(...)` builds before any turn (F5): the checked flows, the store, the parts.

Kept out of `FlowEngine.__init__` so the constructor reads as the list of what it holds, and
so every part is built in one place, each given exactly what it uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from picoflow.engine._bank_checks import check_long_term
from picoflow.engine._checks import check_flow
from picoflow.engine._decisions import decision_providers
from picoflow.engine._history import HistoryActions
from picoflow.engine._idempotent import KeyedTurns
from picoflow.engine._loading import SessionLoader
from picoflow.engine._memory import MemoryOperations
from picoflow.engine._people import People
from picoflow.engine._request import ReadsSessions
from picoflow.engine._revisions import limit_archive
from picoflow.engine._turns import EngineServices, Turns
from picoflow.flow import Flow
from picoflow.models import ProviderRegistry
from picoflow.step._sources import check_tool_names
from picoflow.stores import Store
from picoflow.stores._url import store_from_environment
from picoflow.stores.base import StoreAbilities, abilities_of

__all__ = ["EngineParts", "build_parts", "checked_store", "registered_flows"]


def registered_flows(
    flows: Iterable[type[Flow]],
    registry: ProviderRegistry,
    decisions: Iterable[Any] | Mapping[str, Any] | None = None,
) -> tuple[dict[str, type[Flow]], list[Flow], dict[str, Any]]:
    """The flows by name, each checked (F5), one built instance of each, the decision providers.

    The instances are for what the engine wires once (MCP servers, long-term memory checks);
    a turn always builds its own flow object (F1). The decision providers are registered and
    every decision step's options checked against them (D2).

    Raises:
        FlowDefinitionError: a flow, or one of its steps or tools, is defined wrongly.
        TypeError, ValueError: `decisions` holds something that is not a decision provider,
            or two with one id.
    """
    by_name: dict[str, type[Flow]] = {}
    for flow_class in flows:
        check_flow(flow_class, registry, by_name)
        by_name[flow_class.name] = flow_class
    built = [flow_class() for flow_class in by_name.values()]
    for flow in built:
        for step in flow.steps.values():
            check_tool_names(step)
    return by_name, built, decision_providers(decisions, built, registry)


def checked_store(
    store: Store | None, built: list[Flow], embeddings: object, archive_limit: int | None
) -> tuple[Store, StoreAbilities]:
    """The engine's store (from `STORE_URL` when none is given) and its abilities (P2).

    Its abilities are asked here once; what the flows need of them is checked now (L1, L3,
    L4), and a store that trims its archive is told the limit (W5).

    Raises:
        FlowDefinitionError: a step uses long-term memory the store cannot keep.
        ValueError: `archive_limit` is not an int >= 1 or None.
    """
    chosen: Store = store if store is not None else store_from_environment()
    abilities = abilities_of(chosen)
    check_long_term(chosen, built, embeddings)
    limit_archive(abilities, archive_limit)
    return chosen, abilities


@dataclass(frozen=True, slots=True)
class EngineParts:
    """The parts behind `FlowEngine`'s public methods."""

    turns: Turns
    keyed: KeyedTurns
    people: People
    memory: MemoryOperations
    history: HistoryActions


def build_parts(
    flows: dict[str, type[Flow]],
    services: EngineServices,
    abilities: StoreAbilities,
    get_session: ReadsSessions,
    approval_lease: Callable[[], float],
) -> EngineParts:
    """Every part of an engine, each given what it uses (never the engine itself)."""
    sessions = services.sessions
    cancel = services.housekeeping.cancel
    loader = SessionLoader(sessions, services.revisions, services.telemetry, cancel)
    turns = Turns(flows, services, loader)
    memory = MemoryOperations(
        sessions,
        flows,
        services.housekeeping,
        abilities,
        embeddings=services.embeddings,
        get_session=get_session,
    )
    history = HistoryActions(
        services.revisions,
        sessions,
        abilities.memory_bank,
        run_turn=turns.run,
        get_session=get_session,
        first_flow=next(iter(flows), ""),  # an unknown session fails in its turn
    )
    return EngineParts(
        turns=turns,
        keyed=KeyedTurns(sessions, turns.run),
        people=People(sessions, flows, abilities.waiting, turns, approval_lease, services.spending),
        memory=memory,
        history=history,
    )
