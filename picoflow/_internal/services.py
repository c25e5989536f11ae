"""What the engine lends a flow object for one turn, in one record.

A `Flow` is built fresh for every turn (F1) and knows nothing of the engine that runs it. A few
of its public methods still need the engine's services: `memory_bank()` needs the store, the
session's owner and the embeddings (L1, L4, L5); `Step.run_step`/`call_tool` need the turn's
nested runner (V2, V3, V6); `concurrent_steps` needs the batch runner (U8); `get_flow_engine()`
the engine itself (D4). The engine builds a
`TurnServices` once per turn and hands it over in one assignment, so the flow never holds loose
engine attributes and this layer never imports the runner or the engine: they are reached
through the two protocols below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

# A `Step` and a `Flow`: this layer sits below both and names neither, even for types, so no
# import circle runs through it (see docs/architecture.md).
Step = Any
Flow = Any

__all__ = ["BatchRunner", "NestedRunner", "TurnServices"]


class NestedRunner(Protocol):
    """Runs steps and tools inside the current turn (`picoflow._runner.nested.NestedRuns`)."""

    async def call_tool(self, step: Step, name: str, args: dict[str, Any]) -> str: ...

    async def run_step(self, parent: Step, child: Any, message: str | None) -> Any: ...

    async def run_steps(
        self, parent: Step, children: Any, max_concurrency: int | None, failure_policy: str
    ) -> list[Any]: ...


class BatchRunner(Protocol):
    """Starts sessions of the same flow for `concurrent_steps` (`engine._batch.BatchRuns`)."""

    async def run(
        self,
        flow: Flow,
        items: Iterable[Any],
        batch_size: int,
        on_config: Callable[[Any], Any],
        on_bot_response: Any,
        url: str | None,
        transport: Any,
    ) -> list[Any]: ...


@dataclass(frozen=True, slots=True)
class TurnServices:
    """The engine's services for one turn; a flow outside a turn has the empty one.

    Attributes:
        owner: the session's owner (H4): whose memory bank the turn reads and writes (L1).
        store: the engine's store, for the owner's memory bank (L5).
        embeddings: the engine's LangChain `Embeddings`, if any (L4).
        nested: runs other steps and tools in this turn (V2, V3, V6).
        batch: runs sessions of the same flow (U8).
        engine: the `FlowEngine` running the turn, for `Flow.get_flow_engine()` (D4).
    """

    owner: str | None = None
    store: Any = None
    embeddings: Any = None
    nested: NestedRunner | None = None
    batch: BatchRunner | None = None
    engine: Any = None
