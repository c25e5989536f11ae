"""`@tool`: a Step method the model may call while the step executes (R1).

The tool's name is the method name (or an alias), its description the docstring, its argument
schema the method's type hints (or an explicit pydantic model). Schemas are built once per class
and validated with pydantic before the handler runs, so a handler always receives typed values
and a model that sends bad arguments reads the validation error and can correct itself (R6).
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ConfigDict, create_model

from picoflow.errors import FlowDefinitionError

__all__ = [
    "tool",
    "tool_group",
    "ToolCall",
    "ToolSpec",
    "GroupSpec",
    "collect_tools",
    "collect_groups",
]

F = TypeVar("F", bound=Callable[..., Any])
_MARK = "__picoflow_tool__"
_GROUP_MARK = "__picoflow_tool_group__"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of a model response, as a `@tool_group` handler receives it (V6).

    Attributes:
        name: the tool the model called.
        args: its arguments, validated against the tool's schema (typed values, by name).
        id: the call's id; each call still gets its own tool result (R6).
    """

    name: str
    args: dict[str, Any]
    id: str


@dataclass(frozen=True, slots=True)
class GroupSpec:
    """A `@tool_group` as declared: the tool names it takes over and its method."""

    names: frozenset[str]
    method_name: str


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as declared on a method; `bind` turns it into the schema the model sees."""

    name: str
    method_name: str
    description: str
    args_schema: type[BaseModel] | None
    pass_model: bool  # the handler takes the validated model itself as its only argument
    schema: dict[str, Any]  # the OpenAI-format definition that `bind_tools` receives
    # K1: True, or a predicate (args, step) -> bool, when a person must approve a call first
    requires_approval: bool | Callable[[dict[str, Any], Any], bool] = False
    effects: bool = False  # K8: declared as acting on the world (`@tool(effects=True)`)

    @property
    def has_effects(self) -> bool:
        """Whether each run is recorded as an effect (K8): declared so, or needing approval."""
        return self.effects or self.requires_approval is not False

    def validate(self, args: dict[str, Any]) -> dict[str, Any]:
        """Validate the model's arguments; return the keyword arguments for the handler."""
        if self.args_schema is None:
            return {}
        model = self.args_schema.model_validate(args)
        if self.pass_model:
            return {"__model__": model}
        return {name: getattr(model, name) for name in type(model).model_fields}


@overload
def tool(func: F, /) -> F: ...
@overload
def tool(
    name: str | None = None,
    /,
    *,
    args_schema: type[BaseModel] | None = None,
    requires_approval: bool | Callable[[dict[str, Any], Any], bool] = False,
    effects: bool = False,
) -> Callable[[F], F]: ...


def tool(
    func_or_name: Any = None,
    /,
    *,
    args_schema: type[BaseModel] | None = None,
    requires_approval: bool | Callable[[dict[str, Any], Any], bool] = False,
    effects: bool = False,
) -> Any:
    """Expose a Step method to the model: `@tool`, `@tool("alias")`, `@tool(args_schema=M)`.

    `requires_approval` (K1): True, or a function `(args, step) -> bool` of the validated
    arguments, when a person must approve a call before it runs (docs/people-in-the-loop.md).
    `effects=True` (K8) declares a tool that acts on the world (books, pays, sends): each run
    is recorded in the session's `effects`, a turn that fails after it still saves its result,
    and no rewind drops it. Every tool that needs approval is one.

    Raises:
        FlowDefinitionError: the method has no docstring (the model reads it to decide when to
            call the tool), an alias is blank, the type hints cannot form a schema, or
            `requires_approval` is neither a bool nor a callable, or `effects` is not a bool.
    """
    _check_approval(requires_approval)
    if not isinstance(effects, bool):
        raise FlowDefinitionError(
            f"@tool(effects={effects!r}): pass True for a tool that acts on the world (books, "
            "pays, sends), False otherwise."
        )
    if callable(func_or_name) and not isinstance(func_or_name, str):
        return _mark(func_or_name, None, args_schema)
    alias = func_or_name
    if alias is not None and (not isinstance(alias, str) or not alias.strip()):
        raise FlowDefinitionError(
            f"@tool({alias!r}): a tool alias must be a non-empty string; "
            "write @tool to use the method name."
        )

    def decorate(func: F) -> F:
        return _mark(func, alias, args_schema, requires_approval, effects)

    return decorate


def _check_approval(requires_approval: Any) -> None:
    if isinstance(requires_approval, bool) or callable(requires_approval):
        return
    raise FlowDefinitionError(
        f"@tool(requires_approval={requires_approval!r}): pass True, False, or a function "
        "(args, step) -> bool that says whether this call needs a person's approval."
    )


