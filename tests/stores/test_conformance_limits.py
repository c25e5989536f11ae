"""The conformance suite, limits part (H7, S5): every store accepts and refuses the same documents.

Each test runs once per store in `conftest.STORE_FACTORIES`. A refused document raises the same
error type with the same message on every store, and nothing is written: a flow tested on
MemoryStore meets no document in production that MongoStore refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, message_to_dict
from test_conformance import new_doc

from picoflow.stores import Store
from picoflow.stores._limits import MAX_DOCUMENT_BYTES, DocumentLimitError
from picoflow.stores.base import SavedMessages

PLAIN = "Store only dicts with string keys, lists, strings, finite numbers, booleans and None."
TOO_BIG_INT = "beyond the 64 bits any store keeps. Store such numbers as strings"
SURROGATE = (
    "which is not valid Unicode. Store only valid Unicode text (decode bytes with errors='replace')"
)


def nested(levels: int) -> dict[str, Any]:
    """A dict `levels` deep: nested(1) == {}, nested(2) == {"n": {}}."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"n": value}
    return value


def state(**values: Any) -> dict[str, Any]:
    return {"ExploreStep": {"state": values, "model": None}}


REFUSED: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    (
        "int over 64 bits",
        {"steps": state(total=2**70)},
        DocumentLimitError,
        "Session 's-1' cannot be stored: steps.ExploreStep.state.total holds the integer "
        f"1180591620717411303424, {TOO_BIG_INT}; nothing was written.",
    ),
    (
        "2**63",
        {"context": {"n": 2**63}},
        DocumentLimitError,
        f"Session 's-1' cannot be stored: context.n holds the integer 9223372036854775808, "
        f"{TOO_BIG_INT}; nothing was written.",
    ),
    (
        "-2**63-1",
        {"context": {"n": [1, -(2**63) - 1]}},
        DocumentLimitError,
        f"Session 's-1' cannot be stored: context.n[1] holds the integer "
        f"-9223372036854775809, {TOO_BIG_INT}; nothing was written.",
    ),
    (
        "lone surrogate",
        {"steps": state(city="Z\ud800rich")},
        DocumentLimitError,
        "Session 's-1' cannot be stored: steps.ExploreStep.state.city has a lone surrogate "
        f"('\\ud800' at index 1), {SURROGATE}; nothing was written.",
    ),
    (
        "lone surrogate in a key",
        {"context": {"k\udc80": 1}},
        DocumentLimitError,
        "Session 's-1' cannot be stored: context has the key 'k\\udc80' with a lone surrogate "
        f"('\\udc80' at index 1), {SURROGATE}; nothing was written.",
    ),
    (
        "101 levels",
        {"context": nested(100)},
        DocumentLimitError,
        "Session 's-1' cannot be stored: context.n.n.n[...93 levels...].n.n.n nests deeper "
        "than the 100 levels any store keeps (MongoDB's limit). Flatten the data; nothing "
        "was written.",
    ),
    (
        "non-string key",
        {"context": {"by_id": {7: "seven"}}},
        TypeError,
        f"Session 's-1' is not plain JSON: context.by_id has the key 7 (int); keys must be "
        f"strings. {PLAIN}",
    ),
    (
        "NaN",
        {"context": {"bad": float("nan")}},
        TypeError,
        f"Session 's-1' is not plain JSON: context.bad is nan; NaN and infinity are not JSON. "
        f"{PLAIN}",
    ),
    (
        "infinity",
        {"context": {"bad": float("-inf")}},
        TypeError,
        f"Session 's-1' is not plain JSON: context.bad is -inf; NaN and infinity are not "
        f"JSON. {PLAIN}",
    ),
    (
        "set",
        {"context": {"bad": {1, 2}}},
        TypeError,
        f"Session 's-1' is not plain JSON: context.bad is a set, which is not JSON. {PLAIN}",
    ),
]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
async def test_h7_every_store_refuses_the_same_documents_with_the_same_error(
    store: Store, fields: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        await store.create(new_doc(**fields))
    assert type(caught.value) is error
    assert str(caught.value) == message
    assert await store.load("s-1") is None

    await store.create(new_doc())
    with pytest.raises(error) as caught:
        await store.save(new_doc(**fields), 0)
    assert str(caught.value) == message
    assert await store.load("s-1") == new_doc()


ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("64-bit extremes", {"context": {"max": 2**63 - 1, "min": -(2**63), "mid": 2**31}}),
    ("100 levels", {"context": nested(99)}),
    ("valid Unicode", {"context": {"text": "Zürich 🏨 東京 \U0010ffff"}}),
    ("keys MongoDB escapes", {"context": {"$price": 1, "a.b": 2, "50%": 3, "nul\x00": 4}}),
]


@pytest.mark.parametrize("fields", [case[1] for case in ACCEPTED], ids=[c[0] for c in ACCEPTED])
async def test_h7_every_store_keeps_documents_at_the_limits(
    store: Store, fields: dict[str, Any]
) -> None:
    await store.create(new_doc(**fields))
    assert await store.load("s-1") == new_doc(**fields)
    assert await store.save(new_doc(**fields), 0) == 1
    assert await store.load("s-1") == new_doc(**fields, revision=1)


