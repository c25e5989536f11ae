"""Prometheus metrics of an engine (O2), through the official `prometheus-client`.

Under several worker processes each one only counts its own turns, so a scrape of one worker
would see a fraction: with `PROMETHEUS_MULTIPROC_DIR` set (the client's multiprocess mode),
the metrics are written to that folder and `/metrics` aggregates every worker's files.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["PrometheusMetrics", "MISSING_CLIENT"]

MISSING_CLIENT = (
    "metrics=True needs the prometheus-client package: pip install 'picoflow[metrics]' "
    "(or pass metrics=False)."
)

# Seconds; a turn with an instant model takes about a millisecond, a real one several seconds.
_TURN_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)

_shared: PrometheusMetrics | None = None


class PrometheusMetrics:
    """The metric families, in their own registry (or the global one in multiprocess mode)."""

    def __init__(self, registry: Any = None) -> None:
        import prometheus_client as prom

        self._prom = prom
        self.multiprocess = "PROMETHEUS_MULTIPROC_DIR" in os.environ
        if registry is None and not self.multiprocess:
            registry = prom.CollectorRegistry()
        self.registry = registry
        kwargs: dict[str, Any] = {"registry": registry} if registry is not None else {}
        self.turns = prom.Counter(
            "picoflow_turns", "Turns run, by flow and outcome.", ["flow", "outcome"], **kwargs
        )
        self.turn_seconds = prom.Histogram(
            "picoflow_turn_duration_seconds",
            "Duration of a turn, load to save.",
            ["flow"],
            buckets=_TURN_BUCKETS,
            **kwargs,
        )
        self.model_seconds = prom.Histogram(
            "picoflow_model_call_duration_seconds",
            "Duration of one model call, retries included.",
            ["model", "outcome"],
            buckets=_TURN_BUCKETS,
            **kwargs,
        )
        self.tokens = prom.Counter(
            "picoflow_tokens", "Tokens used, by model and direction.", ["model", "kind"], **kwargs
        )
        self.tool_calls = prom.Counter(
            "picoflow_tool_calls", "Tool calls, by tool and outcome.", ["tool", "outcome"], **kwargs
        )
        self.compactions = prom.Counter(
            "picoflow_compactions",
            "Compactions of a memory namespace, by outcome.",
            ["outcome"],
            **kwargs,
        )
        self.conflicts = prom.Counter(
            "picoflow_session_conflicts",
            "Saves refused by the revision check (another writer saved first).",
            **kwargs,
        )
        self.store_errors = prom.Counter(
            "picoflow_store_errors",
            "Store operations that failed, by operation.",
            ["operation"],
            **kwargs,
        )

    def turn(self, flow: str, outcome: str, seconds: float) -> None:
        """One turn ended."""
        self.turns.labels(flow, outcome).inc()
        self.turn_seconds.labels(flow).observe(seconds)

    def model_call(
        self, model: str, outcome: str, seconds: float, input_tokens: int, output_tokens: int
    ) -> None:
        """One model call ended."""
        self.model_seconds.labels(model, outcome).observe(seconds)
        if input_tokens:
            self.tokens.labels(model, "input").inc(input_tokens)
        if output_tokens:
            self.tokens.labels(model, "output").inc(output_tokens)

    def operation(self, name: str, outcome: str, attributes: dict[str, Any]) -> None:
        """A tool call, compaction or store operation ended."""
        if name == "tool":
            self.tool_calls.labels(str(attributes.get("tool", "")), outcome).inc()
        elif name == "compaction":
            self.compactions.labels(outcome).inc()
        elif outcome == "conflict":
            self.conflicts.inc()
        elif outcome != "ok":
            self.store_errors.labels(name).inc()

    def exposition(self) -> tuple[bytes, str]:
        """The body and content type of a `/metrics` reply."""
        prom = self._prom
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
            return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST


def metrics_for_app() -> PrometheusMetrics:
    """The metrics of a new app: its own registry, or the process's one in multiprocess mode.

    Multiprocess mode writes through the global registry, where a family can be created only
    once per process, so every app of the process shares one instance there.
    """
    global _shared
    try:
        import prometheus_client  # noqa: F401
    except ImportError as exc:
        raise ImportError(MISSING_CLIENT) from exc
    if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
        return PrometheusMetrics()
    if _shared is None:
        _shared = PrometheusMetrics()
    return _shared
