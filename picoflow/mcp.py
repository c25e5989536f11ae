"""MCP servers as a step's tools: `Step.use_tools(MCPServer.stdio(...))`.

Needs the `mcp` extra (`pip install 'picoflow[mcp]'`: langchain-mcp-adapters and mcp). The
engine connects to each server once, lists its tools, and offers them to every step that uses
the server; `FlowEngine.aclose()` closes the connections. A server that cannot be reached, or
goes away mid-conversation, makes its tools' calls error results the model reads (the turn goes
on); the engine connects again at the next turn.

    weather = MCPServer.stdio("weather", "python", ["weather_server.py"])

    class WeatherStep(Step):
        ...

    WeatherStep(flow).use_tools(weather)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["MCPServer"]


@dataclass(frozen=True)
class MCPServer:
    """One MCP server: a name of your choice and how to reach it.

    Args:
        name: Names the server in errors and warnings; unique per engine.
        connection: A langchain-mcp-adapters connection, e.g. `{"transport": "stdio",
            "command": "python", "args": ["server.py"]}` or `{"transport": "streamable_http",
            "url": "http://127.0.0.1:8000/mcp"}`. `stdio()` and `http()` build these.
        tools: Offer only these of the server's tools (all when None).
        timeout: Seconds a tool call may take before it counts as failed.
    """

    name: str
    connection: Mapping[str, Any]
    tools: tuple[str, ...] | None = None
    timeout: float = 30.0
    _key: tuple[Any, ...] = field(init=False, repr=False, compare=True)

    def __post_init__(self) -> None:
        """Check the definition now, so a typo fails where the flow is defined."""
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"MCPServer needs a non-empty name, got {self.name!r}.")
        if not isinstance(self.connection, Mapping) or "transport" not in self.connection:
            raise ValueError(
                f"MCPServer '{self.name}': connection must be a dict with a 'transport' key "
                "('stdio' or 'streamable_http'); use MCPServer.stdio(...) or MCPServer.http(...)."
            )
        if not isinstance(self.timeout, (int, float)) or self.timeout <= 0:
            raise ValueError(
                f"MCPServer '{self.name}': timeout must be seconds > 0, got {self.timeout!r}."
            )
        key = (self.name, repr(sorted(self.connection.items())), self.tools, self.timeout)
        object.__setattr__(self, "_key", key)

    def __hash__(self) -> int:
        """Servers are compared by what they are, so one defined twice the same way is one."""
        return hash(self._key)

    @classmethod
    def stdio(
        cls,
        name: str,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        tools: Sequence[str] | None = None,
        timeout: float = 30.0,
    ) -> MCPServer:
        """A server the engine starts as a child process and talks to over stdin/stdout."""
        connection: dict[str, Any] = {"transport": "stdio", "command": command, "args": list(args)}
        if env is not None:
            connection["env"] = dict(env)
        return cls(name, connection, tuple(tools) if tools is not None else None, timeout)

    @classmethod
    def http(
        cls,
        name: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        tools: Sequence[str] | None = None,
        timeout: float = 30.0,
    ) -> MCPServer:
        """A server reached over MCP's streamable HTTP transport."""
        connection: dict[str, Any] = {"transport": "streamable_http", "url": url}
        if headers is not None:
            connection["headers"] = dict(headers)
        return cls(name, connection, tuple(tools) if tools is not None else None, timeout)
