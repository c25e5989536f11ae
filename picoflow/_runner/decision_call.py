"""One decision of a `DecisionStep`: its inputs, the provider call, the checked answers (D1-D3).

In order: the options in force, the question map (checked), each question's merged
instructions, the facts (JSON, `request` reserved) with the conversation added, the provider
call under a per-attempt deadline with retries for transient errors only, the count of the
call in `decision_usage`, and the answers checked against the exact map. Any failure is a
`DecisionError` naming the step (and the question, when one is at fault), which the round
hands to the `on_decision_error` chain.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from picoflow._internal.state import to_json
from picoflow._internal.usage import add_decision_call
from picoflow._runner.turn import TurnContext, report_span
from picoflow.decisions._answers import DecisionAnswers, validated_answers
from picoflow.decisions._provider import (
    DecisionContext,
    DecisionOptions,
    DecisionRequest,
    DecisionResult,
    result_of,
)
from picoflow.decisions._questions import Question, question_payload, question_problem
from picoflow.errors import DecisionError
from picoflow.flow import Flow
from picoflow.models._retries import backoff, describe_error, is_transient
from picoflow.step._decision import DecisionStep, decision_options_of

__all__ = ["Decided", "decide", "conversation_of", "RESERVED_FACTS", "PRIOR_REQUESTS"]

RESERVED_FACTS = ("request", "prior_requests")
PRIOR_REQUESTS = 4  # earlier human messages a provider sees besides the newest


@dataclass(frozen=True, slots=True)
class Decided:
    """A decision that succeeded: the validated answers and what `on_decision` learns."""

    answers: DecisionAnswers
    context: DecisionContext


async def decide(flow: Flow, step: DecisionStep, ctx: TurnContext) -> Decided:
    """Ask the step's questions of its provider and return the checked answers."""
    options = _options(step, ctx)
    provider = ctx.decisions[str(options.provider)]
    questions = await _questions(flow, step, options)
    prompt = step.get_prompt()
    payloads = {key: question_payload(q, prompt) for key, q in questions.items()}
    facts = await _facts(flow, step, options)
    request, prior = conversation_of(step)
    state = {**facts, "request": request, "prior_requests": prior}
    asked = DecisionRequest(step.name, payloads, state, options.model, float(options.timeout or 0))
    raw, elapsed = await _call(provider, asked, options, ctx)
    result = _counted(flow, step, options, raw)
    answers = validated_answers(step.name, questions, result.answers, options.provider)
    context = DecisionContext(
        step=step.name,
        request=request,
        prior_requests=prior,
        facts=facts,
        provider=str(options.provider),
        model=result.model or options.model,
        duration_ms=elapsed,
        usage=_usage(result),
        request_id=result.request_id,
    )
    return Decided(answers, context)


def _options(step: DecisionStep, ctx: TurnContext) -> DecisionOptions:
    try:
        return decision_options_of(step, ctx.decisions)
    except ValueError as exc:
        raise DecisionError(step.name, str(exc), cause=exc) from exc


async def _questions(
    flow: Flow, step: DecisionStep, options: DecisionOptions
) -> Mapping[str, Question]:
    questions = await flow._call_hook(step.define_questions)
    problem = question_problem(questions)
    if problem is not None:
        raise DecisionError(step.name, problem.text, question=problem.question, **_named(options))
    return dict(questions)


async def _facts(flow: Flow, step: DecisionStep, options: DecisionOptions) -> dict[str, Any]:
    """`get_decision_facts()` as a JSON object without the keys the framework adds."""
    raw = await flow._call_hook(step.get_decision_facts)
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise DecisionError(
            step.name,
            f"get_decision_facts() returned a {type(raw).__name__}; return a dict of JSON "
            "facts, or None for none.",
            **_named(options),
        )
    taken = [key for key in RESERVED_FACTS if key in raw]
    if taken:
        raise DecisionError(
            step.name,
            f"get_decision_facts() sets {', '.join(taken)}, which the framework adds (the "
            "conversation); name the fact differently.",
            **_named(options),
        )
    try:
        return dict(to_json(dict(raw), f"{step.name}.get_decision_facts()"))
    except (TypeError, ValueError) as exc:
        raise DecisionError(
            step.name, f"the decision facts are not JSON: {exc}", cause=exc, **_named(options)
        ) from exc


