"""The engine's connections to MCP servers: opened once, held by a task of their own, closed once.

An MCP client session lives inside async context managers (anyio task groups) that must be
entered and left by the same task, while turns run in whatever task serves the request. So each
connection is held by one background task that opens the session, lists the tools, reports
them, and waits until it is told to close. A connection that fails, at start or later, is
dropped and opened again at the next turn; meanwhile its tools' calls are error results (R6).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool

from picoflow.errors import FlowDefinitionError
from picoflow.mcp import MCPServer

__all__ = ["MCPConnections"]

logger = logging.getLogger(__name__)

INSTALL = "pip install 'picoflow[mcp]'"


@dataclass(slots=True)
class _Connection:
    server: MCPServer
    task: asyncio.Task[None] | None = None
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    lost: asyncio.Event = field(default_factory=asyncio.Event)  # the session ended by itself
    tools: list[BaseTool] = field(default_factory=list)
    broken: bool = False


class MCPConnections:
    """The MCP servers of one engine, connected lazily at the first turn that needs them."""

    def __init__(self, servers: Iterable[MCPServer]) -> None:
        self._connections = {server.name: _Connection(server) for server in servers}
        self._lock: asyncio.Lock | None = None
        if self._connections:
            _require_adapters()

    def __bool__(self) -> bool:
        return bool(self._connections)

    def tools(self, name: str) -> list[BaseTool]:
        """The tools of server `name` as last listed (none while it is unreachable)."""
        connection = self._connections.get(name)
        return list(connection.tools) if connection is not None else []

    async def connect(self) -> list[str]:
        """Open every connection that is not open; return a warning per server still down."""
        if not self._connections:
            return []
        self._lock = self._lock or asyncio.Lock()
        problems = []
        async with self._lock:
            for connection in self._connections.values():
                if connection.task is not None and not connection.broken:
                    continue
                problem = await self._open(connection)
                if problem is not None:
                    problems.append(problem)
        return problems

    async def aclose(self) -> None:
        """Close every connection (each in the task that opened it)."""
        for connection in self._connections.values():
            await _close(connection)

    async def _open(self, connection: _Connection) -> str | None:
        await _close(connection)
        connection.stop = asyncio.Event()
        connection.lost = asyncio.Event()
        connection.broken = False
        ready: asyncio.Future[list[BaseTool]] = asyncio.get_running_loop().create_future()
        connection.task = asyncio.create_task(
            _hold(connection, ready), name=f"picoflow-mcp-{connection.server.name}"
        )
        try:
            listed = await asyncio.wait_for(ready, connection.server.timeout)
        except Exception as exc:  # R6: a server that is down costs its tools, not the turn
            logger.warning("MCP server %s unreachable", connection.server.name, exc_info=True)
            connection.broken = True
            connection.tools = []
            return (
                f"The MCP server '{connection.server.name}' could not be reached "
                f"({type(exc).__name__}); its tools are not offered this turn. The engine tries "
                "again at the next turn."
            )
        connection.tools = [_guarded(tool, connection) for tool in _chosen(connection, listed)]
        return None


async def _hold(connection: _Connection, ready: asyncio.Future[list[BaseTool]]) -> None:
    """Open the session, hand over the tool list, and keep the session until told to stop."""
    from langchain_mcp_adapters.sessions import create_session
    from langchain_mcp_adapters.tools import load_mcp_tools

    server = connection.server
    try:
        async with create_session(dict(server.connection)) as session:  # type: ignore[arg-type]
            await session.initialize()
            tools = await load_mcp_tools(session, server_name=server.name, handle_tool_errors=False)
            ready.set_result(tools)
            await connection.stop.wait()
    except BaseException as exc:
        connection.broken = True  # the next turn opens it again
        if not ready.done():
            ready.set_exception(exc if isinstance(exc, Exception) else ConnectionError(str(exc)))
        elif not isinstance(exc, asyncio.CancelledError):
            logger.warning("MCP server %s connection lost", server.name, exc_info=True)
            connection.lost.set()  # calls in flight fail now instead of at their deadline
        if isinstance(exc, asyncio.CancelledError):
            raise


async def _close(connection: _Connection) -> None:
    task, connection.task = connection.task, None
    if task is None:
        return
    connection.stop.set()
    try:
        await asyncio.wait_for(task, 5.0)
    except (TimeoutError, Exception):  # closing is best effort: the server may be gone
        task.cancel()
        logger.info("MCP server %s closed uncleanly", connection.server.name, exc_info=True)


def _chosen(connection: _Connection, listed: list[BaseTool]) -> list[BaseTool]:
    wanted = connection.server.tools
    if wanted is None:
        return listed
    names = {tool.name for tool in listed}
    missing = [name for name in wanted if name not in names]
    if missing:
        raise FlowDefinitionError(
            f"The MCP server '{connection.server.name}' has no tool named "
            f"{', '.join(repr(m) for m in missing)}; it offers {', '.join(sorted(names))}."
        )
    return [tool for tool in listed if tool.name in wanted]


def _guarded(tool: BaseTool, connection: _Connection) -> BaseTool:
    """The tool, with a deadline, and a clear error when its server is gone."""
    server = connection.server

    async def call(**kwargs: Any) -> Any:
        if connection.broken:
            raise ConnectionError(_down(server.name))
        answer = asyncio.ensure_future(tool.ainvoke(kwargs))
        lost = asyncio.ensure_future(connection.lost.wait())
        done, _ = await asyncio.wait(
            {answer, lost}, timeout=server.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        lost.cancel()
        if answer not in done:
            answer.cancel()
            connection.broken = True  # lost, or hanging: opened again at the next turn
            if connection.lost.is_set():
                raise ConnectionError(_down(server.name))
            raise TimeoutError(
                f"The MCP server '{server.name}' did not answer within {server.timeout:g} s; "
                "this tool is unavailable right now. Tell the user, or try again later."
            )
        try:
            return answer.result()
        except Exception as exc:
            if type(exc).__name__ == "ToolException":
                raise  # the tool itself reported an error: its text is for the model
            connection.broken = True
            raise ConnectionError(_down(server.name)) from exc

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        coroutine=call,
    )


def _down(name: str) -> str:
    return (
        f"The MCP server '{name}' is not reachable; this tool is unavailable right now. Tell "
        "the user, or try again later."
    )


def _require_adapters() -> None:
    try:
        import langchain_mcp_adapters  # noqa: F401
    except ImportError as exc:
        raise FlowDefinitionError(
            "A step uses an MCP server, but langchain-mcp-adapters is not installed. Install "
            f"the MCP extra: {INSTALL}"
        ) from exc
