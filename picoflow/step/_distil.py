"""What `Step.distil_on_exit` asks for, checked when the flow is defined (step distillation).

The checks run at definition (STYLE rule 2), so a mistake fails at engine start rather than when
the step is first left; the algorithm itself is in `_housekeeping.distillation`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from picoflow.errors import FlowDefinitionError

__all__ = ["DistilSpec", "distil_spec"]

_STATE_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,127}$")


@dataclass(frozen=True, slots=True)
class DistilSpec:
    """What `Step.distil_on_exit` asked for (step distillation).

    The algorithm is in `_housekeeping.distillation`.
    """

    schema: type[BaseModel]
    key: str
    erase: bool
    prompt: str | None


def distil_spec(where: str, schema: Any, key: Any, erase: Any, prompt: Any) -> DistilSpec:
    """The spec of `distil_on_exit`, or the error that says what to write instead."""
    if not (isinstance(schema, type) and issubclass(schema, BaseModel)):
        shown = f"an instance of {type(schema).__name__}"
        if isinstance(schema, type) or not isinstance(schema, BaseModel):
            shown = repr(schema)
        raise TypeError(
            f"{where}() takes a pydantic model class (a BaseModel subclass) as schema, got "
            f"{shown}. Define e.g. `class Criteria(BaseModel): city: str | None = None` "
            "and pass the class itself."
        )
    _check_distil_options(where, key, erase, prompt)
    return DistilSpec(schema, key, erase, prompt)


def _check_distil_options(where: str, key: Any, erase: Any, prompt: Any) -> None:
    """The eager checks of `distil_on_exit` besides the schema (STYLE rule 2)."""
    if not isinstance(key, str):
        raise TypeError(f"{where}(key=...) must be a string, got {type(key).__name__}.")
    if not _STATE_KEY.match(key):
        raise FlowDefinitionError(
            f"{where}(key={key!r}): the state key must start with a letter, followed by "
            "letters, digits, '_' or '-' (no dots: it is read back as a dotted path, e.g. "
            "get_state('notes.value.city')). Use e.g. key='notes'."
        )
    if not isinstance(erase, bool):
        raise TypeError(f"{where}(erase=...) must be True or False, got {erase!r}.")
    if prompt is not None and not isinstance(prompt, str):
        raise TypeError(
            f"{where}(prompt=...) must be a string or None, got {type(prompt).__name__}."
        )
    if isinstance(prompt, str) and not prompt.strip():
        raise FlowDefinitionError(
            f"{where}(prompt={prompt!r}): the prompt is the distiller's instruction and cannot "
            "be blank. Omit it to use the default instruction."
        )
