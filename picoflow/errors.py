"""The errors picoflow raises, in three families.

```
PicoflowError
 ├── FlowDefinitionError      a mistake in flow code; raised by FlowEngine(...) before any turn
 ├── SessionConflictError     another writer saved the session first (revision check, P2/P4)
 ├── SessionNotFoundError     the session id names no stored session
 ├── StoreError               the store failed (server down, document too large, ...);
 │   │                        `retryable` says whether sending the turn again can help
 │   └── EmbeddingsMismatchError  the bank's vectors came from another embedding model (L4)
 ├── ToolLoopError            a turn exceeded max_tool_rounds model calls (R7)
 ├── BudgetExceeded           a turn would pass one of the engine's spending limits (O3)
 ├── EffectInHistoryError     a rewind would go back past what a tool did in the world (K9)
 ├── DecisionError            a decision step could not decide (D2); the turn failed
 │   └── DecisionValidationError  the provider's answers do not fit the question map
 └── IdempotencyKeyReusedError  an idempotency key sent again with another request (H5, O4)
```

Definition mistakes fail early, at `FlowEngine(...)`, `@tool` or `use_memory` (built-in
`TypeError`/`ValueError` exactly where the SPEC names them: S5, M1, M3). Run failures carry the
data a caller needs as attributes. Problems the *model* caused (unknown tool, invalid arguments,
a handler that raised) are never raised: they become tool-result messages the model reads (R6).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "PicoflowError",
    "FlowDefinitionError",
    "SessionConflictError",
    "SessionNotFoundError",
    "RevisionNotFoundError",
    "StoreError",
    "EmbeddingsMismatchError",
    "ToolLoopError",
    "BudgetExceeded",
    "EffectInHistoryError",
    "IdempotencyKeyReusedError",
    "MissingAbilityError",
    "DecisionError",
    "DecisionValidationError",
]


class PicoflowError(Exception):
    """Base class of every error picoflow raises on purpose."""


class FlowDefinitionError(PicoflowError):
    """A flow, step or tool is defined in a way that can never work; fix the code."""


class SessionConflictError(PicoflowError):
    """A save was refused because the stored revision moved on (optimistic concurrency, P4).

    Nothing was written. Reload the session and retry the turn, or report the conflict.
    """

    def __init__(
        self,
        session_id: str,
        expected_revision: int,
        actual_revision: int | None,
        message: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.expected_revision = expected_revision
        self.actual_revision = actual_revision
        super().__init__(
            message
            or (
                f"Session '{session_id}' was saved by another writer: expected revision "
                f"{expected_revision}, found {actual_revision}. Nothing was written; "
                "reload the session and retry the turn."
            )
        )

    def __repr__(self) -> str:
        return (
            f"SessionConflictError(session_id={self.session_id!r}, "
            f"expected_revision={self.expected_revision!r}, "
            f"actual_revision={self.actual_revision!r})"
        )


class SessionNotFoundError(PicoflowError):
    """The session id names no stored session (it was deleted, expired or never existed)."""

    def __init__(self, session_id: str, message: str | None = None) -> None:
        self.session_id = session_id
        super().__init__(
            message or f"Session '{session_id}' does not exist in the store; start a new session."
        )

    def __repr__(self) -> str:
        return f"SessionNotFoundError(session_id={self.session_id!r})"


class RevisionNotFoundError(PicoflowError):
    """The session keeps no such revision: never saved, or removed by retention (W1, W5)."""

    def __init__(self, session_id: str, revision: int, message: str | None = None) -> None:
        self.session_id = session_id
        self.revision = revision
        super().__init__(
            message
            or (
                f"Session '{session_id}' keeps no revision {revision}: it was never saved or "
                "retention removed it. engine.history(session_id) lists the revisions kept."
            )
        )

    def __repr__(self) -> str:
        return f"RevisionNotFoundError(session_id={self.session_id!r}, revision={self.revision!r})"


class StoreError(PicoflowError):
    """The session store failed; the message says what to check. Nothing was half-written.

    `retryable` is False when sending the same turn again can never succeed: the document is
    over the store's size limit, holds a value the store cannot keep, is damaged, or was
    written by a newer picoflow. A server answers those with a refusal, not "retry later" (H3).
    """

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        self.retryable = retryable
        super().__init__(message)

    def __repr__(self) -> str:
        return f"StoreError({str(self)!r}, retryable={self.retryable!r})"


class EmbeddingsMismatchError(StoreError):
    """The memory bank's vectors came from another embedding model or dimension (L4).

    Vectors of two models cannot be compared, so the store refuses to mix them: nothing was
    written or searched. `stored` and `given` are `{"model", "dimensions"}` (a model is None
    where it was not named). Not retryable: the same call fails the same way.
    """

    def __init__(self, stored: Mapping[str, object], given: Mapping[str, object]) -> None:
        self.stored = dict(stored)
        self.given = dict(given)

        def named(record: Mapping[str, object]) -> str:
            model = record.get("model") or "an unnamed model"
            return f"{model} ({record.get('dimensions')} dimensions)"

        super().__init__(
            f"The memory bank holds vectors from {named(stored)}, but the embeddings given "
            f"are {named(given)}: vectors of two models cannot be compared, so nothing was "
            "written or searched. Configure FlowEngine(embeddings=...) with the model the bank "
            "was built with, or use a new store for the new model.",
            retryable=False,
        )

    def __repr__(self) -> str:
        return f"EmbeddingsMismatchError(stored={self.stored!r}, given={self.given!r})"


class MissingAbilityError(PicoflowError, ValueError):
    """A feature needs an optional store ability the store does not have (see `stores.base`).

    Raised when the feature is asked for, never halfway through a turn: nothing was written.
    Use MemoryStore, SQLiteStore or MongoStore, which have every ability, or add the methods
    the message names to your store. A `ValueError` too, as it was before abilities had names.
    """

    def __init__(
        self, store: str, ability: str, methods: tuple[str, ...], feature: str, what: str
    ) -> None:
        self.store = store
        self.ability = ability
        self.methods = methods
        self.feature = feature
        super().__init__(
            f"{store} {what} (it has no {', '.join(methods)}), which {feature} needs. "
            f"Use MemoryStore, SQLiteStore or MongoStore, or add "
            f"{'that method' if len(methods) == 1 else 'those methods'} to your store."
        )


class ToolLoopError(PicoflowError):
    """A turn made more model calls than the flow's max_tool_rounds allows (R7)."""

    def __init__(self, flow: str, step: str, rounds: int, *, message: str | None = None) -> None:
        self.flow = flow
        self.step = step
        self.rounds = rounds
        super().__init__(
            message
            or f"{flow} made {rounds} model calls in one turn (step '{step}') without producing a "
            "reply, the limit is max_tool_rounds. The session was left as it was before the turn; "
            "check the step's tools for a stay() loop or raise max_tool_rounds on the flow."
        )

    def __repr__(self) -> str:
        return f"ToolLoopError(flow={self.flow!r}, step={self.step!r}, rounds={self.rounds!r})"


