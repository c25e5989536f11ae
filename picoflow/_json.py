"""The S5 rule: state and context hold JSON, checked when saved, not at the end of the turn."""

from __future__ import annotations

import math
from datetime import date, datetime, time
from typing import Any

from .stores._limits import check_value

__all__ = ["to_json"]

# A step's state sits 4 levels deep in the session document (document > steps > step > state).
STATE_LEVEL = 4


def to_json(value: Any, where: str = "value", level: int = STATE_LEVEL) -> Any:
    """Return `value` as plain JSON, or raise naming the offending path.

    `datetime`, `date` and `time` become ISO strings (they read back as strings, S5); tuples
    become lists. Everything else that JSON cannot hold is refused *now* (`TypeError`), and so
    is what no store keeps (H7, `DocumentLimitError`: integers beyond 64 bits, lone surrogates,
    nesting beyond MongoDB's 100 levels counted from the document, `level` levels above), so
    the mistake points at the `save_state` call that made it instead of a failed save at the
    end of the turn, after the model was told "saved".

    >>> to_json({"at": date(2026, 7, 1), "n": (1, 2)})
    {'at': '2026-07-01', 'n': [1, 2]}
    """
    clean = _to_json(value, where)
    check_value(clean, where, level)
    return clean


def _to_json(value: Any, where: str) -> Any:
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise TypeError(_refusal(where, value, "NaN and infinity are not JSON"))
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, dict):
        return {_key(k, where): _to_json(v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_to_json(v, f"{where}[{i}]") for i, v in enumerate(value)]
    raise TypeError(_refusal(where, value, f"a {type(value).__name__} is not JSON"))


def _key(key: Any, where: str) -> str:
    if isinstance(key, str):
        return key
    raise TypeError(_refusal(where, key, f"keys must be strings, not {type(key).__name__}"))


def _refusal(where: str, value: Any, why: str) -> str:
    return (
        f"Cannot save {where} = {value!r}: {why}. State and context must be JSON "
        "(dict, list, str, int, finite float, bool, None; datetimes are stored as ISO strings). "
        "Convert the value first, e.g. with model.model_dump(mode='json')."
    )
