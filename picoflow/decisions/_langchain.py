"""A LangChain chat model as a decision provider, through `with_structured_output` (D2).

Any chat model that supports structured output can decide: the adapter builds a pydantic
schema of exactly the asked questions (a choice's labels as a `Literal`, one probability per
label or level), sends the questions and the state as JSON, and turns the parsed object into
answers. The model's probabilities are normalised to sum to 1 (models round); everything else
is checked by the runner against the question map like any provider's answers. With no fixed
model, the step's `use_decision(model="provider:name")` picks one through picoflow's model
providers, so any provider string the engine knows works.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from picoflow.decisions._provider import DecisionRequest, DecisionResult
from picoflow.errors import DecisionValidationError
from picoflow.models import ModelLike, ModelSpec, ProviderFactory, ProviderRegistry, parse_model

__all__ = ["LangChainDecisionProvider", "DECIDE_PROMPT", "SCHEMA_NAME"]

SCHEMA_NAME = "DecisionAnswers"  # the structured-output tool a scripted model calls
DECIDE_PROMPT = (
    "You answer typed decision questions; you never chat. For each question in `questions` "
    "give exactly one answer of its type. A choice picks one of its criteria labels, gives a "
    "probability for every label (together 1) and a confidence from 0 to 1. A score gives a "
    "number from 0 to the index of the last level (levels are listed lowest first), a "
    "probability for every level and a confidence. A noul gives the probability from 0 to 1 "
    "that the question's statement holds (criteria may describe the true and false ends). "
    "Follow each question's instructions, in order. Decide only from `state`: `request` is the "
    "user's newest message and `prior_requests` the earlier ones, oldest first."
)


class LangChainDecisionProvider:
    """Decides with a LangChain chat model's structured output.

    Args:
        model: the chat model (`"openai:gpt-4o-mini"`, a ModelSpec, or a BaseChatModel), or
            None to take each request's `model` (the step's `use_decision(model=...)`).
        id: the provider id steps name in `use_decision(provider=...)`.
        providers: model providers beyond the built-in ones; an engine adds its own.
    """

    def __init__(
        self,
        model: ModelLike | None = None,
        *,
        id: str = "langchain",  # noqa: A002 - the protocol's attribute name
        providers: Mapping[str, ProviderFactory] | None = None,
    ) -> None:
        self.id = id
        self._model = None if model is None else parse_model(model, f"decision provider {id}")
        self._registry = ProviderRegistry(providers)

    def use_registry(self, registry: ProviderRegistry) -> None:
        """Build models through an engine's providers; `FlowEngine` calls this, at its start.

        Raises:
            FlowDefinitionError: the fixed model names a provider the engine does not know.
        """
        self._registry = registry
        if isinstance(self._model, ModelSpec):
            registry.check(self._model, f"decision provider {self.id}")

    async def decide(self, request: DecisionRequest, *, timeout: float) -> DecisionResult:
        """Ask the chat model for the answers as one structured object."""
        chat = self._chat(request)
        schema = answer_schema(request.questions)
        runnable = chat.with_structured_output(schema, include_raw=True)
        body = json.dumps({"questions": request.questions, "state": request.state}, indent=1)
        out: Any = await runnable.ainvoke([SystemMessage(DECIDE_PROMPT), HumanMessage(body)])
        raw, parsed = out.get("raw"), out.get("parsed")
        if not isinstance(parsed, BaseModel):
            why = out.get("parsing_error") or "no structured answer"
            raise DecisionValidationError(
                request.step, f"the model's answer did not parse: {why}", provider=self.id
            )
        meta = getattr(raw, "usage_metadata", None) or {}
        usage = {k: int(meta.get(k, 0) or 0) for k in ("input_tokens", "output_tokens")}
        answered = (getattr(raw, "response_metadata", None) or {}).get("model_name")
        answers = _answers(request.questions, parsed.model_dump(by_alias=True))
        return DecisionResult(answers, answered or self._name(chat, request), usage)

    def _name(self, chat: BaseChatModel, request: DecisionRequest) -> str:
        """The model as the context reports it: its "provider:name" when that is known."""
        if isinstance(self._model, ModelSpec):
            return f"{self._model.provider}:{self._model.name}"
        return request.model or str(getattr(chat, "model_name", None) or type(chat).__name__)

    def _chat(self, request: DecisionRequest) -> BaseChatModel:
        model = self._model
        if model is None:
            if request.model is None:
                raise ValueError(
                    f"{request.step}: the decision provider '{self.id}' has no model; pass one "
                    "to LangChainDecisionProvider(model) or use_decision(model='openai:gpt-4o')."
                )
            model = parse_model(request.model, f"{request.step}.use_decision(model=...)")
        if isinstance(model, ModelSpec):
            self._registry.check(model, f"decision provider {self.id}")
        return self._registry.resolve(model)


def answer_schema(questions: Mapping[str, Mapping[str, Any]]) -> type[BaseModel]:
    """A pydantic model with one field per question, named by its key (as an alias).

    Built once per shape of question map: building the pydantic models took most of a
    decision's own time, and a step asks the same questions every turn.
    """
    shape = tuple(
        (key, question["type"], tuple(question["criteria"]) if question["type"] == "choice" else ())
        for key, question in questions.items()
    )
    return _schema_of(shape)


@functools.lru_cache(maxsize=256)
def _schema_of(shape: tuple[tuple[str, str, tuple[str, ...]], ...]) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for index, (key, kind, labels) in enumerate(shape):
        fields[f"q{index}"] = (_kind_schema(index, kind, labels), Field(alias=key))
    return create_model(SCHEMA_NAME, **fields)


def _kind_schema(index: int, kind: str, labels: tuple[str, ...]) -> type[BaseModel]:
    if kind == "noul":
        return create_model(f"Noul{index}", noul=(float, Field(ge=0, le=1)))
    key: Any = Literal[labels] if kind == "choice" else int
    name = "label" if kind == "choice" else "level"
    pair_fields: dict[str, Any] = {name: (key, ...), "probability": (float, ...)}
    pair: Any = create_model(f"Probability{index}", **pair_fields)
    first: Any = ("choice", key) if kind == "choice" else ("score", float)
    fields: dict[str, Any] = {
        first[0]: (first[1], ...),
        "probabilities": (list[pair], ...),
        "confidence": (float, ...),
    }
    schema: type[BaseModel] = create_model(f"{kind.title()}{index}", **fields)
    return schema


def _answers(
    questions: Mapping[str, Mapping[str, Any]], parsed: Mapping[str, Any]
) -> dict[str, Any]:
    answers: dict[str, Any] = {}
    for key, question in questions.items():
        given = dict(parsed[key])
        if question["type"] == "choice":
            labels = list(question["criteria"])
            pairs = {p["label"]: p["probability"] for p in given["probabilities"]}
            given["probabilities"] = _normalised(labels, pairs, given["choice"])
        elif question["type"] == "score":
            levels = list(range(len(question["criteria"])))
            pairs = {p["level"]: p["probability"] for p in given["probabilities"]}
            nearest = min(levels, key=lambda level: abs(level - given["score"]))
            given["probabilities"] = _normalised(levels, pairs, nearest)
        answers[key] = {"type": question["type"], **given}
    return answers


def _normalised(keys: list[Any], given: Mapping[Any, Any], chosen: Any) -> dict[Any, float]:
    """One probability per key, summing to 1; all weight on `chosen` if the model gave none."""
    values = {}
    for key in keys:
        value = given.get(key, 0.0)
        ok = isinstance(value, (int, float)) and math.isfinite(value)
        values[key] = max(0.0, float(value)) if ok else 0.0
    total = math.fsum(values.values())
    if total <= 0:
        return {key: 1.0 if key == chosen else 0.0 for key in keys}
    return {key: value / total for key, value in values.items()}
