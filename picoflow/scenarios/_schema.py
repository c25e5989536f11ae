"""What a scenario file may say (X1), as pydantic models: the file's validator and its schema.

PicoFlow's own `*.scenario.json` files validate unchanged (`flowName`, `judgeModel`,
`judgeMinScore`, and per turn `label`, `input`, `expectedResponse`, `completed`, `minScore`);
picoflow adds a per-turn `expect`, and the simulated-user form (`persona`, `goal`,
`max_turns`) in place of `turns`. Unknown keys are refused, so a misspelt `expcet` fails
loudly instead of checking nothing.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

__all__ = [
    "DecisionCheck",
    "Expect",
    "Scenario",
    "StateMatcher",
    "StateValue",
    "Turn",
    "MATCHER_KEYS",
    "scenario_schema",
]

MATCHER_KEYS = frozenset({"present", "absent", "contains", "matches", "min", "max", "equals"})
DEFAULT_MAX_TURNS = 12


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class StateMatcher(_Strict):
    """A check of one state value other than equality; give one or more of the keys.

    `{"present": true}` / `{"absent": true}`: the path holds something (not null) / nothing;
    `{"contains": x}`: a list holding x, a string holding the substring x, an object with key x;
    `{"matches": "regex"}`: a string the pattern matches (`re.search`);
    `{"min": n, "max": m}`: a number within the bounds (inclusive);
    `{"equals": {...}}`: exact equality, for an expected object that looks like a matcher.
    """

    present: bool | None = None
    absent: bool | None = None
    contains: Any = None
    matches: str | None = None
    min: float | None = None
    max: float | None = None
    equals: Any = None

    @model_validator(mode="after")
    def _one_check_at_least(self) -> StateMatcher:
        if not self.model_fields_set:
            raise ValueError(f"an empty matcher checks nothing; use one of {_keys()}")
        if self.matches is not None:
            _compile(self.matches)
        return self


def _as_matcher(value: Any) -> Any:
    """A dict made only of matcher keys is a matcher (and must be a valid one)."""
    if not (isinstance(value, dict) and value and set(value) <= MATCHER_KEYS):
        return value
    try:
        return StateMatcher.model_validate(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise ValueError(f"matcher {where or 'value'}: {first['msg']}") from None


# Any other value is compared for equality.
StateValue = Annotated[
    StateMatcher | Any, Field(union_mode="left_to_right"), BeforeValidator(_as_matcher)
]


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Patterns = Annotated[
    list[str],
    BeforeValidator(_one_or_many),
    WithJsonSchema(
        {
            "anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}],
            "description": "A regular expression (re.search), or a list of them.",
        }
    ),
]


class DecisionCheck(_Strict):
    """What one decision of the turn must have been (D1); only given keys are checked."""

    step: str | None = Field(None, description="The decision step that decided.")
    answers: dict[str, StateValue] | None = Field(
        None,
        description="Question key to the expected answer: the label of a choice, the score of "
        "a score, the probability of a noul; a value or a matcher ({'min': 0.7}).",
    )
    route: str | None = Field(
        None, description="The step the decision sent the conversation to (its own: a reply)."
    )
    recovered: bool | None = Field(
        None, description="The decision failed and on_decision_error answered instead."
    )


class Expect(_Strict):
    """What must hold after a turn; every key is optional and only given keys are checked."""

    step: str | None = Field(None, description="The step the session is in after the turn.")
    completed: bool | None = Field(None, description="The session reached its end this turn.")
    reply: Patterns | None = Field(None, description="Each pattern must match the reply.")
    not_reply: Patterns | None = Field(None, description="No pattern may match the reply.")
    tools: list[str] | None = Field(
        None, description="The names of the tools called this turn, in order ([] for none)."
    )
    state: dict[str, StateValue] | None = Field(
        None,
        description="Dotted step-state paths ('ExploreStep.criteria.room_type') to a value or "
        "a matcher; read from the stored session after the turn.",
    )
    warnings: Patterns | None = Field(
        None, description="Each pattern must match one of the turn's warnings; [] means none."
    )
    decisions: list[DecisionCheck] | None = Field(
        None, description="The decisions made this turn, in order ([] for none)."
    )

    @field_validator("reply", "not_reply", "warnings")
    @classmethod
    def _valid_patterns(cls, value: list[str] | None) -> list[str] | None:
        for pattern in value or []:
            _compile(pattern)
        return value

    @field_validator("state")
    @classmethod
    def _dotted_paths(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_paths(value)


class Turn(_Strict):
    """One user message and what should come of it."""

    input: str = Field(description="The user's message ('' on the first turn: the flow opens).")
    label: str | None = Field(None, description="What the reply should do, in words.")
    completed: bool | None = Field(None, description="PicoFlow's check: the session ended.")
    expected_response: str | None = Field(
        None,
        alias="expectedResponse",
        description="PicoFlow's words for the judge: what the reply should do.",
    )
    min_score: float | None = Field(None, alias="minScore", ge=0, le=1)
    expect: Expect | None = None

    @model_validator(mode="after")
    def _one_completed(self) -> Turn:
        inner = self.expect.completed if self.expect is not None else None
        if None not in (self.completed, inner) and self.completed != inner:
            raise ValueError("'completed' and 'expect.completed' disagree; give the check once")
        return self

    @property
    def expected_completed(self) -> bool | None:
        """The completed flag to check, from PicoFlow's key or from `expect`."""
        if self.completed is not None:
            return self.completed
        return self.expect.completed if self.expect is not None else None