class BudgetExceeded(PicoflowError):
    """A turn would pass one of `FlowEngine(budgets=...)`'s limits (O3); nothing was saved.

    `budget` names the limit ("session_tokens", "owner_tokens_per_day",
    "model_calls_per_turn"), `limit` is its value and `used` what the turn would have reached.
    """

    def __init__(self, budget: str, limit: int, used: int, what: str) -> None:
        self.budget = budget
        self.limit = limit
        self.used = used
        super().__init__(
            f"Budget {budget!r} exceeded: this turn would reach {used} {what}, over the limit "
            f"of {limit}; the session was not changed. Raise the limit, start a new session, "
            "or wait for the limit's period to pass."
        )


class EffectInHistoryError(PicoflowError):
    """A rewind, undo, edit or fork would go back past what a tool did in the world (K9).

    `effects` are the records (`tool`, `args`, `key`, `result`, `at`, `revision`) after the
    target revision. Pass `force=True` to go back anyway: the effects stay recorded, and the
    step's next model call is told they were done.
    """

    def __init__(self, session_id: str, revision: int, effects: list[dict[str, Any]]) -> None:
        self.session_id = session_id
        self.revision = revision
        self.effects = effects
        done = ", ".join(f"{e['tool']} (revision {e['revision']})" for e in effects)
        super().__init__(
            f"Session '{session_id}' cannot go back to revision {revision}: after it, tools "
            f"acted on the world ({done}), and going back would erase them from the record "
            "though they happened. Undo them in the world first, or pass force=True to go "
            "back anyway (the effects stay recorded and the model is told)."
        )


class IdempotencyKeyReusedError(PicoflowError, ValueError):
    """An idempotency key came with another request than the one it was first used for (H5).

    Nothing ran. A key names one request: send each new request with a new key and reuse a
    key only to retry the same request. A turn reports this as `error="IdempotencyKeyReused"`;
    the history changes (`rewind`, `undo`, `fork`) raise it; over HTTP it is a 422.
    """

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(
            f"The Idempotency-Key '{key}' was already used for a different request (another "
            "route, flow, message, session, revision or config). Send each new message with a "
            "new key, and reuse a key only to retry the same request."
        )


class DecisionError(PicoflowError):
    """A decision step could not decide, and no `on_decision_error` answered instead (D2).

    `step` names the decision step, `question` the question at fault (None when the fault is
    not one question's), `provider` and `model` the configured decision provider, and `cause`
    the original exception (the provider's error, a bad question map, facts that are not JSON).
    Nothing of the turn was saved.
    """

    def __init__(
        self,
        step: str,
        problem: str,
        *,
        question: str | None = None,
        provider: str | None = None,
        model: str | None = None,
        cause: BaseException | None = None,
    ) -> None:
        self.step = step
        self.question = question
        self.provider = provider
        self.model = model
        self.cause = cause
        where = step if question is None else f"{step}, question '{question}'"
        super().__init__(f"Decision step {where}: {problem}")

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(step={self.step!r}, question={self.question!r}, "
            f"provider={self.provider!r})"
        )


class DecisionValidationError(DecisionError):
    """A decision provider answered, but not as the exact question map asks (D2).

    A missing or unknown question key, an answer of another kind, a label that was not
    declared, probabilities that do not sum to 1, a score out of range: never retried, never
    shown to `on_decision`.
    """