def conversation_of(step: DecisionStep) -> tuple[str, list[str]]:
    """The newest human message of the step's namespace, and up to four earlier ones (D4).

    `Flow.get_conversation`'s view: the openers the framework adds when a step is entered carry
    the navigation origin and are left out; a message forwarded with `go(...).with_message(...)`
    is a request.
    """
    conversation = step.flow.get_conversation(step.namespace, PRIOR_REQUESTS)
    return conversation.request, conversation.prior_requests


async def _call(
    provider: Any, asked: DecisionRequest, options: DecisionOptions, ctx: TurnContext
) -> tuple[Any, float]:
    """The provider's return value and the successful attempt's milliseconds (D2 retries)."""
    timeout = asked.timeout
    retries = int(options.max_retries or 0)
    attempt = 0
    while True:
        started = time.perf_counter()
        span = report_span(ctx, lambda t: t.decision_call(provider.id, options.model, asked.step))
        try:
            with span as record:
                raw = await asyncio.wait_for(provider.decide(asked, timeout=timeout), timeout)
                result = result_of(raw)
                if result is not None:
                    record.input_tokens = int(result.usage.get("input_tokens", 0) or 0)
                    record.output_tokens = int(result.usage.get("output_tokens", 0) or 0)
            return raw, (time.perf_counter() - started) * 1000
        except DecisionError:
            raise  # the provider said what was wrong with its own answer: not transient
        except Exception as exc:  # the decision-provider boundary: retry or fail
            if isinstance(exc, TimeoutError) and not str(exc):
                exc = TimeoutError(f"no answer within {timeout:g} s")
            wait = _retry_wait(provider, exc, attempt, retries, ctx)
            if wait is None:
                tries = f"{attempt + 1} attempt{'s' if attempt else ''}"
                raise DecisionError(
                    asked.step,
                    f"the decision provider '{provider.id}' failed ({tries}): "
                    f"{describe_error(exc)}",
                    cause=exc,
                    **_named(options),
                ) from exc
        attempt += 1
        await ctx.sleep(wait)


def _retry_wait(
    provider: Any, exc: Exception, attempt: int, retries: int, ctx: TurnContext
) -> float | None:
    """Seconds before the next attempt, or None: no attempts left, not transient, no time."""
    should_retry = getattr(provider, "should_retry", None)
    worth_it = bool(should_retry(exc)) if callable(should_retry) else is_transient(exc)
    if attempt >= retries or not worth_it:
        return None
    wait = backoff(attempt)
    if ctx.ends is not None and asyncio.get_running_loop().time() + wait >= ctx.ends:
        return None
    return wait


def _counted(flow: Flow, step: DecisionStep, options: DecisionOptions, raw: Any) -> DecisionResult:
    """Count the answered call (D3: rejected answers too), then check the result's shape."""
    result = result_of(raw)
    add_decision_call(flow._session.decision_usage, _usage(result) if result else {})
    if result is None:
        raise DecisionError(
            step.name,
            f"the decision provider returned {_short(raw)}; return DecisionResult(answers=...) "
            "or a dict with 'answers' (and optionally 'model', 'usage', 'request_id').",
            **_named(options),
        )
    return result


def _usage(result: DecisionResult) -> dict[str, int]:
    counts = {k: int(result.usage.get(k, 0) or 0) for k in ("input_tokens", "output_tokens")}
    counts["total_tokens"] = counts["input_tokens"] + counts["output_tokens"]
    return counts


def _named(options: DecisionOptions) -> dict[str, Any]:
    return {"provider": options.provider, "model": options.model}


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
