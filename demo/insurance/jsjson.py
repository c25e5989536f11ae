"""JavaScript's number, JSON and rounding rules, so quote ids and premiums match PicoFlow's.

PicoFlow's quote id is a SHA-256 over ``JSON.stringify(application)``: one byte of difference
(a key in another order, ``8000.0`` for JS's ``8000``, ``1e-07`` for ``1e-7``, an escaped
``é``) is another id. Its premiums are rounded with ``Math.round((v + Number.EPSILON) * 100)
/ 100``, which rounds ties up, not to even as Python's ``round`` does. These functions are the
ECMAScript algorithms written out in Python.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import UTC, datetime
from typing import Any

EPSILON = sys.float_info.epsilon
"""``Number.EPSILON``: 2**-52."""

_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def js_round(value: float) -> float:
    """``Math.round``: the nearest integer, a tie toward +infinity (``js_round(2.5) == 3``,
    ``js_round(-2.5) == -2``), unlike Python's round-half-even."""
    floor = math.floor(value)
    return float(floor + 1 if value - floor >= 0.5 else floor)


def round2(value: float) -> float:
    """PicoFlow's money rounding, ``Math.round((v + Number.EPSILON) * 100) / 100``.

    ``round2(1.005) == 1.01`` (Python's ``round(1.005, 2)`` is 1.0); an integral result is an
    ``int``, as JSON.stringify would print it.
    """
    rounded = js_round((value + EPSILON) * 100) / 100
    return int(rounded) if rounded.is_integer() else rounded


def js_value(value: Any) -> Any:
    """`value` with every integral float as an int (JS has one number type: ``8000.0`` is
    ``8000``), recursively through lists and dicts; key order is kept."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: js_value(item) for key, item in value.items()}
    if isinstance(value, list):
        return [js_value(item) for item in value]
    return value


def js_number(value: float) -> str:
    """ECMAScript ``Number::toString``: ``1e-7`` for 1e-07, ``100000000000000000000`` for 1e20,
    ``1e+21`` for 1e21, ``8000`` for 8000.0; non-finite numbers are ``null`` in JSON."""
    if isinstance(value, bool):
        raise TypeError("a bool is not a number here")
    if isinstance(value, int) and abs(value) < 10**21:
        return str(value)
    number = float(value)
    if not math.isfinite(number):
        return "null"
    if number == 0:
        return "0"
    sign = "-" if number < 0 else ""
    digits, point = _shortest_digits(abs(number))
    return sign + _place_point(digits, point)


def _shortest_digits(number: float) -> tuple[str, int]:
    """The shortest round-trip digits of `number` and ECMAScript's ``n``: value = 0.d × 10**n."""
    mantissa, _, exponent = repr(number).partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")  # value = int(digits) × 10**(exponent - |fraction|)
    point = len(digits) + int(exponent or 0) - len(fraction)
    return digits.rstrip("0"), point


def _place_point(digits: str, point: int) -> str:
    """Write ``0.digits × 10**point`` as ECMAScript does (Number::toString, steps 6-10)."""
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return "0." + "0" * -point + digits
    exponent = point - 1
    sign = "+" if exponent >= 0 else "-"
    head = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
    return f"{head}e{sign}{abs(exponent)}"


def stringify(value: Any) -> str:
    """``JSON.stringify(value)``: no spaces, keys in insertion order, JS number format,
    non-ASCII text as it is (only quotes, backslashes, control characters and lone surrogates
    are escaped)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(stringify(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_string(str(key))}:{stringify(item)}" for key, item in value.items())
        return "{" + ",".join(pairs) + "}"
    raise TypeError(f"JSON.stringify has no form for {type(value).__name__}: {value!r}")


def _string(text: str) -> str:
    quoted = json.dumps(text, ensure_ascii=False)
    return _LONE_SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", quoted)


def iso_string(moment: datetime) -> str:
    """``Date.prototype.toISOString``: UTC, milliseconds, ``Z`` (2026-12-07T00:00:00.000Z)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"
