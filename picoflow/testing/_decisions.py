"""`ScriptedDecisionProvider`: a decision provider for tests that records what it was asked (D2).

It enters the engine through the same seam as a production provider
(`FlowEngine(decision_providers=[provider])`). Each call takes the next item of its script
(or asks its policy), so a test states the answers a decision step gets, and then asserts
the requests: the questions with their merged instructions, and the state with its facts,
`request` and `prior_requests`.

    provider = ScriptedDecisionProvider([{"route": "billing"}])
    # ... run a turn ...
    assert provider.requests[0].state["request"] == "my invoice is wrong"

Shorthand answers are completed from the question asked: a label for a choice (all the
probability on it), a number for a score (all the probability on the nearest level) or for a
noul. A full answer (`ChoiceAnswer`, a dict) is passed as given, so a test can also script
answers the runner must refuse. An exception in the script is raised by that call.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from picoflow.decisions import ChoiceAnswer, DecisionRequest, DecisionResult, NoulAnswer

__all__ = ["ScriptedDecisionProvider"]

Policy = Callable[[DecisionRequest], Any]
USAGE = {"input_tokens": 20, "output_tokens": 5}  # what each scripted call reports


class ScriptedDecisionProvider:
    """Answers decisions from `script` (in order; or a dict of step name to list) or `policy`.

    Args:
        script: answers by question key per call, a `DecisionResult`, or an exception.
        policy: `policy(request)` (sync or async) returning what a script item would be.
        id: the provider id (`use_decision(provider=...)`); `model` the model it reports.
        usage: the tokens each call reports.
        transient: whether a raised error is retried (None: the default transient rule).
    """

    def __init__(
        self,
        script: Sequence[Any] | Mapping[str, Sequence[Any]] | None = None,
        *,
        policy: Policy | None = None,
        id: str = "scripted",  # noqa: A002 - the protocol's attribute name
        model: str = "scripted-decider",
        usage: Mapping[str, int] | None = None,
        transient: bool | None = None,
    ) -> None:
        if (script is None) == (policy is None):
            raise ValueError("ScriptedDecisionProvider takes a script or a policy (one of them).")
        self.id = id
        self.model = model
        self.usage = dict(USAGE if usage is None else usage)
        self.requests: list[DecisionRequest] = []
        self._policy = policy
        self._scripts: dict[str | None, Sequence[Any]] = {None: list(script or [])}
        if isinstance(script, Mapping):
            self._scripts = {str(step): list(items) for step, items in script.items()}
        self._used: dict[str | None, int] = {}
        self._transient = transient

    async def decide(self, request: DecisionRequest, *, timeout: float) -> Any:
        """Record the request, then answer it with the next scripted item."""
        self.requests.append(request)
        item = self._policy(request) if self._policy is not None else self._next(request.step)
        if inspect.isawaitable(item):
            item = await item
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, DecisionResult):
            return item
        answers = {key: _completed(request, key, value) for key, value in dict(item).items()}
        return DecisionResult(answers, request.model or self.model, dict(self.usage))

    def should_retry(self, error: BaseException) -> bool:
        """`transient` when set, else the framework's rule for transient errors."""
        if self._transient is not None:
            return self._transient
        from picoflow.models._retries import is_transient

        return is_transient(error)

    def _next(self, step: str) -> Any:
        key = step if step in self._scripts else None
        items = self._scripts.get(key)
        if items is None:
            raise AssertionError(f"ScriptedDecisionProvider has no script for step {step}.")
        used = self._used.get(key, 0)
        if used >= len(items):
            raise AssertionError(
                f"ScriptedDecisionProvider's script is used up: {step} asked for decision "
                f"{used + 1}, the script has {len(items)}. Add an item for it."
            )
        self._used[key] = used + 1
        return items[used]

    @staticmethod
    def choice(label: str, labels: Sequence[str], confidence: float = 1.0) -> ChoiceAnswer:
        """A full choice answer: all the probability on `label`."""
        probabilities = {name: 1.0 if name == label else 0.0 for name in labels}
        return ChoiceAnswer(label, probabilities, confidence)

    @staticmethod
    def noul(probability: float) -> NoulAnswer:
        """A full yes/no answer."""
        return NoulAnswer(probability)


def _completed(request: DecisionRequest, key: str, value: Any) -> Any:
    """A shorthand answer completed from the question it answers; anything else as given."""
    question = request.questions.get(key) or {}
    kind = question.get("type")
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "choice" and isinstance(value, str):
        return ScriptedDecisionProvider.choice(value, list(question["criteria"]))
    if kind == "noul" and number:
        return NoulAnswer(float(value))
    if kind == "score" and number:
        levels = range(len(question["criteria"]))
        nearest = min(levels, key=lambda level: abs(level - value))
        probabilities = {level: 1.0 if level == nearest else 0.0 for level in levels}
        return {"type": "score", "score": value, "probabilities": probabilities, "confidence": 1.0}
    return value
