"""`Telemetry`: one place the turn reports to, fanned out to traces and metrics (O1, O2).

Each report is a context manager yielding a `CallRecord` the caller fills in (tokens, outcome,
revision) before it closes. When nothing listens, every report returns the same inert record
inside a `nullcontext`, so a turn pays a few attribute look-ups and no allocation of its own.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from picoflow._ops._metrics import PrometheusMetrics
    from picoflow._ops._otel import OtelTracer

__all__ = ["CallRecord", "NULL_RECORD", "Telemetry", "describe_reply"]


class CallRecord:
    """What a report learnt while it was open: attributes for the span, labels for metrics."""

    __slots__ = ("attributes", "outcome", "input_tokens", "output_tokens")

    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}
        self.outcome = "ok"
        self.input_tokens = 0
        self.output_tokens = 0

    def set(self, key: str, value: Any) -> None:
        """Add a span attribute (None values are left out, as OpenTelemetry requires)."""
        if value is not None:
            self.attributes[key] = value


class _NullRecord(CallRecord):
    """The record of a report nobody listens to: whatever is written to it is dropped."""

    __slots__ = ()

    def __init__(self) -> None:
        fields = {"attributes": {}, "outcome": "ok", "input_tokens": 0, "output_tokens": 0}
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        """Drop it: the record is shared by every report nobody listens to."""

    def set(self, key: str, value: Any) -> None:
        """Drop it."""


NULL_RECORD: CallRecord = _NullRecord()
_NULL: AbstractContextManager[CallRecord] = nullcontext(NULL_RECORD)


class Telemetry:
    """Where a turn reports; forwards to an OpenTelemetry tracer and Prometheus metrics.

    The tracer is looked up once: `opentelemetry-api` is imported only if it is installed, and
    spans are made only while a real tracer provider is set (the API's default proxy is
    checked on every turn, so setting a provider after the engine started still works).
    """

    def __init__(self) -> None:
        from picoflow._ops._otel import find_tracer

        self._tracer: OtelTracer | None = find_tracer()
        self._metrics: PrometheusMetrics | None = None

    def attach_metrics(self, metrics: PrometheusMetrics) -> None:
        """Record Prometheus metrics from now on (`create_app(..., metrics=True)` calls this)."""
        self._metrics = metrics

    @property
    def metrics(self) -> PrometheusMetrics | None:
        """The attached metrics, if any."""
        return self._metrics

    def _tracing(self) -> OtelTracer | None:
        tracer = self._tracer
        return tracer if tracer is not None and tracer.active() else None

    @property
    def active(self) -> bool:
        """Whether anything listens: lets a caller skip building a report's attributes."""
        return self._metrics is not None or self._tracing() is not None

    def turn(self, flow: str, session_id: str | None) -> AbstractContextManager[CallRecord]:
        """The `picoflow.turn` span and the turn metrics.

        The span is a child of whatever span is current, so a server that continues the
        caller's `traceparent` (see `continued_trace`) puts the turn in the caller's trace.
        """
        tracer = self._tracing()
        if tracer is None and self._metrics is None:
            return _NULL
        return self._turn(tracer, flow, session_id)

    @contextmanager
    def _turn(
        self, tracer: OtelTracer | None, flow: str, session_id: str | None
    ) -> Iterator[CallRecord]:
        record = CallRecord()
        record.set("picoflow.flow", flow)
        record.set("picoflow.session_id", session_id)
        started = time.perf_counter()
        span = tracer.span("picoflow.turn", record) if tracer else nullcontext()
        try:
            with span:
                yield record
        finally:
            if self._metrics is not None:
                self._metrics.turn(flow, record.outcome, time.perf_counter() - started)

    def model_call(self, model: str, step: str, purpose: str) -> AbstractContextManager[CallRecord]:
        """One model call, named with the GenAI semantic conventions (`gen_ai.*`)."""
        tracer = self._tracing()
        if tracer is None and self._metrics is None:
            return _NULL
        return self._model_call(tracer, model, step, purpose)

    @contextmanager
    def _model_call(
        self, tracer: OtelTracer | None, model: str, step: str, purpose: str
    ) -> Iterator[CallRecord]:
        record = CallRecord()
        record.set("gen_ai.operation.name", "chat")
        record.set("gen_ai.request.model", model)
        record.set("picoflow.step", step)
        record.set("picoflow.purpose", purpose)
        started = time.perf_counter()
        span = tracer.span(f"chat {model}", record, client=True) if tracer else nullcontext()
        try:
            with span:
                try:
                    yield record
                except BaseException:
                    record.outcome = "error"
                    raise
                finally:
                    record.set("gen_ai.usage.input_tokens", record.input_tokens)
                    record.set("gen_ai.usage.output_tokens", record.output_tokens)
        finally:
            if self._metrics is not None:
                self._metrics.model_call(
                    model,
                    record.outcome,
                    time.perf_counter() - started,
                    record.input_tokens,
                    record.output_tokens,
                )

    def decision_call(
        self, provider: str, model: str | None, step: str
    ) -> AbstractContextManager[CallRecord]:
        """One attempt of a decision step's provider call (D2): a `gen_ai` span, no metrics."""
        tracer = self._tracing()
        if tracer is None:
            return _NULL
        return self._decision_call(tracer, provider, model, step)

    @contextmanager
    def _decision_call(
        self, tracer: OtelTracer, provider: str, model: str | None, step: str
    ) -> Iterator[CallRecord]:
        record = CallRecord()
        record.set("gen_ai.operation.name", "decision")
        record.set("gen_ai.provider.name", provider)
        record.set("gen_ai.request.model", model)
        record.set("picoflow.step", step)
        with tracer.span(f"decision {provider}", record, client=True):
            try:
                yield record
            except BaseException:
                record.outcome = "error"
                raise
            finally:
                record.set("gen_ai.usage.input_tokens", record.input_tokens)
                record.set("gen_ai.usage.output_tokens", record.output_tokens)

    def operation(self, name: str, **attributes: Any) -> AbstractContextManager[CallRecord]:
        """A span for a tool call, a compaction, or a store load or save (`picoflow.<name>`)."""
        tracer = self._tracing()
        if tracer is None and self._metrics is None:
            return _NULL
        return self._operation(tracer, name, attributes)

    @contextmanager
    def _operation(
        self, tracer: OtelTracer | None, name: str, attributes: dict[str, Any]
    ) -> Iterator[CallRecord]:
        record = CallRecord()
        for key, value in attributes.items():
            record.set(f"picoflow.{key}", value)
        span = tracer.span(f"picoflow.{name}", record) if tracer else nullcontext()
        try:
            with span:
                try:
                    yield record
                except BaseException as exc:
                    record.outcome = _outcome_of(exc)
                    raise
        finally:
            if self._metrics is not None:
                self._metrics.operation(name, record.outcome, attributes)


def _outcome_of(exc: BaseException) -> str:
    from picoflow.errors import SessionConflictError, StoreError

    if isinstance(exc, SessionConflictError):
        return "conflict"
    if isinstance(exc, StoreError):
        return "store_error"
    return "error"


def describe_reply(record: CallRecord, result: Any) -> None:
    """The GenAI attributes of a reply: tokens, finish reason, the model that answered."""
    meta = getattr(result, "usage_metadata", None) or {}
    record.input_tokens = int(meta.get("input_tokens", 0) or 0)
    record.output_tokens = int(meta.get("output_tokens", 0) or 0)
    response = getattr(result, "response_metadata", None) or {}
    reason = response.get("finish_reason") or response.get("stop_reason")
    if reason is not None:
        record.set("gen_ai.response.finish_reasons", [str(reason)])
    if response.get("model_name"):
        record.set("gen_ai.response.model", str(response["model_name"]))
