"""What `FlowEngine(...)` checks before any turn runs (F5), and what `run` checks first (E2).

Every mistake a flow definition can make that would otherwise surface on the tenth turn of a
live conversation is found here, with a message that says what to change.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

from pydantic.errors import PydanticUserError

from picoflow._internal.seconds import is_seconds
from picoflow._runner.structured import check_structured_step
from picoflow.engine._decisions import check_decision_step
from picoflow.errors import FlowDefinitionError
from picoflow.flow import Flow
from picoflow.models import ProviderRegistry, parse_model
from picoflow.session import is_session_id
from picoflow.step._decision import DecisionStep
from picoflow.step._logic import LogicStep
from picoflow.step._sources import foreign_tool_names, uses_mcp
from picoflow.tools import collect_groups, collect_tools

__all__ = ["check_flow", "turn_input_problem"]

logger = logging.getLogger(__name__)


def check_flow(flow_class: Any, registry: ProviderRegistry, known: dict[str, type[Flow]]) -> None:
    """Raise FlowDefinitionError naming the first problem of a flow class, if any."""
    if not (isinstance(flow_class, type) and issubclass(flow_class, Flow)):
        raise FlowDefinitionError(
            f"FlowEngine(flows=...) takes Flow subclasses, got {flow_class!r}."
        )
    name = flow_class.name
    if name in known:
        raise FlowDefinitionError(
            f"Two flows are named '{name}'; flow names are stored in sessions and must be "
            "unique. Set a different `name` class attribute on one of them."
        )
    flow = _build(flow_class)
    _check_rounds(flow)
    for step in flow.steps.values():
        check_decision_step(flow, step)  # D1: before the model check, which it is exempt from
    _check_models(flow, registry)
    for step in flow.steps.values():
        tools = collect_tools(type(step))
        # V6: a group names only tools the step offers; an MCP server's are known once connected
        collect_groups(type(step), also=foreign_tool_names(step), check=not uses_mcp(step))
        if step.output_schema is not None:
            check_structured_step(f"{flow.name}.{step.name}", step.output_schema, tools)
    initial = flow.initial_step()
    if initial is not None:
        flow.get_step(initial)
    _check_memory(flow, registry)


def _build(flow_class: type[Flow]) -> Flow:
    """Construct the flow and collect its steps; ValueErrors (M1, M3) name the flow."""
    try:
        flow = flow_class()
        flow.steps  # noqa: B018 - collecting the steps is the check
    except (ValueError, TypeError) as exc:
        raise FlowDefinitionError(f"{flow_class.name}: {exc}") from exc
    return flow


def _check_rounds(flow: Flow) -> None:
    rounds = flow.max_tool_rounds
    if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 1:
        raise FlowDefinitionError(
            f"{flow.name}.max_tool_rounds must be a positive integer, got {rounds!r}."
        )


def _check_models(flow: Flow, registry: ProviderRegistry) -> None:
    default = flow.config_model()
    if default is not None:
        default = parse_model(default, f"{flow.name}.config_model()")
        registry.check(default, f"{flow.name}.config_model()")
    for step in flow.steps.values():
        if step._model is not None:
            registry.check(step._model, f"{flow.name}.{step.name}.use_model()")
        elif default is None and not isinstance(step, (LogicStep, DecisionStep)):  # V1, D1
            raise FlowDefinitionError(
                f"{flow.name}.{step.name} has no model: define config_model() on the flow "
                "(e.g. return 'openai:gpt-4o') or call .use_model(...) on the step."
            )


def _check_memory(flow: Flow, registry: ProviderRegistry) -> None:
    memory = flow.get_memory()
    used = {step.namespace for step in flow.steps.values()}
    for namespace, policy in memory.policies.items():
        if namespace not in used:
            what = "enables summaries" if policy.needs_model else "sets a memory policy"
            raise FlowDefinitionError(
                f"{flow.name} {what} for namespace '{namespace}', but no step uses "
                f"it (namespaces in use: {', '.join(sorted(used))}). Fix the name or call "
                f".use_memory('{namespace}') on a step."
            )
    if memory.enabled_namespaces and memory.summary_model is None:
        raise FlowDefinitionError(
            f"{flow.name} enables summaries but sets no summary model. Call "
            "get_memory().set_summary_model('openai:gpt-4o-mini') in the flow's __init__."
        )
    _check_distil(flow)
    _check_recall(flow)
    if memory.summary_model is not None:
        registry.check(memory.summary_model, f"{flow.name}.get_memory().set_summary_model()")


def _check_recall(flow: Flow) -> None:
    """`use_recall()` searches an archive; warn about one that nothing will ever fill.

    Only compaction (M9) and a distillation's erase put messages in the archive; recall over
    any other namespace would answer "no earlier messages" forever, which looks like a bug in
    the model, not in the flow. A warning, not a FlowDefinitionError: F5 lists the errors, and
    such a flow still runs correctly.
    """
    steps = flow.steps.values()
    archived = set(flow.get_memory().policies)  # every policy archives what it evicts (M11)
    archived |= {s.namespace for s in steps if s._distil is not None and s._distil.erase}
    for step in steps:
        if step._recall and step.namespace not in archived:
            logger.warning(
                "%s.%s calls use_recall(), but nothing ever archives its namespace '%s', so "
                "conversation_search would always find nothing. Call "
                "get_memory().enable_summary('%s') (compaction archives what it evicts) or "
                "distil_on_exit(..., erase=True) on a step using it, or remove use_recall().",
                flow.name,
                step.name,
                step.namespace,
                step.namespace,
            )


def _check_distil(flow: Flow) -> None:
    """`distil_on_exit` needs the summary model, and a schema the model can be shown."""
    for step in flow.steps.values():
        spec = step._distil
        if spec is None:
            continue
        if flow.get_memory().summary_model is None:
            raise FlowDefinitionError(
                f"{flow.name}.{step.name} calls distil_on_exit(), but the flow sets no summary "
                "model to distil with. Call get_memory().set_summary_model('openai:gpt-4o-mini') "
                "in the flow's __init__."
            )
        try:
            spec.schema.model_json_schema()
        except PydanticUserError as exc:  # e.g. an arbitrary (non-JSON) field type
            reason = str(exc).splitlines()[0]
            raise FlowDefinitionError(
                f"{flow.name}.{step.name}.distil_on_exit({spec.schema.__name__}): pydantic "
                f"cannot build the JSON schema the model is shown ({reason}). Use JSON field "
                "types (str, int, float, bool, lists, dicts, nested models)."
            ) from exc


def turn_input_problem(
    flows: dict[str, type[Flow]],
    flow_name: Any,
    message: Any,
    session_id: Any,
    config: Any,
) -> str | None:
    """Why a run request cannot even start (E2), or None. Nothing is read or written."""
    if flow_name not in flows:
        registered = ", ".join(flows) or "none"
        return f"Unknown flow {flow_name!r}. Registered flows: {registered}."
    if not isinstance(message, str):
        return f"The message must be a string, got {type(message).__name__}."
    if session_id is not None and not is_session_id(session_id):
        return (
            "Invalid session id: pass the session_id returned by an earlier turn (16 to 128 "
            "letters, digits, '-' or '_'), or None to start a new session."
        )
    if config is not None and not isinstance(config, dict):
        return f"config must be a JSON object (dict), got {type(config).__name__}."
    return None


def as_ttl(ttl: timedelta | float | None) -> timedelta | None:
    """`session_ttl` as a timedelta (or None), checked at engine start."""
    if ttl is None or isinstance(ttl, timedelta):
        return ttl
    if is_seconds(ttl):
        return timedelta(seconds=ttl)
    raise ValueError(f"session_ttl must be a timedelta or a number of seconds > 0, got {ttl!r}.")


def as_turn_timeout(seconds: float | None) -> float | None:
    """`turn_timeout` in seconds (or None), checked at engine start (H6)."""
    if seconds is None:
        return None
    if is_seconds(seconds):
        return float(seconds)
    raise ValueError(
        f"turn_timeout must be a number of seconds > 0 or None (no deadline), got {seconds!r}."
    )


def warn_if_config_changed(flow: Flow, doc: dict[str, Any], config: dict[str, Any] | None) -> None:
    """F7: a restored session keeps its context; say so when a turn sent another config."""
    stored = doc["context"].get("config")
    if config is not None and config != stored:
        flow.add_warning(
            "The config sent with this turn was ignored: a session's context is fixed when it "
            "is created. Start a new session to use a different config."
        )
