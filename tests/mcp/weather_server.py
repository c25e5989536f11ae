"""A small MCP server for the tests: weather of a few cities, over stdio or streamable HTTP.

    python weather_server.py            # stdio
    python weather_server.py --http PORT

`server_pid` lets a test find (and kill) the process that answers, whichever transport;
`crash` ends the process in the middle of a call.
"""

from __future__ import annotations

import os
import sys

from mcp.server.fastmcp import FastMCP

WEATHER = {"Paris": "sunny, 24 C", "Oslo": "rain, 9 C", "Lima": "cloudy, 18 C"}

server = FastMCP("weather", host="127.0.0.1", port=int(sys.argv[2]) if len(sys.argv) > 2 else 0)


@server.tool()
def get_weather(city: str) -> str:
    """Current weather of a city."""
    if city not in WEATHER:
        raise ValueError(f"no weather for {city}")
    return f"{city}: {WEATHER[city]}"


@server.tool()
def server_pid() -> str:
    """The process id of this server."""
    return str(os.getpid())


@server.tool()
def crash() -> str:
    """Stop the server in the middle of answering, as a crash would."""
    os._exit(1)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--http":
        server.settings.log_level = "WARNING"
        server.run(transport="streamable-http")
    else:
        server.run(transport="stdio")
