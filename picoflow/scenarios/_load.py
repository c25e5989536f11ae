"""Reading scenario files: JSON or YAML, validated before anything runs (X1).

A file that cannot be used is refused with one `ScenarioFileError` that names the file, the
turn (1-based, with its label) and the field, so the fix is obvious without reading a schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from picoflow.scenarios._schema import Scenario

__all__ = ["ScenarioFileError", "load_scenario", "parse_scenario", "scenario_paths", "SUFFIXES"]

SUFFIXES = (".scenario.json", ".scenario.yaml", ".scenario.yml")


class ScenarioFileError(ValueError):
    """A scenario file that cannot run: unreadable, not JSON/YAML, or not a valid scenario.

    Attributes:
        source: the file (or "<dict>" for a scenario given as data).
        turn: the 1-based turn number at fault, or None for the scenario's own fields.
        field: the dotted field at fault (e.g. "expect.tools"), or None.
    """

    def __init__(
        self, message: str, *, source: str, turn: int | None = None, field: str | None = None
    ) -> None:
        super().__init__(message)
        self.source = source
        self.turn = turn
        self.field = field

    def __repr__(self) -> str:
        return (
            f"ScenarioFileError({str(self)!r}, source={self.source!r}, turn={self.turn!r}, "
            f"field={self.field!r})"
        )


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file; `ScenarioFileError` says what is wrong."""
    source = str(path)
    try:
        raw = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ScenarioFileError(
            f"{source}: cannot read the scenario file ({exc.strerror}).", source=source
        ) from exc
    return parse_scenario(_decode(raw, source), source=source)


def parse_scenario(data: Any, *, source: str = "<dict>") -> Scenario:
    """Validate scenario data already decoded (a dict from JSON or YAML)."""
    if not isinstance(data, Mapping):
        raise ScenarioFileError(
            f"{source}: a scenario is an object with 'flowName' and 'turns', got "
            f"{type(data).__name__}.",
            source=source,
        )
    try:
        return Scenario.model_validate(dict(data))
    except ValidationError as exc:
        raise _refusal(exc, data, source) from None


def scenario_paths(paths: Iterable[str | Path]) -> list[Path]:
    """The files named, with every scenario file under each directory named."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            found.extend(
                sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
            )
        else:
            found.append(path)
    return found


def _decode(raw: str, source: str) -> Any:
    if source.endswith((".yaml", ".yml")):
        return _decode_yaml(raw, source)
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ScenarioFileError(
            f"{source}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}.",
            source=source,
        ) from None


def _decode_yaml(raw: str, source: str) -> Any:
    try:
        import yaml  # type: ignore[import-untyped]
    except ImportError:
        raise ScenarioFileError(
            f"{source}: reading YAML scenarios needs PyYAML: pip install 'picoflow[scenarios]' "
            "(or write the scenario as .scenario.json).",
            source=source,
        ) from None
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise ScenarioFileError(f"{source}: not valid YAML: {exc}.", source=source) from None


def _refusal(exc: ValidationError, data: Mapping[str, Any], source: str) -> ScenarioFileError:
    """The first problem of the file, said with its turn and field."""
    error = exc.errors()[0]
    loc = list(error["loc"])
    turn: int | None = None
    where = ""
    if len(loc) >= 2 and loc[0] == "turns" and isinstance(loc[1], int):
        turn = loc[1] + 1
        where = f"turn {turn}{_label(data, loc[1])}, "
        loc = loc[2:]
    field = ".".join(str(part) for part in loc) or None
    message = _reason(error)
    if field is not None:
        message = f"field '{field}': {message}"
    more = len(exc.errors()) - 1
    tail = f" ({more} more problem{'s' if more > 1 else ''} after this one.)" if more else ""
    return ScenarioFileError(
        f"{source}: {where}{message}.{tail}", source=source, turn=turn, field=field
    )


def _label(data: Mapping[str, Any], index: int) -> str:
    turns = data.get("turns")
    if isinstance(turns, list) and index < len(turns) and isinstance(turns[index], Mapping):
        label = turns[index].get("label")
        if isinstance(label, str) and label:
            return f" ({label!r})"
    return ""


def _reason(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        return "unknown field; check its spelling (the schema lists every field)"
    if kind == "missing":
        return "required but missing"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")
