"""Structured replies (V4): a step with `output_schema` answers with a validated object.

The model is given one extra tool, `final_result`, whose argument schema *is* the output schema
(pydantic-ai's final-result tool): providers validate tool arguments far more reliably than
free text, and it works the same with or without the step's other tools. A plain-text reply is
accepted too when it parses as JSON matching the schema (with or without a ```json fence), as
PicoFlow's `StringUtil.parseJson` did. A reply that does not validate is shown to the model
again with the error, within the turn's `max_tool_rounds`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel, ValidationError

from picoflow.errors import FlowDefinitionError
from picoflow.tools import ToolSpec

__all__ = [
    "FINAL_TOOL",
    "final_tool",
    "check_output_schema",
    "check_structured_step",
    "parse_reply",
    "reply_text",
    "invalid_reply_feedback",
]

FINAL_TOOL = "final_result"
_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.S)
_SPECS: dict[type[BaseModel], ToolSpec] = {}


def check_output_schema(owner: str, schema: Any) -> type[BaseModel]:
    """The schema itself, or a FlowDefinitionError saying what `output_schema` must be."""
    if isinstance(schema, type) and issubclass(schema, BaseModel):
        return schema
    raise FlowDefinitionError(
        f"{owner}.output_schema must be a pydantic model class (a BaseModel subclass), got "
        f"{schema!r}. Define e.g. `class Movie(BaseModel): title: str` and set "
        "`output_schema = Movie` on the step."
    )


def check_structured_step(owner: str, schema: Any, tools: list[ToolSpec]) -> None:
    """A valid `output_schema`, and no tool of the step's own that takes the final tool's name."""
    check_output_schema(owner, schema)
    if any(spec.name == FINAL_TOOL for spec in tools):
        raise FlowDefinitionError(
            f"{owner} has an output_schema and a tool named '{FINAL_TOOL}', the name of the "
            'tool its structured reply is given through. Rename the tool (e.g. @tool("submit")).'
        )


def final_tool(step: Any, schema: Any) -> tuple[str, tuple[ToolSpec, Callable[..., Any]]]:
    """The `final_result` tool for a schema, and the handler for a response that mixes it in.

    A `final_result` call that comes alone is the step's answer and never reaches the handler;
    one that shares a response with other tool calls is answered by it, so the model calls it
    again on its own once it has read the other results.
    """
    model = check_output_schema(step.name, schema)
    spec = _SPECS.get(model)
    if spec is None:
        description = (
            f"Give your final answer as a {model.__name__} object. Call this tool on its own, "
            "once you have everything you need; do not answer in plain text."
        )
        definition = convert_to_openai_tool(model)
        definition["function"]["name"] = FINAL_TOOL
        definition["function"]["description"] = description
        spec = _SPECS[model] = ToolSpec(
            FINAL_TOOL, FINAL_TOOL, description, model, True, definition
        )
    return FINAL_TOOL, (spec, _not_alone)


def _not_alone(_: BaseModel) -> str:
    return (
        f"Not accepted: call {FINAL_TOOL} on its own, in a reply without other tool calls, "
        "now that the other tools have answered."
    )


def parse_reply(text: str, schema: type[BaseModel]) -> tuple[BaseModel | None, str | None]:
    """Validate a text reply as JSON for `schema`: (object, None) or (None, the error)."""
    stripped = text.strip()
    fenced = _FENCE.match(stripped)
    if fenced:
        stripped = fenced.group(1).strip()
    try:
        data = json.loads(stripped)
    except ValueError:
        return None, "the reply is not JSON"
    try:
        return schema.model_validate(data), None
    except ValidationError as exc:
        return None, str(exc)


def validate_args(args: dict[str, Any], schema: type[BaseModel]) -> tuple[Any, str | None]:
    """Validate `final_result` arguments: (object, None) or (None, the error)."""
    try:
        return schema.model_validate(args), None
    except ValidationError as exc:
        return None, str(exc)


def reply_text(value: Any) -> str:
    """The text a user receives for a reply value: a model's JSON, or the text itself."""
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    return value if isinstance(value, str) else json.dumps(value)


def invalid_reply_feedback(schema: type[BaseModel], error: str) -> str:
    """What the model reads after a reply that did not validate (V4)."""
    return (
        f"Your answer is not a valid {schema.__name__}: {error}\nCall the {FINAL_TOOL} tool "
        "again with corrected arguments."
    )
