"""Garbage-collector settings for a serving process: shorter pauses, less time collecting.

A served engine imports FastAPI, pydantic and LangChain: about 100,000 long-lived objects before
the first request, many of them pydantic validators that are slow to traverse. CPython's full
collection walks all of them every time, so with the default settings a full collection took
100-300 ms (every request in flight waits) and about 0.14 ms of every turn went to collecting
(`bench/http_throughput.py`; docs/benchmarks.md has the measurements). Two changes, made once
per process when the first app starts:

- `gc.freeze()` after a collection moves everything that exists at start-up out of the
  collector's sight. Those objects live as long as the process anyway; only what requests
  create later is ever traversed again.
- The first-generation threshold goes from 700 to 10,000 allocations, so objects of the turns
  in flight are mostly freed before a collection sees them, instead of being promoted to the
  older generations whose growth triggers full collections. A process that chose its own
  thresholds keeps them.
"""

from __future__ import annotations

import gc

__all__ = ["settle_heap"]

_DEFAULT_THRESHOLDS = (700, 10, 10)
YOUNG_THRESHOLD = 10_000
_settled = False


def settle_heap() -> None:
    """Freeze the start-up heap and raise the young threshold, once per process.

    Does nothing when the collector is disabled: the process manages memory itself.
    """
    global _settled
    if _settled or not gc.isenabled():
        return
    _settled = True
    gc.collect()
    gc.freeze()
    thresholds = gc.get_threshold()
    if thresholds == _DEFAULT_THRESHOLDS:
        gc.set_threshold(YOUNG_THRESHOLD, *thresholds[1:])
