"""P2: the JSON codec of MemoryStore and SQLiteStore writes exactly what a full encode writes.

The codec reuses the text of messages it encoded in an earlier save of the same session. That
is only an optimisation: every save must store the very text `_checks.encode` makes of the
whole document, whatever the document and whatever was saved before.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from picoflow.stores import _checks
from picoflow.stores._codec import JSONCodec
from picoflow.stores.base import SavedMessages

leaves = st.none() | st.booleans() | st.integers() | st.text(max_size=3)
leaves |= st.floats(allow_nan=False, allow_infinity=False)
values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=6,
)
messages = st.lists(st.dictionaries(st.sampled_from(["type", "data"]), values), max_size=4)
# `messages` anywhere among the entry's keys: the engine writes it first, a caller need not.
entries = st.builds(
    lambda before, listed, after: {**before, "messages": listed, **after},
    st.dictionaries(st.sampled_from(["summary", "archived"]), values, max_size=2),
    messages,
    st.dictionaries(st.sampled_from(["dropped_facts", "summary_usage"]), values, max_size=2),
)
# Keys the codec never splices itself (anything json coerces: ints, bools) stay json's business.
other_keys = st.text(max_size=3).filter(lambda k: k != "memory") | st.integers() | st.booleans()
documents = st.builds(
    lambda before, memory, after: {**before, "memory": memory, **after},
    st.dictionaries(other_keys, values, max_size=3),
    st.dictionaries(st.text(min_size=1, max_size=3), entries, max_size=3),
    st.dictionaries(other_keys, values, max_size=3),
)


@given(documents)
def test_p2_codec_text_is_exactly_the_full_encoding(doc: dict[Any, Any]) -> None:
    """P2: key order, non-string keys and every value come out as json writes them."""
    assert JSONCodec().text(doc, "s-1") == _checks.encode(doc, "s-1")


@given(documents)
def test_p2_codec_parts_decode_to_the_document(doc: dict[Any, Any]) -> None:
    """P2: MemoryStore's form (skeleton plus message texts) holds the same document."""
    skeleton, texts = JSONCodec().parts(doc, "s-1")
    decoded = json.loads(skeleton)
    for namespace, items in texts.items():
        decoded["memory"][namespace]["messages"] = [json.loads(text) for text in items]
    assert decoded == json.loads(_checks.encode(doc, "s-1"))


@given(st.lists(st.tuples(messages, st.booleans(), st.integers(0, 3)), min_size=1, max_size=6))
def test_p2_successive_saves_reuse_only_what_is_unchanged(
    turns: list[tuple[list[dict[str, Any]], bool, int]],
) -> None:
    """P2: a history that grows, is cut, or is handed over as a plain list with a message
    replaced by an edited copy is stored exactly as a full encode of that save would store it."""
    codec = JSONCodec()
    history: list[dict[str, Any]] = []
    for added, saved_list, cut in turns:
        history = history[cut:] + added
        if history and not saved_list:
            history[0] = {**history[0], "edited": True}  # a caller's copy, edited
        listed = SavedMessages(history) if saved_list else list(history)
        doc = {"id": "s-1", "memory": {"Step": {"messages": listed, "summary": None}}}
        assert codec.text(doc, "s-1") == _checks.encode(doc, "s-1")


def test_p2_codec_sees_an_edit_in_place_of_a_plain_list() -> None:
    """P2: reuse is for SavedMessages only; a plain list edited in place is encoded again."""
    codec = JSONCodec()
    message = {"type": "human", "data": {"content": "two nights"}}
    doc = {"id": "s-1", "memory": {"Step": {"messages": [message]}}}
    codec.text(doc, "s-1")
    message["data"]["content"] = "three nights"
    assert "three nights" in codec.text(doc, "s-1")


def test_p2_codec_refuses_non_json_with_the_store_message() -> None:
    """P2: a value JSON cannot hold fails in a message exactly as in the rest of a document."""
    doc = {"id": "s-1", "memory": {"Step": {"messages": [{"data": {1, 2}}]}}}
    with pytest.raises(TypeError, match="Session 's-1' is not plain JSON: Object of type set"):
        JSONCodec().text(doc, "s-1")


def test_p2_codec_remembers_at_most_its_capacity_of_sessions() -> None:
    """P2: a long-running SQLite server keeps message texts of a bounded number of sessions."""
    codec = JSONCodec(capacity=2)
    for number in range(5):
        session_id = f"s-{number}"
        saved = SavedMessages([{"type": "human", "data": {"content": str(number)}}])
        doc = {"id": session_id, "memory": {"Step": {"messages": saved}}}
        assert codec.text(doc, session_id) == _checks.encode(doc, session_id)
    assert list(codec._encodings._sessions) == ["s-3", "s-4"]
