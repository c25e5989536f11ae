"""`python -m picoflow.graph MODULE:FLOW [--session ID --store URL]`: print a flow's diagram.

It lives apart from the drawing code because it loads flows and stored sessions, and `Flow`
itself imports the drawing code (for `Flow.graph()`).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import FlowDefinitionError
from ..flow import Flow
from ..session import is_session_id
from ..stores import from_url
from . import draw

__all__ = ["main", "load_flow"]


def main(argv: Sequence[str] | None = None) -> int:
    """Print a flow's Mermaid diagram; the exit status (2 for anything the caller must fix)."""
    parser = argparse.ArgumentParser(
        prog="python -m picoflow.graph",
        description="Draw a flow's steps and moves as a Mermaid flowchart.",
    )
    parser.add_argument("flow", metavar="MODULE:FLOW", help="e.g. myapp.flows:ShopFlow")
    parser.add_argument("--session", metavar="ID", help="draw the path this stored session took")
    parser.add_argument(
        "--store", metavar="URL", help="where --session is stored (default: PICOFLOW_STORE)"
    )
    args = parser.parse_args(argv)
    try:
        flow = load_flow(args.flow)()
        session = None if args.session is None else _stored(args.session, args.store)
        print(draw(flow, session=session), end="")
    except (FlowDefinitionError, ValueError, ImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def load_flow(target: str) -> type[Flow]:
    """The Flow class `module:Class` names (`module:outer.Class` reaches a nested one)."""
    module_name, _, path = target.partition(":")
    if not module_name or not path:
        raise ValueError(f"{target!r} is not MODULE:FLOW; write e.g. myapp.flows:ShopFlow.")
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise ImportError(f"cannot import {module_name!r} ({exc}); run from the directory "
                          "that contains it, or put it on PYTHONPATH.") from exc  # fmt: skip
    for part in path.split("."):
        found = getattr(found, part, None)
    if not (isinstance(found, type) and issubclass(found, Flow)):
        raise ValueError(f"{target} is not a Flow subclass (found {found!r}).")
    return found


def _stored(session_id: str, url: str | None) -> dict[str, Any]:
    url = url or os.environ.get("PICOFLOW_STORE")
    if not url:
        raise ValueError("--session needs the store it is in: pass --store URL or set "
                         "PICOFLOW_STORE (e.g. sqlite:///sessions.db).")  # fmt: skip
    if not is_session_id(session_id):
        raise ValueError(f"{session_id!r} is not a session id.")

    async def load() -> dict[str, Any] | None:
        store = from_url(url)
        try:
            return await store.load(session_id)
        finally:
            await store.aclose()

    doc = asyncio.run(load())
    if doc is None:
        raise ValueError(f"There is no session {session_id} in that store.")
    return doc
