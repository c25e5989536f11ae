"""The session's `log`, `error` and `debug` arrays (U5), as PicoFlow's `SessionLogger` keeps them.

Each array holds at most `MAX_LOG_ENTRIES` entries `{"at", "level", "message"}`, newest last:
`Flow.log(text, level=...)` writes to them, model-call retries are noted in `log` (level
"warning"), and the errors of failed turns go to `error`.

A failed turn saves nothing else (P3): its error is written with the failure, as a small save
of the `error` array alone (`SessionKeeper.note_failure`), so it survives a restart and a last
turn that failed. An error that cannot be written then (the store failed, another writer is
busy, a refused request) is kept here and written with the session's next save in this process.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from picoflow._internal.state import now_iso

__all__ = ["LOG_ARRAYS", "MAX_LOG_ENTRIES", "log_entry", "array_of", "write_logs", "FailedTurns"]

LOG_ARRAYS = ("log", "error", "debug")
MAX_LOG_ENTRIES = 100
LEVELS = {"debug": "debug", "info": "log", "warning": "log", "error": "error"}


def array_of(level: str) -> str:
    """The array a level is written to.

    Raises:
        ValueError: not one of debug, info, warning, error.
    """
    array = LEVELS.get(level)
    if array is None:
        raise ValueError(
            f"log level {level!r} is not one of debug, info, warning, error; 'debug' goes to "
            "the session's debug array, 'error' to error, the others to log."
        )
    return array


def log_entry(level: str, message: str) -> dict[str, Any]:
    """One entry, stamped now."""
    return {"at": now_iso(), "level": level, "message": message}


def write_logs(
    doc: Mapping[str, Any], out: dict[str, Any], added: Mapping[str, list[dict[str, Any]]]
) -> None:
    """Set each array of `out`: the stored entries of `doc`, then `added`, newest kept."""
    for array in LOG_ARRAYS:
        stored = doc.get(array)
        entries = (list(stored) if isinstance(stored, list) else []) + list(added.get(array, []))
        out[array] = entries[-MAX_LOG_ENTRIES:]


class FailedTurns:
    """Errors of failed turns not written yet, waiting for their session's next save (bounded)."""

    MAX_SESSIONS = 1000

    def __init__(self) -> None:
        self._waiting: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()

    def add(self, session_id: str, entry: dict[str, Any]) -> None:
        """Keep an error until `take`; the oldest sessions' errors go first when full."""
        entries = self._waiting.setdefault(session_id, [])
        entries.append(entry)
        del entries[:-MAX_LOG_ENTRIES]
        self._waiting.move_to_end(session_id)
        while len(self._waiting) > self.MAX_SESSIONS:
            self._waiting.popitem(last=False)

    def take(self, session_id: str) -> list[dict[str, Any]]:
        """The waiting errors of a session, removed."""
        return self._waiting.pop(session_id, [])
