"""What `FlowEngine(...)` checks about long-term memory at start (F5: fail here, not mid-turn)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from picoflow._bank.bank import require_bank
from picoflow._bank.vectors import check_embeddings
from picoflow.errors import FlowDefinitionError

if TYPE_CHECKING:
    from picoflow.flow import Flow

__all__ = ["check_long_term"]


def check_long_term(store: Any, flows: Iterable[Flow], embeddings: Any) -> None:
    """The store keeps banks (and vectors, with embeddings); every extractor has a model.

    Raises:
        FlowDefinitionError: a step uses long-term memory the engine cannot give it.
        TypeError: `embeddings` is not a LangChain `Embeddings`.
    """
    steps = [(flow, step) for flow in flows for step in flow.steps.values() if step._long_term]
    if steps or embeddings is not None:
        try:
            require_bank(store)  # L1: the bank lives in the session store
            check_embeddings(embeddings, store)
        except ValueError as exc:
            what = "A step uses long-term memory" if steps else "FlowEngine(embeddings=...)"
            raise FlowDefinitionError(f"{what}, but {exc}") from None
    for flow, step in steps:
        spec = step._long_term
        if spec is None or spec.extract is None or spec.extract_model is not None:
            continue
        if flow.get_memory().summary_model is None:
            raise FlowDefinitionError(
                f"{step.name}.use_long_term_memory(extract={spec.extract!r}) needs a model to "
                f"read the messages: pass extract_model=..., or give the flow a summary model "
                f"(get_memory().set_summary_model(...))."
            )
