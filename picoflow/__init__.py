"""picoflow: step-based conversational agents on LangChain.

A flow is a registry of steps; each step has a prompt, `@tool` methods and its own durable
state; tools move between steps by returning `go`, `stay` or `direct`; the engine saves the
whole session atomically at the end of every turn.
"""

from __future__ import annotations

from picoflow._bank import MemoryBank
from picoflow._internal.conversation import Conversation
from picoflow.decisions import (
    ChoiceAnswer,
    ChoiceQuestion,
    DecisionContext,
    DecisionErrorContext,
    DecisionOptions,
    NoulAnswer,
    NoulQuestion,
    ScoreAnswer,
    ScoreQuestion,
)
from picoflow.engine import FlowEngine, StreamEvent, TurnResult
from picoflow.errors import (
    BudgetExceeded,
    DecisionError,
    DecisionValidationError,
    EffectInHistoryError,
    EmbeddingsMismatchError,
    FlowDefinitionError,
    IdempotencyKeyReusedError,
    MissingAbilityError,
    PicoflowError,
    RevisionNotFoundError,
    SessionConflictError,
    SessionNotFoundError,
    StoreError,
    ToolLoopError,
)
from picoflow.flow import Flow
from picoflow.memory import SummaryConfig
from picoflow.models import ModelLike, ModelSpec
from picoflow.models._hook_contexts import (
    LlmAttemptErrorContext,
    LlmBlockedContext,
    LlmCallPolicy,
    LlmErrorContext,
)
from picoflow.policies import reset, sliding_window, summarise, token_window, turn_window
from picoflow.prompts import FlowPrompt, Prompt, parse_json
from picoflow.session._expiration import is_session_current, session_idle_ms
from picoflow.step import EndStep, Step
from picoflow.step._decision import DecisionStep
from picoflow.step._logic import LogicStep
from picoflow.tools import ToolCall, tool, tool_group
from picoflow.transitions import (
    RetryWithModel,
    ToolResult,
    direct,
    direct_to,
    finish,
    go,
    handoff,
    retry_with_model,
    stay,
)

__version__ = "0.1.0"

__all__ = [
    # flow.py, step.py
    "Flow",
    "Step",
    "EndStep",
    "LogicStep",
    # decisions/, step/_decision.py (D1-D3)
    "DecisionStep",
    "ChoiceQuestion",
    "ScoreQuestion",
    "NoulQuestion",
    "ChoiceAnswer",
    "ScoreAnswer",
    "NoulAnswer",
    "DecisionContext",
    "DecisionErrorContext",
    "DecisionOptions",
    # tools.py, transitions.py
    "tool",
    "tool_group",
    "ToolCall",
    "go",
    "stay",
    "direct",
    "finish",
    "handoff",
    "ToolResult",
    # the later step API (D4)
    "direct_to",
    "retry_with_model",
    "RetryWithModel",
    "Conversation",
    "LlmErrorContext",
    "LlmAttemptErrorContext",
    "LlmBlockedContext",
    "LlmCallPolicy",
    # engine.py
    "FlowEngine",
    "TurnResult",
    "StreamEvent",
    "MemoryBank",
    # models.py, memory.py
    "ModelSpec",
    "ModelLike",
    "SummaryConfig",
    # policies.py (M11)
    "summarise",
    "sliding_window",
    "turn_window",
    "token_window",
    "reset",
    # prompts.py
    "Prompt",
    "FlowPrompt",
    "parse_json",
    # errors.py
    "PicoflowError",
    "FlowDefinitionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "RevisionNotFoundError",
    "StoreError",
    "EmbeddingsMismatchError",
    "ToolLoopError",
    "BudgetExceeded",
    "EffectInHistoryError",
    "IdempotencyKeyReusedError",
    "MissingAbilityError",
    "DecisionError",
    "DecisionValidationError",
    # _expiration.py (U6)
    "is_session_current",
    "session_idle_ms",
    "__version__",
]
