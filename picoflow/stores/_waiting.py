"""What `Store.waiting()` returns: the sessions where a person is expected (K7).

A session waits when one of its approvals is `pending` or an operator has it (`operator` is
not null). Stores pre-select such documents with their own query and pass each through
`summary`, so all of them answer with the same small dicts, without messages.
"""

from __future__ import annotations

from typing import Any

from picoflow.stores.base import JSONDict

__all__ = ["summary", "check_limit", "MAX_WAITING"]

MAX_WAITING = 1000  # the most sessions one call lists


def summary(doc: JSONDict) -> JSONDict | None:
    """The waiting part of a session document, or None if nobody is expected there."""
    approvals = [
        {k: v for k, v in a.items() if k != "held"}
        for a in doc.get("approvals") or []
        if isinstance(a, dict) and a.get("status") == "pending"
    ]
    operator: Any = doc.get("operator")
    if not approvals and operator is None:
        return None
    return {
        "id": doc.get("id"),
        "flow": doc.get("flow"),
        "owner": doc.get("owner"),
        "current_step": doc.get("current_step"),
        "updated_at": doc.get("updated_at"),
        "approvals": approvals,
        "operator": operator,
    }


def check_limit(limit: Any) -> int:
    """The limit as given, if it is a whole number from 1 to MAX_WAITING.

    Raises:
        ValueError: any other value.
    """
    if isinstance(limit, int) and not isinstance(limit, bool) and 1 <= limit <= MAX_WAITING:
        return limit
    raise ValueError(
        f"waiting(limit=...) takes a whole number from 1 to {MAX_WAITING}, got {limit!r}."
    )
