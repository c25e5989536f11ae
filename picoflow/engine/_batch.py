"""Batch mode (U8): a turn that fans out into many new sessions of the same flow.

A request whose `config._concurrent` is truthy does not run the step loop: the engine calls the
flow's `spawn_steps()`, whose text is the turn's reply. From there the app calls
`concurrent_steps(items, batch_size, on_config, on_bot_response)`: batches run one after
another, the items of a batch concurrently, and each item is one full turn of a new session of
the same flow with `config = on_config(item)` (never with `_concurrent`, or the workers would
fan out again). Items run in-process through the engine, or are POSTed to `SELF_URL` (the full
run endpoint of a picoflow server, e.g. ``http://app:8000/ai/run``) so that another process
can take them. One item's failure is a failed `TurnResult` given to `on_bot_response`; it never
fails the others or the coordinator's turn.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from picoflow._internal.results import TurnResult
from picoflow.errors import FlowDefinitionError

if TYPE_CHECKING:
    from picoflow.flow import Flow

__all__ = ["BatchRuns", "is_batch_turn", "run_batch", "SELF_URL"]

SELF_URL = "SELF_URL"
CONCURRENT = "_concurrent"
_HTTP_TIMEOUT = 300.0  # seconds: a worker's turn is a whole model conversation turn

logger = logging.getLogger(__name__)


def is_batch_turn(flow: Flow) -> bool:
    """Whether this turn is a batch turn: the session's `config._concurrent` is truthy."""
    return bool(flow.get_context(f"config.{CONCURRENT}"))


async def run_batch(flow: Flow) -> str:
    """Run the flow's `spawn_steps()` instead of the step loop; its text is the reply."""
    reply = await flow.spawn_steps()
    if not isinstance(reply, str):
        raise FlowDefinitionError(
            f"{flow.name}.spawn_steps() returned {type(reply).__name__}; it must return the "
            "turn's reply text (a str), e.g. 'Finished concurrent flow'."
        )
    return reply


class StartsSessions(Protocol):
    """`FlowEngine.run` as a batch uses it: one turn of a new session of the flow."""

    async def run(
        self, flow_name: str, message: str, session_id: str | None, config: dict[str, Any] | None
    ) -> TurnResult: ...


class BatchRuns:
    """What `Flow.concurrent_steps` calls: the engine gives each turn's flow one of these."""

    def __init__(self, engine: StartsSessions) -> None:
        self._engine = engine

    @property
    def engine(self) -> StartsSessions:
        """The engine these runs start sessions through; a turn's flow reaches it too (D4)."""
        return self._engine

    async def run(
        self,
        flow: Flow,
        items: Iterable[Any],
        batch_size: int,
        on_config: Callable[[Any], Any],
        on_bot_response: Callable[[Any, TurnResult], Any] | None,
        url: str | None,
        transport: Any,
    ) -> list[TurnResult]:
        """Every item's result, in item order (see the module docstring)."""
        todo = _check(flow, items, batch_size, on_config, on_bot_response)
        target = url if url is not None else os.environ.get(SELF_URL) or None
        results: list[TurnResult] = []
        for start in range(0, len(todo), batch_size):
            batch = todo[start : start + batch_size]
            runs = [self._item(flow, item, on_config, target, transport) for item in batch]
            done = await asyncio.gather(*runs)
            for item, result in zip(batch, done, strict=True):
                if on_bot_response is not None:
                    answered = on_bot_response(item, result)
                    if inspect.isawaitable(answered):
                        await answered
            results.extend(done)
        return results

    async def _item(
        self,
        flow: Flow,
        item: Any,
        on_config: Callable[[Any], Any],
        url: str | None,
        transport: Any,
    ) -> TurnResult:
        try:
            config = on_config(item)
            if inspect.isawaitable(config):
                config = await config
            if not isinstance(config, dict):
                raise TypeError(
                    f"on_config({item!r}) returned {type(config).__name__}; it must return the "
                    "item's config as a dict, e.g. {'nth': item}."
                )
            config = {k: v for k, v in config.items() if k != CONCURRENT}  # never fan out again
            if url is None:
                return await self._engine.run(flow.name, "", None, config)
            return await _post(url, flow.name, config, transport)
        except Exception as exc:  # one item's failure is reported, never fatal (U8)
            logger.warning(
                "batch item %r of %s failed: %s",
                item,
                flow.name,
                exc,
                extra={"session_id": flow.get_session_id()},
            )
            message = f"Batch item {item!r} failed: {type(exc).__name__}: {exc}"
            return TurnResult(None, message, False, False, None, error=type(exc).__name__)


async def _post(url: str, flow_name: str, config: dict[str, Any], transport: Any) -> TurnResult:
    """One item as a request to a picoflow server's run endpoint: a new session each."""
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx comes with the dev and batch extras
        raise RuntimeError(
            "SELF_URL is set, so batch items are sent over HTTP, which needs httpx: "
            "pip install 'picoflow[batch]'."
        ) from exc
    body = {"flowName": flow_name, "message": "", "config": config}
    async with httpx.AsyncClient(transport=transport, timeout=_HTTP_TIMEOUT) as client:
        response = await client.post(url, json=body)
    try:
        data = response.json()
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    ok = response.status_code < 400 and data.get("success") is True
    return TurnResult(
        session_id=data.get("session") or response.headers.get("CHAT_SESSION_ID") or None,
        message=str(data.get("message", "")) if data else response.text[:500],
        success=ok,
        completed=ok and bool(data.get("completed")),
        step=data.get("step"),
        content_type=str(data.get("contentType", "text/plain")),
        error=None if ok else str(data.get("code") or f"HTTP {response.status_code}"),
    )


def _check(
    flow: Flow,
    items: Any,
    batch_size: Any,
    on_config: Any,
    on_bot_response: Any,
) -> Sequence[Any]:
    """The eager checks of `concurrent_steps` (STYLE rule 2); the items as a list."""
    where = f"{flow.name}.concurrent_steps"
    if isinstance(items, (str, bytes)) or not isinstance(items, Iterable):
        raise TypeError(f"{where}(items=...) takes a list of items, got {type(items).__name__}.")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(
            f"{where}(batch_size={batch_size!r}): the batch size is how many items run at "
            "once, an int of 1 or more."
        )
    if not callable(on_config):
        raise TypeError(
            f"{where}(on_config=...) must be a function of an item returning its config dict, "
            f"got {type(on_config).__name__}."
        )
    if on_bot_response is not None and not callable(on_bot_response):
        raise TypeError(
            f"{where}(on_bot_response=...) must be a function (item, TurnResult) or None, got "
            f"{type(on_bot_response).__name__}."
        )
    return list(items)
