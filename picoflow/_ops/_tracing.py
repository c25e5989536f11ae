"""LangChain run metadata for every model call picoflow makes: replies and housekeeping (E3).

One builder, so a callback handler (LangSmith or any other) sees the same keys on a reply, a
summary and a distillation, and can attribute each call to its session, step and namespace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoflow.flow import Flow

__all__ = ["run_metadata"]


def run_metadata(flow: Flow, step: str | None, namespace: str, purpose: str) -> dict[str, Any]:
    """The `metadata` of a call's run config: who made it, and what for (`reply`, `summary`...)."""
    return {
        "picoflow_session_id": flow.get_session_id(),
        "picoflow_flow": flow.name,
        "picoflow_step": step,
        "picoflow_namespace": namespace,
        "picoflow_purpose": purpose,
    }
