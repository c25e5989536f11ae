"""Observability of a served engine: `/metrics` (O2) and the caller's trace continued (O1)."""

from __future__ import annotations

import importlib.util

from fastapi import FastAPI, Request, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from picoflow._ops._metrics import metrics_for_app
from picoflow._ops._otel import continued_trace
from picoflow.engine import FlowEngine
from picoflow.server._auth import principal_of

__all__ = ["install_observability"]


def install_observability(app: FastAPI, engine: FlowEngine, *, metrics: bool) -> None:
    """Serve Prometheus metrics if asked; continue incoming traces when OpenTelemetry is there."""
    if metrics:
        recorder = engine.telemetry.metrics or metrics_for_app()
        engine.telemetry.attach_metrics(recorder)

        async def serve_metrics(request: Request) -> Response:
            # H10: the metrics name flows, models and tools, so they need a principal too.
            await principal_of(request, request.app.state.picoflow.authorize)
            body, content_type = recorder.exposition()
            return Response(body, media_type=content_type)

        app.add_api_route(
            "/metrics", serve_metrics, methods=["GET"], include_in_schema=False, name="metrics"
        )
    if importlib.util.find_spec("opentelemetry") is not None:
        app.add_middleware(_ContinueTrace)


class _ContinueTrace:
    """Pure ASGI (no buffering of streamed replies): make the caller's `traceparent` current.

    A request without `traceparent` (most of them) goes straight through: `continued_trace`
    would do nothing for it, and the headers dict and context manager cost more than the scan.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not _has_traceparent(scope["headers"]):
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1")
            for key, value in scope["headers"]
            if key in (b"traceparent", b"tracestate")
        }
        with continued_trace(headers):
            await self.app(scope, receive, send)


def _has_traceparent(headers: list[tuple[bytes, bytes]]) -> bool:
    """Whether the request names a trace to continue (ASGI header names are lower case)."""
    for key, _ in headers:
        if key == b"traceparent":
            return True
    return False
