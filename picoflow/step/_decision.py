"""DecisionStep: a step that decides by typed questions to a decision provider, never a chat model.

Some turns need a bounded decision, not prose: where does this request belong, is the draft
faithful, is the application ready. A decision step asks its questions (`define_questions()`)
of a decision provider registered on the engine, with the step's facts and the conversation;
the answers are validated against the exact question map, and `on_decision` routes on them in
code, in the same turn, like any step response. It has no tools and no model (D1-D3).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any, Self

from langchain_core.messages import BaseMessage

from picoflow.decisions._answers import DecisionAnswers
from picoflow.decisions._provider import (
    DEFAULT_OPTIONS,
    DecisionContext,
    DecisionErrorContext,
    DecisionOptions,
    checked_options,
    merged_options,
)
from picoflow.decisions._questions import Question
from picoflow.errors import FlowDefinitionError
from picoflow.step import Step

__all__ = ["DecisionStep", "decision_options_of"]


class DecisionStep(Step):
    """A model-free step that decides through a decision provider (D1).

    Override `define_questions()` (the question map, asked on every run: it may read state)
    and `on_decision(answers, context)` (return a reply text, a Step class, `go(...)`,
    `direct(...)` or `finish(text)`). Optionally `get_prompt()` (guidance put first in every
    question's instructions), `get_decision_facts()` (JSON facts for the provider) and
    `on_decision_error(context)`. The user's message is kept in the step's namespace, so the
    provider sees it as `request`; the step saves only what `on_decision` saves.
    """

    _decision: DecisionOptions = DecisionOptions()  # use_decision replaces it on the instance

    def define_questions(self) -> Mapping[str, Question]:
        """The questions of this decision, by key: ChoiceQuestion, ScoreQuestion, NoulQuestion.

        Only questions answerable independently from the same input belong in one map; when
        one answer is input to another, use two decision steps.
        """
        raise FlowDefinitionError(
            f"{self.name} is a DecisionStep but does not override define_questions(). Return a "
            "dict such as {'route': ChoiceQuestion({'billing': '...', 'support': '...'})}."
        )

    def on_decision(self, answers: DecisionAnswers, context: DecisionContext) -> Any:
        """Route on the validated answers (sync or async); thresholds and side effects go here."""
        raise FlowDefinitionError(
            f"{self.name} is a DecisionStep but does not override on_decision(answers, "
            "context). Return a reply text, a Step class, go(Step), direct(text) or finish(text)."
        )

    def get_decision_facts(self) -> Mapping[str, Any] | None:
        """JSON facts the provider decides on (sync or async); `request` is reserved."""
        return None

    def on_decision_error(self, context: DecisionErrorContext) -> Any:
        """The decision failed: answer as `on_decision` would, or None to ask the flow (D2).

        The flow's `on_decision_error` is asked next, and when it returns None too, the turn
        fails and nothing of it is saved. Decide from saved state: the request was not read.
        """
        return None

    def use_decision(
        self,
        *,
        provider: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
    ) -> Self:
        """Override the flow's decision options for this step (D2); unset ones inherit.

        Raises:
            ValueError: an empty provider or model, a timeout that is not > 0 seconds, or
                `max_retries` that is not an int from 0 to 10.
        """
        options = DecisionOptions(provider, model, timeout, max_retries)
        self._decision = checked_options(f"{self.name}.use_decision", options)
        return self

    @property
    def decision_options(self) -> DecisionOptions:
        """The options this step set with `use_decision` (unset fields are None)."""
        return self._decision

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """Keep the forwarded message (it may be the request); add no opener: there is no model."""
        return message


def declared_options(step: DecisionStep) -> DecisionOptions:
    """Defaults <- the flow's `config_decision()` <- the step's `use_decision`, as declared.

    Raises:
        ValueError: the flow's options are malformed.
    """
    flow = step.flow
    flow_options = checked_options(f"{flow.name}.config_decision()", flow.config_decision())
    return merged_options(DEFAULT_OPTIONS, flow_options, step.decision_options)


def decision_options_of(step: DecisionStep, providers: Collection[str]) -> DecisionOptions:
    """The options in force for `step`: defaults <- the flow's `config_decision()` <- the step's.

    Without a provider named anywhere, the only registered provider is the one.

    Raises:
        ValueError: the flow's options are malformed, or no registered provider matches.
    """
    flow = step.flow
    options = declared_options(step)
    known = ", ".join(sorted(providers)) or "none"
    where = f"{flow.name}.{step.name}"
    if options.provider is None:
        if len(providers) != 1:
            raise ValueError(
                f"{where} names no decision provider and {len(providers)} are registered "
                f"({known}). Register one with FlowEngine(decision_providers=[...]), or name "
                "it: use_decision(provider=...) or the flow's config_decision()."
            )
        options = replace(options, provider=next(iter(providers)))
    if options.provider not in providers:
        raise ValueError(
            f"{where} decides with provider '{options.provider}', which is not registered "
            f"(registered: {known}). Pass it in FlowEngine(decision_providers=[...])."
        )
    return options
