"""H7: the size the limits check computes is the BSON size MongoDB would hold.

The check sizes common leaves inline for speed (issue 24); a shortcut that miscounted one kind
of value would let a document through on MemoryStore that MongoDB refuses, or refuse one it
keeps. Every generated plain-JSON document is sized both ways. Keys are plain identifiers here,
which `MongoStore` writes unescaped, so the BSON of the document itself is the reference.
"""

from __future__ import annotations

from typing import Any

import bson
from hypothesis import given, settings
from hypothesis import strategies as st

from picoflow.stores._limits import _size

_KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,11}", fullmatch=True)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=5),
    max_leaves=30,
)


@given(st.dictionaries(_KEYS, _VALUES, max_size=8))
@settings(max_examples=300, deadline=None)
def test_h7_a_documents_size_is_its_bson_size(doc: dict[str, Any]) -> None:
    assert _size(doc, 1) == len(bson.encode(doc))


def test_h7_ints_and_booleans_in_a_dict_are_sized_as_bson_holds_them() -> None:
    """int32, int64 and booleans, the leaves the walk sizes inline, at their boundaries."""
    doc = {
        "small": 2**31 - 1,
        "negative": -(2**31),
        "large": 2**31,
        "largest": 2**63 - 1,
        "yes": True,
        "no": False,
        "nested": {"calls": 4, "ok": True, "tokens": 2**40},
    }
    assert _size(doc, 1) == len(bson.encode(doc))
