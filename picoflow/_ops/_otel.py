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
    from ._telemetry import CallRecord

__all__ = ["OtelTracer", "continued_trace", "find_tracer"]


class OtelTracer:
    """picoflow's tracer, and the check that a real tracer provider is set."""

    def __init__(self) -> None:
        from opentelemetry import trace

        from .. import __version__

        self._trace = trace
        self._tracer = trace.get_tracer("picoflow", __version__)
        self._inactive = (trace.ProxyTracerProvider, trace.NoOpTracerProvider)

    def active(self) -> bool:
        """Whether spans would be recorded: an application set a tracer provider."""
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
