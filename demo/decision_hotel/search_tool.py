"""``search_hotels`` in this process: the pricing MCP server's contract without the server.

Kept apart from `demo.decision_hotel.search` so the server, a child process started on the
first search, imports no LangChain.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.tools import StructuredTool

from demo.decision_hotel.search import TOOL_DESCRIPTION, TOOL_NAME, SearchRequest, search


def search_json(**arguments: Any) -> str:
    """`search` over keyword arguments, answered as the JSON text an MCP tool returns."""
    return json.dumps(search(SearchRequest.model_validate(arguments)))


def in_process_tool() -> StructuredTool:
    """``search_hotels`` as a LangChain tool in this process: the MCP server's contract (name,
    arguments, JSON answer), for a process that runs no server (tests, no ``mcp`` extra)."""
    return StructuredTool.from_function(
        func=search_json,
        name=TOOL_NAME,
        description=TOOL_DESCRIPTION,
        args_schema=SearchRequest,
    )
