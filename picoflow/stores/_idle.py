"""What `Store.idle_sessions()` takes and returns: running sessions nobody saved lately (M14).

`FlowEngine.compact_idle` walks them page by page, oldest first. A page is keyed on
`(updated_at, id)`, not an offset: compacting a session (or a turn saving it meanwhile) never
shifts the pages still to come, so no session is skipped or listed twice. Every store checks
its arguments here and answers with the same small dicts, without messages. Finished sessions
(completed, aborted) are never listed: no turn continues them, so compacting them would only
spend summaries. SQLite and MongoDB read a page from an index on `updated_at` of the running
sessions, so it costs what it lists, not what the store holds.
"""

from __future__ import annotations

from typing import Any

from picoflow.stores.base import JSONDict

__all__ = ["MAX_IDLE_PAGE", "check_idle_query", "idle_summary"]

MAX_IDLE_PAGE = 1000  # the most sessions one page lists


def idle_summary(doc: JSONDict, session_id: str) -> JSONDict:
    """The listed part of a stored session: enough to decide whether to load it at all."""
    return {
        "id": session_id,
        "flow": doc.get("flow"),
        "updated_at": doc.get("updated_at"),
        "expires_at": doc.get("expires_at"),
    }


def check_idle_query(before: Any, after: Any, limit: Any) -> tuple[str, str]:
    """Refuse arguments no store could answer; return `after` as `(updated_at, id)`.

    `after` None starts at the oldest session (`("", "")` sorts before every stamp and id).

    Raises:
        ValueError: `before` is not an ISO stamp string, `after` is not an
            `(updated_at, id)` pair of strings, or `limit` is not 1 to MAX_IDLE_PAGE.
    """
    if not isinstance(before, str) or not before:
        raise ValueError(
            f"idle_sessions(before=...) takes an ISO 8601 UTC stamp such as "
            f"'2026-01-01T00:00:00.000Z' (the format of `updated_at`), got {before!r}."
        )
    if after is None:
        after = ("", "")
    if (
        not isinstance(after, tuple)
        or len(after) != 2
        or not all(isinstance(part, str) for part in after)
    ):
        raise ValueError(
            "idle_sessions(after=...) takes the (updated_at, id) pair of the last session of "
            f"the previous page, or None for the first page, got {after!r}."
        )
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_IDLE_PAGE:
        raise ValueError(
            f"idle_sessions(limit=...) takes a whole number from 1 to {MAX_IDLE_PAGE}, "
            f"got {limit!r}."
        )
    return after
