"""What a failed turn may change in its stored session: its `error` array, by one revision (U5).

A failed turn saves nothing else (P3); its error is written with the failure, as a revision of
its own. Tests of P3 compare the session before and after without those two keys.
"""

from __future__ import annotations

from typing import Any

WRITTEN_BY_A_FAILURE = ("error", "revision")


def apart_from_error(doc: dict[str, Any] | None) -> dict[str, Any] | None:
    """The document without what writing a failed turn's error changes (U5, P3)."""
    if doc is None:
        return None
    return {key: value for key, value in doc.items() if key not in WRITTEN_BY_A_FAILURE}
