"""Where a scenario's turns run: an engine in this process, or a live server over HTTP (X2).

Both targets report a turn the same way (`Observed`), with the tools called in it, taken from
the turn's stream events: `FlowEngine.stream` in process, `POST /ai/stream` over HTTP. So the
same scenario checks the same things wherever it runs; only state needs the session document,
which a live server shares when the runner is given its store.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any, Protocol

from picoflow.engine import FlowEngine
from picoflow.scenarios._checks import Observed
from picoflow.stores import Store

__all__ = ["Target", "EngineTarget", "HttpTarget"]


class Target(Protocol):
    """Runs turns and reads sessions for the scenario runner."""

    async def turn(
        self, flow_name: str, message: str, session_id: str | None, config: dict[str, Any] | None
    ) -> Observed:
        """Run one turn and report what it did."""
        ...

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """The stored session document, or None when this target cannot read it."""
        ...


class EngineTarget:
    """Turns on a `FlowEngine` in this process."""

    def __init__(self, engine: FlowEngine) -> None:
        self.engine = engine

    async def turn(
        self, flow_name: str, message: str, session_id: str | None, config: dict[str, Any] | None
    ) -> Observed:
        """Run the turn through `FlowEngine.stream`, collecting its tool calls."""
        tools: list[str] = []
        decisions: list[dict[str, Any]] = []
        started = time.perf_counter()
        result = None
        async for event in self.engine.stream(flow_name, message, session_id, config):
            if event.kind == "tool_call":
                tools.append(str(event.data.get("name")))
            elif event.kind == "decision":  # D1
                decisions.append(dict(event.data))
            elif event.kind == "done":
                result = event.result
        elapsed = (time.perf_counter() - started) * 1000
        if result is None:  # pragma: no cover - FlowEngine.stream always ends with "done"
            raise RuntimeError("the engine's stream ended without a 'done' event")
        return Observed(
            success=result.success,
            message=result.message,
            session_id=result.session_id,
            step=result.step,
            completed=result.completed,
            tools=tools,
            warnings=list(result.warnings),
            latency_ms=elapsed,
            error=result.error,
            decisions=decisions,
        )

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """The document as the engine stored it."""
        return await self.engine.get_session(session_id)


class HttpTarget:
    """Turns on a live picoflow server (`make serve`), through `POST /ai/stream`.

    The server does not hand out session documents, so state checks need `store`: the same
    store the server writes to (`--store URL`).
    """

    def __init__(
        self, url: str, *, store: Store | None = None, headers: dict[str, str] | None = None
    ) -> None:
        import httpx  # a dependency of langchain-openai, so always installed with picoflow

        self.url = url.rstrip("/")
        self.store = store
        self._client = httpx.AsyncClient(base_url=self.url, headers=headers, timeout=120.0)

    async def turn(
        self, flow_name: str, message: str, session_id: str | None, config: dict[str, Any] | None
    ) -> Observed:
        """POST the turn and read its Server-Sent Events until `done`."""
        body: dict[str, Any] = {"flowName": flow_name, "message": message}
        if config is not None:
            body["config"] = config
        headers = {"CHAT_SESSION_ID": session_id} if session_id else {}
        tools: list[str] = []
        decisions: list[dict[str, Any]] = []
        done: dict[str, Any] = {}
        started = time.perf_counter()
        async with self._client.stream("POST", "/ai/stream", json=body, headers=headers) as reply:
            if reply.status_code != 200:
                text = (await reply.aread()).decode("utf-8", "replace")
                return _refused(reply.status_code, text, session_id, started)
            async for kind, data in _sse(reply.aiter_lines()):
                if kind == "tool_call":
                    tools.append(str(data.get("name")))
                elif kind == "decision":  # D1: a server streams every event kind
                    decisions.append(data)
                elif kind == "done":
                    done = data
        elapsed = (time.perf_counter() - started) * 1000
        return Observed(
            success=bool(done.get("success")),
            message=str(done.get("message", "the stream ended without a 'done' event")),
            session_id=done.get("session") or session_id,
            step=done.get("step"),
            completed=bool(done.get("completed")),
            tools=tools,
            warnings=None,  # the HTTP envelope carries no warnings
            latency_ms=elapsed,
            error=done.get("code"),
            decisions=decisions,
        )

    async def session(self, session_id: str) -> dict[str, Any] | None:
        """The document from the server's store, when the runner was given it."""
        return None if self.store is None else await self.store.load(session_id)

    async def aclose(self) -> None:
        """Close the HTTP client (and the store, if one was given)."""
        await self._client.aclose()
        if self.store is not None:
            await self.store.aclose()


def _refused(status: int, text: str, session_id: str | None, started: float) -> Observed:
    try:
        message = str(json.loads(text).get("message", text))
    except (ValueError, AttributeError):
        message = text
    return Observed(
        success=False,
        message=f"HTTP {status}: {message}",
        session_id=session_id,
        step=None,
        completed=False,
        latency_ms=(time.perf_counter() - started) * 1000,
        error=f"HTTP {status}",
    )


async def _sse(lines: AsyncIterator[str]) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(event, data) pairs of a Server-Sent Events body whose data is one JSON line."""
    kind = "message"
    async for line in lines:
        if line.startswith("event:"):
            kind = line[len("event:") :].strip()
        elif line.startswith("data:"):
            yield kind, json.loads(line[len("data:") :].strip())
            kind = "message"
