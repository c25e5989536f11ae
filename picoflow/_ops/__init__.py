"""Operations: traces, metrics and spending limits around a turn (O1-O3).

The engine holds one `Telemetry`; the turn code reports to it at a handful of points (the
turn, each model call, each tool call, compaction, store load and save). It forwards to
OpenTelemetry when that is installed and a tracer provider is set, and to Prometheus metrics
when an app asked for them; with neither, every report is a shared no-op.
"""

from picoflow._ops._budgets import Budgets, BudgetUsage
from picoflow._ops._telemetry import NULL_RECORD, CallRecord, Telemetry

__all__ = ["Budgets", "BudgetUsage", "CallRecord", "NULL_RECORD", "Telemetry"]
