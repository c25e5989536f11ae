"""Session age (U6): PicoFlow's `SESSION_EXPIRATION`, `isSessionCurrent`, `sessionIdleMs`.

`FlowEngine(session_ttl=...)` decides how long an idle session lives; when it is not given,
the `SESSION_EXPIRATION` environment variable (seconds, as in PicoFlow) does. The two helpers
read a stored document, for `Flow.migrate_session` policies such as "start over after 30
minutes of silence":

    >>> doc = {"run_status": "running", "schema_version": 1, "expires_at": None,
    ...        "updated_at": "2026-01-01T00:00:00.000Z"}
    >>> from datetime import UTC, datetime
    >>> session_idle_ms(doc, now=datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC))
    30000
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from picoflow.errors import FlowDefinitionError
from picoflow.session import SCHEMA_VERSION, is_expired

__all__ = ["ttl_from_environment", "is_session_current", "session_idle_ms", "ENV_NAME"]

ENV_NAME = "SESSION_EXPIRATION"


def ttl_from_environment() -> timedelta | None:
    """`SESSION_EXPIRATION` as a TTL; None when it is unset or empty.

    Raises:
        FlowDefinitionError: the variable is set to something that is not seconds > 0.
    """
    raw = os.environ.get(ENV_NAME, "").strip()
    if not raw:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = -1.0
    if not seconds > 0 or seconds == float("inf"):
        raise FlowDefinitionError(
            f"{ENV_NAME}={raw!r} is not a number of seconds > 0. Set it to how long an idle "
            "session lives (e.g. 50000), or unset it; FlowEngine(session_ttl=...) overrides it."
        )
    return timedelta(seconds=seconds)


def _parse(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def is_session_current(doc: dict[str, Any], *, now: datetime | None = None) -> bool:
    """Whether a stored session can be continued as it is (PicoFlow's `isSessionCurrent`).

    True when it is running, was written with this picoflow's schema version and has not
    passed its `expires_at`.
    """
    if doc.get("run_status") != "running" or doc.get("schema_version") != SCHEMA_VERSION:
        return False
    return not is_expired(doc, now or datetime.now(UTC))


def session_idle_ms(doc: dict[str, Any], *, now: datetime | None = None) -> int:
    """Milliseconds since the session was last saved (PicoFlow's `sessionIdleMs`).

    Raises:
        ValueError: the document has no `updated_at` ISO time.
    """
    stamp = doc.get("updated_at")
    if not isinstance(stamp, str):
        raise ValueError(
            f"session_idle_ms() needs a session document with an 'updated_at' ISO time, got "
            f"{stamp!r}. Pass the document the store returned (or migrate_session received)."
        )
    elapsed = (now or datetime.now(UTC)) - _parse(stamp)
    return max(0, int(elapsed.total_seconds() * 1000))
