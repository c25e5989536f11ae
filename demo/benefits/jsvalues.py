"""The three JavaScript value habits PicoFlow's benefits code relies on, written once.

PicoFlow computes enrollment ids from ``JSON.stringify`` output, rounds money with
``Math.round((v + Number.EPSILON) * 100) / 100`` and prints it with ``toLocaleString('en-US')``
or ``toFixed(2)``. Python's defaults differ in each (``json.dumps`` writes ``10.0`` where JS
writes ``10``; ``round`` rounds half to even; ``format`` rounds the shortest decimal, not the
binary value), so a port that used them would give other ids and other cents.
"""

from __future__ import annotations

import json
import math
import sys
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

EPSILON = sys.float_info.epsilon
"""JavaScript's ``Number.EPSILON``."""


def round2(value: float) -> float:
    """``Math.round((value + Number.EPSILON) * 100) / 100``: 1.005 is 1.01, 2.675 is 2.68."""
    scaled = (value + EPSILON) * 100
    whole = math.floor(scaled)
    return (whole + 1 if scaled - whole >= 0.5 else whole) / 100  # Math.round: ties go up


def js_number(value: float) -> str:
    """A number as ``String(value)`` writes it: ``10`` for 10.0, ``7.5``, ``3.12``."""
    if isinstance(value, bool):
        raise TypeError("js_number() takes a number, not a bool")
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e21:
        return str(int(value))
    return repr(value)


def to_fixed2(value: float) -> str:
    """``value.toFixed(2)``: the exact binary value rounded half up ("1234.50")."""
    return str(Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def money(value: float) -> str:
    """PicoFlow's presenter money: ``$`` + en-US grouping, two decimals ("$1,080.00")."""
    exact = Decimal(value).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"${exact:,.2f}"


def js_stringify(value: Any) -> str:
    """``JSON.stringify(value)``: compact, keys in insertion order, numbers as JS writes them."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return js_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        fields = (f"{js_stringify(str(k))}:{js_stringify(v)}" for k, v in value.items())
        return "{" + ",".join(fields) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(js_stringify(item) for item in value) + "]"
    raise TypeError(f"js_stringify() takes JSON values, got {type(value).__name__}")
