"""Tools a step did not declare itself: ready LangChain tools and MCP servers (`use_tools`).

A LangChain `BaseTool` validates its own arguments and runs through `ainvoke`, so it enters the
turn as a `ToolSpec` whose validation passes the model's arguments through, and a handler that
turns the tool's output into the tool-result text. An MCP server's tools are LangChain tools too
(langchain-mcp-adapters), listed once the engine has connected to the server (`_mcp`). Either
way a failure is the tool's error result (R6), never a failed turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from picoflow.errors import FlowDefinitionError
from picoflow.step._end_tool import check_end_tool, end_tool_entries
from picoflow.tools import ToolSpec, collect_tools

if TYPE_CHECKING:
    from picoflow.flow import Flow
    from picoflow.step import Step

__all__ = [
    "check_tool_source",
    "check_tool_names",
    "foreign_tool_names",
    "step_tools",
    "mcp_servers_of",
    "uses_mcp",
]

ToolEntry = tuple[ToolSpec, Callable[..., Any]]
ExtraTools = Callable[["Step"], list[ToolEntry]]


class ServerTools(Protocol):
    """The MCP tools of a connected server by its name (the engine's `MCPConnections`).

    Named here so the step layer never imports the engine, not even for a type.
    """

    def tools(self, name: str) -> list[BaseTool]: ...


class _ForeignToolSpec(ToolSpec):
    """A tool that validates its own arguments (LangChain's `ainvoke` does it)."""

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Pass the arguments through; the tool refuses bad ones with an exception (R6)."""
        return dict(args)


def check_tool_source(source: object, step_name: str) -> None:
    """Refuse at definition time what `use_tools` cannot expose."""
    from picoflow.mcp import MCPServer

    if isinstance(source, (BaseTool, MCPServer)):
        return
    raise TypeError(
        f"{step_name}.use_tools() takes LangChain tools (BaseTool, e.g. StructuredTool) or "
        f"picoflow.mcp.MCPServer objects, got {source!r}. Declare a method of the step with "
        "@tool instead, or wrap the function with langchain_core.tools.tool."
    )


# Entries made for tool objects, by id (the tool is kept too, so its id cannot be reused while
# the entry is here). Converting a tool's schema costs tens of microseconds, and a step offers
# its tools on every model call; MCP tools stay the same objects until their server reconnects.
_ENTRIES: dict[int, tuple[BaseTool, ToolEntry]] = {}
_MAX_ENTRIES = 4096


def langchain_entry(tool: BaseTool) -> ToolEntry:
    """The (spec, handler) pair through which a turn offers and calls a LangChain tool."""
    known = _ENTRIES.get(id(tool))
    if known is not None and known[0] is tool:
        return known[1]
    entry = _new_entry(tool)
    if len(_ENTRIES) >= _MAX_ENTRIES:  # tools of servers that reconnected many times: the oldest go
        del _ENTRIES[next(iter(_ENTRIES))]
    _ENTRIES[id(tool)] = (tool, entry)
    return entry


def _new_entry(tool: BaseTool) -> ToolEntry:
    spec = _ForeignToolSpec(
        name=tool.name,
        method_name="",
        description=tool.description,
        args_schema=None,
        pass_model=False,
        schema=convert_to_openai_tool(tool),
    )

    async def call(**kwargs: Any) -> str:
        return as_text(await tool.ainvoke(kwargs))

    return spec, call


def as_text(output: Any) -> str:
    """A tool's output as the text of its result: content blocks joined, anything else JSON."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = [
            block["text"] if isinstance(block, dict) and block.get("type") == "text" else block
            for block in output
        ]
        if all(isinstance(part, str) for part in parts):
            return "\n".join(parts)
    return json.dumps(output, ensure_ascii=False, default=str)


def step_tools(recall: ExtraTools, mcp: ServerTools) -> ExtraTools:
    """The turn's `extra_tools`: recall, then each step's LangChain tools and MCP servers."""
    from picoflow.mcp import MCPServer

    def for_step(step: Step) -> list[ToolEntry]:
        found = end_tool_entries(step) + recall(step)  # U2: the end tool right after the step's
        for source in step._tool_sources:
            if isinstance(source, MCPServer):
                found += [langchain_entry(t) for t in mcp.tools(source.name)]
            else:
                found.append(langchain_entry(source))
        return found

    return for_step


def mcp_servers_of(flows: Iterable[Flow]) -> list[Any]:
    """Every MCP server the steps of these (built) flows use, once per name."""
    from picoflow.mcp import MCPServer

    servers: dict[str, MCPServer] = {}
    for flow in flows:
        for step in flow.steps.values():
            for source in step._tool_sources:
                if not isinstance(source, MCPServer):
                    continue
                known = servers.setdefault(source.name, source)
                if known != source:
                    raise FlowDefinitionError(
                        f"Two different MCP servers are named '{source.name}' "
                        f"({flow.name}.{step.name}); give each server its own name."
                    )
    return list(servers.values())


def foreign_tool_names(step: Step) -> list[str]:
    """The names of the LangChain tools `use_tools` gave the step (MCP tools come later)."""
    return [s.name for s in step._tool_sources if isinstance(s, BaseTool)]


def uses_mcp(step: Step) -> bool:
    """Whether the step offers an MCP server's tools, whose names are known only once connected."""
    from picoflow.mcp import MCPServer

    return any(isinstance(s, MCPServer) for s in step._tool_sources)


def check_tool_names(step: Step, extra: Iterable[str] = ()) -> None:
    """Every tool a step offers has its own name: the model calls tools by name."""
    names = [spec.name for spec in collect_tools(type(step))]
    names += ["conversation_search"] if step._recall else []
    names += [end] if (end := check_end_tool(step)) is not None else []
    names += [s.name for s in step._tool_sources if isinstance(s, BaseTool)]
    names += list(extra)
    twice = sorted({name for name in names if names.count(name) > 1})
    if twice:
        raise FlowDefinitionError(
            f"{step.flow.name}.{step.name} offers more than one tool named "
            f"{', '.join(repr(n) for n in twice)}; the model calls tools by name. Rename the "
            "@tool method (@tool('other_name')) or leave one of the tools out."
        )
