"""How a turn opens its flow: load or start the session, run the opening hooks (T3, V10, V6).

Kept apart from the turn's sequence (`_turns.py`) because it is the one part of a turn that
runs the developer's hooks before the step loop: `init`, `on_start` or `on_restore`, and
`migrate_session`. Each is skipped when the flow does not override it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from picoflow._runner.bank_tools import bank_tools
from picoflow._runner.crossing import crossing_message
from picoflow._runner.recall import recall_tools
from picoflow._runner.turn import append_message
from picoflow.engine._checks import warn_if_config_changed
from picoflow.engine._idempotent import session_id_for_new
from picoflow.flow import Flow
from picoflow.mcp import MCPServer
from picoflow.memory import Namespace
from picoflow.session import load_flow, new_document
from picoflow.session._migration import migrate
from picoflow.step._sources import ExtraTools, check_tool_names, foreign_tool_names, step_tools
from picoflow.tools import collect_groups

if TYPE_CHECKING:
    from picoflow.engine._mcp import MCPConnections
    from picoflow.engine._request import TurnRequest
    from picoflow.stores import Store
    from picoflow.stores.base import JSONDict

__all__ = ["connect_tools", "extra_tools", "open_flow", "overrides", "upgraded"]

Spaces = dict[str, Namespace] | None  # a session's cached namespaces, if it has them


def extra_tools(store: Store, mcp: MCPConnections) -> ExtraTools:
    """The tools every turn may add to a step: recall, the memory bank, LangChain and MCP."""
    return step_tools(bank_tools(store, recall_tools(store)), mcp)


def overrides(flow: Flow, hook: str) -> bool:
    """Whether the flow defines its own `hook` (V10 hooks are skipped for the many that don't)."""
    return getattr(type(flow), hook) is not getattr(Flow, hook)


async def upgraded(
    flow: Flow, doc: JSONDict | None, spaces: Spaces
) -> tuple[JSONDict | None, Spaces]:
    """The stored session after the flow's `migrate_session` (V10), before anything reads it."""
    if doc is not None and overrides(flow, "migrate_session"):
        return await migrate(flow, doc, spaces)
    return doc, spaces


async def connect_tools(mcp: MCPConnections, flow: Flow) -> list[str]:
    """Connect MCP servers not yet connected and check the names of their tools."""
    if not mcp:
        return []
    problems = await mcp.connect()
    for step in flow.steps.values():
        servers = [s for s in step._tool_sources if isinstance(s, MCPServer)]
        names = [t.name for s in servers for t in mcp.tools(s.name)]
        check_tool_names(step, names)
        if servers and all(mcp.tools(s.name) for s in servers):
            # V6: a group may take over MCP tools; their names are known now
            collect_groups(type(step), also=foreign_tool_names(step) + names)
    return problems


async def open_flow(
    flow: Flow, doc: JSONDict | None, spaces: Spaces, request: TurnRequest
) -> JSONDict:
    """Load the session into the flow (or start a new one) and run the opening hooks."""
    if doc is None:
        doc = new_document(session_id_for_new(), flow.name, request.config)
        if request.owner is not None:
            doc["owner"] = request.owner  # H4: a top-level key, so no flow code can change it
        load_flow(flow, doc)
        if overrides(flow, "init"):  # V10: after the session is loaded, before any hook
            await flow.init()
        await _start(flow, request.message)
        return doc
    load_flow(flow, doc, spaces)
    warn_if_config_changed(flow, doc, request.config)
    if overrides(flow, "init"):
        await flow.init()
    await flow._call_hook(flow.current_step.on_restore)
    return doc


async def _start(flow: Flow, message: str) -> None:
    """A new session: the cursor enters the initial step and `on_start` runs (T3).

    Without a first message, the step's `on_crossing` decides how the model is opened.
    """
    initial = flow.initial_step()
    step = flow.get_step(initial) if initial is not None else next(iter(flow.steps.values()))
    flow._session.current = step.name
    flow._session.sequence.append(step.name)
    await flow._call_hook(step.on_start)
    if not message:
        opener = await crossing_message(flow, step, None, None)
        if opener is not None:
            append_message(step, opener)
