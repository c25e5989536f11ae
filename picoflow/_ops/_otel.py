"""OpenTelemetry spans for the turn (O1), used only when `opentelemetry-api` is installed.

Nothing here is imported at module level: `find_tracer` looks for the package, and without it
the engine never imports OpenTelemetry at all. With it, spans are made only once an
application has set a tracer provider; until then the API's proxy provider answers and the
turn skips tracing altogether.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from picoflow._ops._telemetry import CallRecord

__all__ = ["OtelTracer", "continued_trace", "find_tracer"]

_ASK = object()  # `_TRACER_PROVIDER` missing from the API: ask `get_tracer_provider()`


class OtelTracer:
    """picoflow's tracer, and the check that a real tracer provider is set."""

    def __init__(self) -> None:
        from importlib.metadata import PackageNotFoundError, version

        from opentelemetry import trace

        try:
            release: str | None = version("picoflow")
        except PackageNotFoundError:  # run from a checkout that was never installed
            release = None
        self._trace = trace
        self._tracer = trace.get_tracer("picoflow", release)
        self._inactive = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)

    def active(self) -> bool:
        """Whether spans would be recorded: an application set a tracer provider.

        Asked several times a turn, so the common answer (no provider set) comes from the API's
        global without `get_tracer_provider()`, whose `os.environ` lookup cost more than the
        rest of the check. A provider named by `OTEL_PYTHON_TRACER_PROVIDER` was loaded when
        this tracer was made (`trace.get_tracer` loads it), and one set later with
        `set_tracer_provider` fills that global, so both are honoured; an API without the
        global falls back to asking.
        """
        if getattr(self._trace, "_TRACER_PROVIDER", _ASK) is None:
            return False
        return not isinstance(self._trace.get_tracer_provider(), self._inactive)

    @contextmanager
    def span(self, name: str, record: CallRecord, *, client: bool = False) -> Iterator[None]:
        """A span current for the block; `record`'s attributes and outcome are set on exit."""
        kind = self._trace.SpanKind.CLIENT if client else self._trace.SpanKind.INTERNAL
        with self._tracer.start_as_current_span(
            name, kind=kind, record_exception=True, set_status_on_exception=True
        ) as span:
            try:
                yield
            finally:
                span.set_attributes(record.attributes)
                if record.outcome != "ok":
                    span.set_attribute("picoflow.outcome", record.outcome)
                    span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))


@contextmanager
def continued_trace(headers: Mapping[str, str]) -> Iterator[None]:
    """Make the caller's trace (W3C `traceparent`, `tracestate`) current for the block.

    A server wraps each request in it, so the turn's span joins the trace of the service
    that called it. Without the header, or without OpenTelemetry, it does nothing.
    """
    if "traceparent" not in headers or importlib.util.find_spec("opentelemetry") is None:
        yield
        return
    from opentelemetry import context
    from opentelemetry.propagate import extract

    token = context.attach(extract(headers))
    try:
        yield
    finally:
        context.detach(token)


def find_tracer() -> OtelTracer | None:
    """The tracer if `opentelemetry-api` is installed, else None (and nothing is imported)."""
    if importlib.util.find_spec("opentelemetry") is None:
        return None
    try:
        return OtelTracer()
    except ImportError:  # a namespace package without the API
        return None