class Scenario(_Strict):
    """A conversation to run: fixed `turns`, or a simulated user's `persona` and `goal`."""

    flow_name: str = Field(alias="flowName", description="The flow to talk to.")
    name: str | None = Field(None, description="A short title for reports.")
    description: str | None = None
    config: dict[str, Any] | None = Field(
        None, description="The new session's config (stored once, at creation)."
    )
    judge_model: str | None = Field(None, alias="judgeModel")
    judge_min_score: float | None = Field(None, alias="judgeMinScore", ge=0, le=1)
    user_model: str | None = Field(
        None, alias="userModel", description="provider:model that plays the simulated user."
    )
    turns: list[Turn] | None = None
    persona: str | None = Field(None, description="Who the simulated user is and what they say.")
    goal: dict[str, StateValue] | None = Field(
        None, description="State checks that mean the simulated user reached the goal."
    )
    max_turns: int | None = Field(None, ge=1, le=100, description="Simulated turns at most.")

    @field_validator("goal")
    @classmethod
    def _goal_paths(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return _check_paths(value)

    @model_validator(mode="after")
    def _fixed_or_simulated(self) -> Scenario:
        simulated = self.persona is not None or self.goal is not None
        if self.turns is not None and simulated:
            raise ValueError("give either 'turns' or 'persona' and 'goal', not both")
        if self.turns is None and not simulated:
            raise ValueError(
                "a scenario needs 'turns' (or 'persona' and 'goal' for a simulated user)"
            )
        if self.turns is not None and not self.turns:
            raise ValueError("'turns' is empty; a scenario needs at least one turn")
        if simulated and (self.persona is None or not self.goal):
            raise ValueError("a simulated user needs both 'persona' and a non-empty 'goal'")
        return self

    @property
    def is_simulated(self) -> bool:
        """A user model plays the conversation (X6)."""
        return self.turns is None

    @property
    def turn_limit(self) -> int:
        """How many turns a simulated user gets."""
        return self.max_turns if self.max_turns is not None else DEFAULT_MAX_TURNS


def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of a scenario file (generated from these models)."""
    schema = Scenario.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "picoflow scenario"
    return schema


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{pattern!r} is not a valid regular expression ({exc})") from None


def _check_paths(value: dict[str, Any] | None) -> dict[str, Any] | None:
    for path in value or {}:
        if "." not in path or "" in path.split("."):
            raise ValueError(
                f"{path!r} is not a step-state path; write 'StepName.key' or "
                "'StepName.key.subkey' (e.g. 'ExploreStep.criteria.room_type')"
            )
    return value


def _keys() -> str:
    return ", ".join(sorted(MATCHER_KEYS))