def padded(size: int) -> dict[str, Any]:
    """A document whose size, as every store counts it, is exactly `size` bytes."""
    base = new_doc(context={"pad": ""})
    from picoflow.stores._limits import DocumentChecker

    measured = DocumentChecker().check(base, "s-1")
    return new_doc(context={"pad": "x" * (size - measured)})


async def test_h7_every_store_keeps_a_document_of_exactly_the_size_limit(store: Store) -> None:
    doc = padded(MAX_DOCUMENT_BYTES)
    await store.create(doc)
    stored = await store.load("s-1")
    assert stored is not None and stored["context"]["pad"] == doc["context"]["pad"]


async def test_h7_every_store_refuses_a_document_one_byte_over_the_size_limit(
    store: Store,
) -> None:
    with pytest.raises(DocumentLimitError) as caught:
        await store.create(padded(MAX_DOCUMENT_BYTES + 1))
    assert str(caught.value) == (
        "Session 's-1' is 15,728,641 bytes (15.0 MB), over the limit of 15,728,640 bytes "
        "(15 MB) every store keeps (MongoDB refuses documents over 16 MB). Its largest part "
        "is the field 'context' (15.0 MB): keep large data out of it (store a reference to it "
        "instead). Nothing was written."
    )
    assert await store.load("s-1") is None


async def test_h7_a_message_breaking_a_limit_is_named_by_its_position(store: Store) -> None:
    messages = SavedMessages(
        [message_to_dict(HumanMessage("hi")), message_to_dict(AIMessage("n", id="\udcff"))]
    )
    doc = new_doc(memory={"explore": {"messages": messages, "summary": None}})
    with pytest.raises(DocumentLimitError) as caught:
        await store.create(doc)
    assert str(caught.value) == (
        "Session 's-1' cannot be stored: memory.explore.messages[1].data.id has a lone "
        f"surrogate ('\\udcff' at index 0), {SURROGATE}; nothing was written."
    )


async def test_h7_every_store_refuses_the_same_archived_messages(store: Store) -> None:
    message = message_to_dict(HumanMessage("budget", additional_kwargs={"n": 2**64}))
    with pytest.raises(DocumentLimitError) as caught:
        await store.archive("s-1", "explore", [{"position": 1, "message": message}])
    assert str(caught.value) == (
        "A message archived from session 's-1', namespace 'explore' cannot be stored: "
        "message.data.additional_kwargs.n holds the integer 18446744073709551616, "
        f"{TOO_BIG_INT}; nothing was archived."
    )
    assert await store.search_archive("s-1", "explore", "budget") == []


def human_messages(count: int, size: int) -> list[dict[str, Any]]:
    return [{"type": "human", "data": {"content": "x" * size}} for _ in range(count)]


async def test_h7_an_oversized_session_names_its_largest_namespace_and_writes_nothing(
    store: Store,
) -> None:
    small = {"explore": {"messages": human_messages(1, 10), "summary": None}}
    await store.create(new_doc(memory=small))
    memory = {
        "explore": {"messages": human_messages(15, 1_000_000), "summary": None},
        "present": {"messages": human_messages(2, 500_000), "summary": None},
    }

    with pytest.raises(DocumentLimitError) as caught:
        await store.save(new_doc(memory=memory), 0)

    assert str(caught.value) == (
        "Session 's-1' is 16,001,359 bytes (15.3 MB), over the limit of 15,728,640 bytes "
        "(15 MB) every store keeps (MongoDB refuses documents over 16 MB). Its largest part is "
        "memory namespace 'explore' (14.3 MB): compact it "
        "(get_memory().enable_summary('explore')) or erase what the flow no longer needs. "
        "Nothing was written."
    )
    assert await store.load("s-1") == new_doc(memory=small)


async def test_h7_an_oversized_step_state_is_named(store: Store) -> None:
    steps = {"PresentStep": {"state": {"offers": ["y" * 16_000_000]}, "model": None}}

    with pytest.raises(DocumentLimitError) as caught:
        await store.create(new_doc(steps=steps))

    assert str(caught.value) == (
        "Session 's-1' is 16,000,503 bytes (15.3 MB), over the limit of 15,728,640 bytes "
        "(15 MB) every store keeps (MongoDB refuses documents over 16 MB). Its largest part is "
        "the state of step 'PresentStep' (15.3 MB): keep large data out of step state (store a "
        "reference to it instead). Nothing was written."
    )


async def test_h7_an_archived_message_over_the_limit_is_refused(store: Store) -> None:
    huge = {"type": "human", "data": {"content": "x" * 8_000_000}}

    with pytest.raises(DocumentLimitError) as caught:
        await store.archive("s-1", "explore", [{"position": 1, "message": huge}])

    assert str(caught.value) == (
        "A message archived from session 's-1', namespace 'explore' is 15.3 MB with its search "
        "text, over the 15 MB limit every store keeps. Keep large data out of messages (store "
        "a reference instead); nothing was archived."
    )
    assert await store.search_archive("s-1", "explore", "") == []
