"""The summary model's one call site, shared by compaction and step distillation (M6, M8, M10).

Both send the summary model a transcript of messages (`transcript_line`), tag the call as a
summary call (`summary_run_config`) and must survive any failure of it (`ask_summary_model`).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.runnables import RunnableConfig

from picoflow._ops._tracing import run_metadata
from picoflow.flow import Flow
from picoflow.models._retries import ModelCallError, call_with_retries

__all__ = ["SummaryModel", "summary_run_config", "ask_summary_model", "transcript_line", "clip"]

logger = logging.getLogger(__name__)


def summary_run_config(
    flow: Flow, namespace: str, step: str | None = None, purpose: str = "summary"
) -> RunnableConfig:
    """Run metadata and tags of a summary call (M10), as `model_call.model_config` for replies.

    A step distillation is a summary call too, of purpose `distil`, attributed to the step
    left (`step`) rather than the current one. The `nostream` tag keeps the call out of
    LangGraph-style message streams; picoflow's own stream never sees it, because the
    summariser is called with `ainvoke`.
    """
    step = step or flow._session.current
    metadata = run_metadata(flow, step, namespace, purpose)
    tags = ["picoflow", "picoflow:summary"]
    tags += [f"picoflow:{purpose}"] if purpose != "summary" else []
    tags += [f"picoflow:step:{step}", f"picoflow:namespace:{namespace}", "nostream"]
    subject = namespace if purpose == "summary" else step
    return RunnableConfig(metadata=metadata, tags=tags, run_name=f"{flow.name}.{purpose}.{subject}")


@dataclass(frozen=True, slots=True)
class SummaryModel:
    """The summary model with its retries and timeout (V9): a summary call is a model call too.

    The built-in providers leave retrying to picoflow (their clients' own retries are off), so
    without this a rate limit or a dropped connection would skip a compaction that one more
    attempt a second later would have made.
    """

    model: BaseChatModel
    retries: int = 3
    call_timeout: float | None = None  # per attempt (`ModelSpec(timeout=)`)
    name: str = "the summary model"
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    turn_ends: float | None = None  # the turn's deadline in event-loop time (H6), if any


async def ask_summary_model(
    summariser: SummaryModel,
    request: list[Any],
    run: RunnableConfig,
    timeout: float,
    extra: dict[str, Any],
) -> tuple[AIMessage | None, str | None]:
    """The reply of a housekeeping call (a summary or a distillation), or why there is none.

    This is the one place where the summary model may fail without failing the turn (M8):
    its callers leave the session as it was and turn the reason into a warning. Transient
    failures are retried under the model's policy (V9); `timeout` (`SummaryConfig.timeout`)
    bounds all the attempts together, waits included.
    """
    model = summariser.model
    budget, limit = _budget(timeout, summariser.turn_ends)
    if budget <= 0:
        return None, "the turn had no time left for it (turn_timeout)"
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(budget):
            reply = await call_with_retries(
                lambda: model.ainvoke(request, config=run),
                retries=summariser.retries,
                timeout=summariser.call_timeout,
                sleep=summariser.sleep,
                describe=lambda: (summariser.name, "a summary call"),
                deadline=loop.time() + budget,
            )
    except TimeoutError:
        logger.info("summary model did not answer within %.3g s", budget, extra=extra)
        return None, f"the summary model did not answer within {limit}"
    except Exception as exc:  # M8: a failing summariser never fails the turn
        # The M8 warning names the error; the traceback is for whoever debugs the provider.
        logger.info("summary model failed", exc_info=True, extra=extra)
        return None, _failure(exc)
    return (reply if isinstance(reply, AIMessage) else AIMessage(str(reply.text))), None


def _budget(timeout: float, turn_ends: float | None) -> tuple[float, str]:
    """Seconds the summary may take, and how the skip warning names that limit.

    Within a turn that has a deadline (H6) the summary ends a little before it (a quarter of
    what is left, at most a second), so the turn still has time to save what it did.
    """
    named = f"{timeout:g} s"
    if turn_ends is None:
        return timeout, named
    left = turn_ends - asyncio.get_running_loop().time()
    usable = left - min(1.0, left / 4)
    if usable >= timeout:
        return timeout, named
    return usable, f"the {max(usable, 0):.2g} s the turn had left (turn_timeout)"


def _failure(exc: Exception) -> str:
    """Why a summary call gave nothing, for the M8 warning."""
    if isinstance(exc, ModelCallError) and exc.__cause__ is not None:
        cause = exc.__cause__
        tries = "once" if exc.attempts == 1 else f"{exc.attempts} times"
        return f"the summary model raised {type(cause).__name__}: {cause} (tried {tries})"
    return f"the summary model raised {type(exc).__name__}: {exc}"


def transcript_line(message: BaseMessage) -> str:
    """One message as a line of the transcript a housekeeping call reads."""
    text = str(message.text)
    if isinstance(message, ToolMessage):
        return f"Tool result ({message.name or 'tool'}): {text}"
    if isinstance(message, AIMessage):
        calls = [f"{c['name']}({_json_args(c.get('args'))})" for c in message.tool_calls]
        said = f"Assistant: {text}" if text else "Assistant:"
        return said + (" [called " + ", ".join(calls) + "]" if calls else "")
    role = {"human": "User", "system": "System"}.get(message.type, message.type)
    return f"{role}: {text}"


def _json_args(args: Any) -> str:
    return json.dumps(args or {}, ensure_ascii=False, default=str)


def clip(text: str) -> str:
    """At most 80 characters of a model's reply, for a warning that quotes it."""
    return text if len(text) <= 80 else text[:77] + "..."
