"""picoflow: step-based conversational agents on LangChain.

A flow is a registry of steps; each step has a prompt, `@tool` methods and its own durable
state; tools move between steps by returning `go`, `stay` or `direct`; the engine saves the
whole session atomically at the end of every turn.
"""

from __future__ import annotations

from ._logic import LogicStep
from .engine import FlowEngine, StreamEvent, TurnResult
from .errors import (
    FlowDefinitionError,
    PicoflowError,
    RevisionNotFoundError,
    SessionConflictError,
    SessionNotFoundError,
    StoreError,
    ToolLoopError,
)
from .flow import Flow
from .memory import SummaryConfig
from .models import ModelLike, ModelSpec
from .step import EndStep, Step
from .tools import ToolCall, tool, tool_group
from .transitions import ToolResult, direct, finish, go, stay

__version__ = "0.1.0"

__all__ = [
    # flow.py, step.py
    "Flow",
    "Step",
    "EndStep",
    "LogicStep",
    # tools.py, transitions.py
    "tool",
    "tool_group",
    "ToolCall",
    "go",
    "stay",
    "direct",
    "finish",
    "ToolResult",
    # engine.py
    "FlowEngine",
    "TurnResult",
    "StreamEvent",
    # models.py, memory.py
    "ModelSpec",
    "ModelLike",
    "SummaryConfig",
    # errors.py
    "PicoflowError",
    "FlowDefinitionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "RevisionNotFoundError",
    "StoreError",
    "ToolLoopError",
    "__version__",
]