def _mark(
    func: F,
    alias: str | None,
    args_schema: type[BaseModel] | None,
    requires_approval: bool | Callable[[dict[str, Any], Any], bool] = False,
    effects: bool = False,
) -> F:
    name = alias.strip() if alias else func.__name__
    description = inspect.getdoc(func)
    if not description:
        raise FlowDefinitionError(
            f"Tool '{name}' ({func.__qualname__}) has no docstring. The model reads the "
            "docstring to decide when to call the tool; write one as an instruction, e.g. "
            '"Record the user\'s hotel search criteria."'
        )
    model, pass_model = _schema_for(func, name, description, args_schema)
    definition = convert_to_openai_tool(model or _empty_model(name))
    definition["function"]["name"] = name
    definition["function"]["description"] = description
    spec = ToolSpec(
        name,
        func.__name__,
        description,
        model,
        pass_model,
        definition,
        requires_approval,
        effects,
    )
    setattr(func, _MARK, spec)
    return func


def _schema_for(
    func: Callable[..., Any],
    name: str,
    description: str,
    explicit: type[BaseModel] | None,
) -> tuple[type[BaseModel] | None, bool]:
    params = [p for p in inspect.signature(func).parameters.values() if p.name != "self"]
    try:
        hints = typing.get_type_hints(func, include_extras=True)
    except (NameError, TypeError, AttributeError) as exc:  # an unresolvable forward reference
        raise FlowDefinitionError(
            f"Tool '{name}' ({func.__qualname__}): its type hints cannot be resolved ({exc}). "
            "Import every type the signature names at module level."
        ) from exc
    if explicit is not None:
        only = len(params) == 1 and hints.get(params[0].name) is explicit
        return explicit, only
    if not params:
        return None, False
    fields: dict[str, Any] = {}
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise FlowDefinitionError(
                f"Tool '{name}' ({func.__qualname__}) takes *{param.name}; tool arguments "
                "need names and types. Declare each argument, or pass args_schema=Model."
            )
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (hints.get(param.name, Any), default)
    model = create_model(name, __doc__=description, **fields)
    return model, False


def _empty_model(name: str) -> type[BaseModel]:
    return create_model(name, __config__=ConfigDict(extra="ignore"))


def collect_tools(step_class: type) -> list[ToolSpec]:
    """Every `@tool` of a step class, inherited ones included, base classes first.

    Raises:
        FlowDefinitionError: two methods declare the same tool name (F5).
    """
    found: dict[str, ToolSpec] = {}
    owners: dict[str, str] = {}
    for klass in reversed(step_class.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, _MARK, None)
            if not isinstance(spec, ToolSpec):
                continue
            owner = owners.get(spec.name)
            if owner is not None and owner != attr:
                raise FlowDefinitionError(
                    f"{step_class.__name__} has two tools named '{spec.name}' (methods "
                    f"'{owner}' and '{attr}'); tool names must be unique within a step. "
                    "Rename one method or give it another @tool alias."
                )
            owners[spec.name] = attr
            found[spec.name] = spec
    return list(found.values())


def tool_group(*names: str) -> Callable[[F], F]:
    """Handle a whole model response at once when all its tool calls name tools in `names`.

    The method takes `(self, calls: list[ToolCall])` and returns what a tool handler returns
    (R2); it is called once with every call of the response, and its result (feedback and
    transition) answers each call (V6). The tools themselves are ordinary `@tool` methods of
    the step: they give the model the schemas, and handle calls the group does not take over.

    Raises:
        FlowDefinitionError: no names, or a name that is not a non-empty string.
    """
    if not names or any(not isinstance(name, str) or not name.strip() for name in names):
        raise FlowDefinitionError(
            f"@tool_group{names!r}: name the tools the group handles, each a non-empty "
            'string, e.g. @tool_group("get_weather").'
        )

    def decorate(func: F) -> F:
        setattr(func, _GROUP_MARK, GroupSpec(frozenset(n.strip() for n in names), func.__name__))
        return func

    return decorate


def collect_groups(
    step_class: type, *, also: Iterable[str] = (), check: bool = True
) -> list[GroupSpec]:
    """Every `@tool_group` of a step class, in definition order (base classes first).

    `also` names the step's other tools (from `use_tools`) a group may take over; `check=False`
    skips the name check (the engine made it at start, or makes it once an MCP server's tools
    are known).

    Raises:
        FlowDefinitionError: a group names a tool the step does not define with `@tool` nor
            get from `use_tools`.
    """
    groups: dict[str, GroupSpec] = {}
    for klass in reversed(step_class.__mro__):
        for attr, value in vars(klass).items():
            spec = getattr(value, _GROUP_MARK, None)
            if isinstance(spec, GroupSpec):
                groups[attr] = spec
    if groups and check:
        known = {spec.name for spec in collect_tools(step_class)} | set(also)
        for spec in groups.values():
            missing = sorted(spec.names - known)
            if missing:
                raise FlowDefinitionError(
                    f"{step_class.__name__}.{spec.method_name} is a @tool_group for "
                    f"{', '.join(repr(n) for n in missing)}, but {step_class.__name__} has no "
                    "@tool of that name and gets none from use_tools(). Define the tool (its "
                    "schema is what the model sees) or fix the name."
                )
    return list(groups.values())
