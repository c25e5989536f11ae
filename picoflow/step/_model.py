"""What a step can ask about its own model: the selection in force, its name, its call policy (D4).

PicoFlow's `getModel()`, `getModelSelection()` and `getLlmCallPolicy()`. The selection is what
a model call of the step uses: the step's `use_model(...)` over the flow's `config_model()`, with
the flow's params, timeout and retry attempts inherited when both name the same model (F4), so
a step can log, branch on or show what it talks to without repeating that rule. A base class of
`Step` of its own, so the step module stays within its size.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from picoflow.models import ModelSpec, parse_model
from picoflow.models._hook_contexts import LlmCallPolicy
from picoflow.models._retries import inherit, retries_of

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = ["ModelHelpers"]


class _Configured(Protocol):
    """What the helpers read of the step's flow (the step layer does not import `Flow`)."""

    @property
    def name(self) -> str: ...

    def config_model(self) -> Any: ...


class ModelHelpers:
    """The model helpers every `Step` has (D4); read them in hooks, tools or `get_prompt()`."""

    _flow: _Configured  # the step's Flow; `Step` names it, as the contracts allow
    _model: ModelSpec | BaseChatModel | None

    def get_model_selection(self) -> ModelSpec | BaseChatModel | None:
        """The model this step's calls use: its `use_model`, else the flow's (D4).

        A step naming the flow's own model (same provider and name) keeps the flow's other
        params, timeout and retry attempts; another model replaces them. A chat model
        instance is returned as given. None when neither the step nor the flow has a model.
        """
        configured = self._flow.config_model()
        default = parse_model(configured, self._flow.name) if configured is not None else None
        return default if self._model is None else inherit(self._model, default)

    def get_model(self) -> str | None:
        """The name of the model this step's calls use ("gpt-4o"), or None without one (D4)."""
        selection = self.get_model_selection()
        if selection is None:
            return None
        if isinstance(selection, ModelSpec):
            return selection.name
        named: Any = getattr(selection, "model_name", None) or getattr(selection, "model", None)
        return named if isinstance(named, str) else type(selection).__name__

    def get_llm_call_policy(self) -> LlmCallPolicy:
        """The timeout of one attempt and the retry attempts this step's calls have (D4).

        Set them on the model selection, `ModelSpec(..., timeout=60, retry_attempts=2)`, on
        the flow or the step; a chat model instance has no timeout and 3 retry attempts.
        """
        selection = self.get_model_selection()
        retries, timeout = retries_of(selection) if selection is not None else (3, None)
        return LlmCallPolicy(timeout=timeout, retry_attempts=retries)
