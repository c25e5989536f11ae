"""PicoFlow documents as plain JSON, whatever exported them.

A document read from MongoDB with PyMongo carries `datetime` and `ObjectId` values; one written
by `mongoexport` or copied from Compass carries the same as extended JSON (`{"$date": ...}`,
`{"$oid": ...}`, `{"$numberLong": ...}`). Both become what PicoFlow itself wrote: ISO 8601 UTC
strings with milliseconds and a `Z`, plain strings and numbers.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

__all__ = ["plain", "iso_time"]

_NUMBERS: dict[str, type] = {"$numberLong": int, "$numberInt": int, "$numberDouble": float}


def plain(value: Any) -> Any:
    """`value` with every BSON type and extended-JSON wrapper replaced by plain JSON.

    >>> plain({"saveOn": {"$date": "2026-03-22T19:04:36.096Z"}, "_id": {"$oid": "69c0"}})
    {'saveOn': '2026-03-22T19:04:36.096Z', '_id': '69c0'}
    """
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "$date":
                return iso_time(inner)
            if key == "$oid":
                return str(inner)
            if key in _NUMBERS:
                number = _NUMBERS[key](inner)
                return number if not isinstance(number, float) or math.isfinite(number) else None
            if key == "$numberDecimal":
                return float(inner)
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, datetime):
        return iso_time(value)
    if type(value).__name__ in ("ObjectId", "Decimal128", "UUID"):
        return str(value)
    return value


def iso_time(value: Any) -> Any:
    """A timestamp in picoflow's stored form; a value that is no timestamp is returned as is.

    Accepts an ISO string, epoch milliseconds, `{"$numberLong": ms}` or a `datetime` (naive
    ones are UTC, as PyMongo returns them).
    """
    if isinstance(value, dict) and "$numberLong" in value:
        value = int(value["$numberLong"])
    moment: datetime
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        moment = datetime.fromtimestamp(value / 1000, UTC)
    elif isinstance(value, str):
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
    else:
        return value
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
