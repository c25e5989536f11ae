"""Decision steps and providers at `FlowEngine(...)` (D1, D2, F5): what can be known then.

A decision step is checked when the engine starts, like every step: no tools, no model, no
output schema, a valid question map when `define_questions()` can be called without a session,
valid options, and a registered provider. The providers are registered here too: a list of
provider objects, or a dict of id to provider, LangChain chat model or `"provider:model"`
string (each of the last two becomes a `LangChainDecisionProvider` with that id).

With no provider registered at all, a decision step that names a model (`use_decision(model=
"provider:model")` or the flow's `config_decision()`) decides through that chat model: the
engine registers a `LangChainDecisionProvider` under the id "langchain" that takes each
request's model, built by the engine's model providers as the flows' models are. So a flow
whose decisions name a model runs wherever its chat models run (`make scenarios`, the demo
CLI), with no wiring of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel

from picoflow.decisions._langchain import LangChainDecisionProvider
from picoflow.decisions._questions import question_problem
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models import ModelSpec, ProviderRegistry
from picoflow.step import Step
from picoflow.step._decision import DecisionStep, decision_options_of, declared_options
from picoflow.tools import collect_groups, collect_tools

__all__ = ["check_decision_step", "decision_providers", "decision_steps"]


def decision_steps(flow: Flow) -> list[DecisionStep]:
    """The flow's decision steps, in registry order."""
    return [step for step in flow.steps.values() if isinstance(step, DecisionStep)]


def check_decision_step(flow: Flow, step: Step) -> None:
    """Raise FlowDefinitionError for a decision step defined in a way that can never decide."""
    if not isinstance(step, DecisionStep):
        return
    where = f"{flow.name}.{step.name}"
    used = _chat_features(step)
    if used:
        raise FlowDefinitionError(
            f"{where} is a DecisionStep, which never calls a chat model, but it has "
            f"{', '.join(used)}. Move them to an ordinary Step, or make this one a Step."
        )
    for hook in ("define_questions", "on_decision"):
        if getattr(type(step), hook) is getattr(DecisionStep, hook):
            raise FlowDefinitionError(
                f"{where} is a DecisionStep but does not override {hook}(); a decision step "
                "defines its questions and what to do with the answers."
            )
    _check_questions(where, step)


def _chat_features(step: DecisionStep) -> list[str]:
    """What a decision step has that only a chat-model step can use."""
    found = []
    tools = [spec.name for spec in collect_tools(type(step))]
    if tools or collect_groups(type(step), check=False) or step._tool_sources:
        found.append(f"tools ({', '.join(tools) or 'use_tools or a tool group'})")
    if step._end_tool is not None or step._recall:
        found.append("built-in tools (use_end_tool or use_recall)")
    if step._long_term is not None and step._long_term.tools:
        found.append("long-term memory tools")
    if step._model is not None:
        found.append("a model (use_model)")
    if step.output_schema is not None:
        found.append("an output_schema")
    return found


def _check_questions(where: str, step: DecisionStep) -> None:
    """Check the question map now when it can be built without a session's state.

    A `define_questions()` that needs state (it raises here) is checked on every run instead.
    """
    try:
        questions = step.define_questions()
    except Exception:  # noqa: BLE001 - it needs a live session; the turn checks it
        return
    problem = question_problem(questions)
    if problem is None:
        return
    which = "" if problem.question is None else f", question '{problem.question}'"
    raise FlowDefinitionError(f"{where}{which}: {problem.text}")


def decision_providers(
    given: Iterable[Any] | Mapping[str, Any] | None,
    built: list[Flow],
    registry: ProviderRegistry,
) -> dict[str, Any]:
    """The providers by id, each decision step's options checked against them (D2).

    Raises:
        TypeError: an entry that is no decision provider (nor a chat model or model string).
        ValueError: two providers with one id, or an id that is not a non-empty string.
        FlowDefinitionError: a decision step's options are malformed or name no provider.
    """
    providers = _registered(given, registry)
    if not providers and any(
        _names_a_model(step) for flow in built for step in decision_steps(flow)
    ):
        default = LangChainDecisionProvider(id="langchain")
        default.use_registry(registry)
        providers[default.id] = default
    for flow in built:
        for step in decision_steps(flow):
            try:
                decision_options_of(step, providers)
            except ValueError as exc:
                raise FlowDefinitionError(str(exc)) from exc
    return providers


def _names_a_model(step: DecisionStep) -> bool:
    """Whether the step's options name a model and no provider (malformed ones: no)."""
    try:
        options = declared_options(step)
    except ValueError:
        return False  # `decision_options_of` reports it, naming the flow
    return options.model is not None and options.provider is None


def _registered(
    given: Iterable[Any] | Mapping[str, Any] | None, registry: ProviderRegistry
) -> dict[str, Any]:
    if given is None:
        return {}
    if isinstance(given, Mapping):
        entries = [_entry(key, value) for key, value in given.items()]
    else:
        entries = [_entry(None, value) for value in given]
    providers: dict[str, Any] = {}
    for provider in entries:
        if provider.id in providers:
            raise ValueError(
                f"Two decision providers have the id '{provider.id}'; give each its own id."
            )
        if isinstance(provider, LangChainDecisionProvider):
            provider.use_registry(registry)  # its model strings resolve as the flows' do
        providers[provider.id] = provider
    return providers


def _entry(key: Any, value: Any) -> Any:
    """One registered provider; a chat model or model string under a key is wrapped."""
    if key is not None and isinstance(value, (BaseChatModel, ModelSpec, str)):
        return LangChainDecisionProvider(value, id=_id(key))
    if not callable(getattr(value, "decide", None)):
        raise TypeError(
            f"decision_providers: {value!r} is not a decision provider (an object with an `id` "
            "and `async decide(request, *, timeout)`), a LangChain chat model or a "
            "'provider:model' string."
        )
    provider_id = _id(getattr(value, "id", None))
    if key is not None and key != provider_id:
        raise ValueError(
            f"decision_providers: the provider under '{key}' has the id '{provider_id}'; "
            "use the same id for both."
        )
    return value


def _id(value: Any) -> str:
    if isinstance(value, str) and value.strip():
        return value
    raise ValueError(
        f"decision_providers: a provider id must be a non-empty string, got {value!r}."
    )
