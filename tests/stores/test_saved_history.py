"""P2/P3: a save costs what the turn added, and what it stores is exactly the whole history.

The engine knows which messages of a namespace it saved before without a pass over the history
(`LiveHistory` notes the lowest position anything but an append touched), and the checker and
the stores know which message dicts they encoded before from the `SavedMessages` list itself
(it names the list it grew from). Both are only optimisations: whatever a flow does to its
history between saves, every save must store what a full serialisation of it stores.
"""

from __future__ import annotations

import asyncio
import copy
import json
import pickle
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    message_to_dict,
)

from picoflow._internal.live_history import LiveHistory, unchanged_since_sync
from picoflow.memory import Memory, Namespace
from picoflow.session import _copy_namespace, _dump_messages
from picoflow.stores import MemoryStore, SQLiteStore
from picoflow.stores._limits import DocumentChecker
from picoflow.stores.base import MessageEncodings, SavedMessages, unchanged

STEPS = [1, 2, -1]
# One edit of a live history, as a flow (or compaction, or `Memory.erase`) may make it.
edits = st.one_of(
    st.tuples(st.just("append"), st.integers(1, 3)),
    st.tuples(st.just("set"), st.integers(-6, 6)),
    st.tuples(st.just("set_slot"), st.booleans()),
    st.tuples(st.just("alias"), st.integers(0, 6), st.integers(0, 6)),
    st.tuples(st.just("set_slice"), st.integers(-6, 6), st.integers(-6, 6), st.integers(0, 2)),
    st.tuples(st.just("del"), st.integers(-6, 6)),
    st.tuples(
        st.just("del_slice"), st.integers(-6, 6), st.integers(-6, 6), st.sampled_from([1, 2, -1])
    ),
    st.tuples(st.just("insert"), st.integers(-6, 8)),
    st.tuples(st.just("pop"), st.integers(-6, 6)),
    st.tuples(st.just("remove"), st.integers(0, 6)),
    st.tuples(st.just("reverse")),
    st.tuples(st.just("sort")),
    st.tuples(st.just("imul"), st.integers(0, 2)),
    st.tuples(st.just("iadd"), st.integers(0, 2)),
    st.tuples(st.just("plain")),
    st.tuples(st.just("erase")),
    st.tuples(st.just("cut"), st.integers(1, 4)),
)
# Between saves: a few edits, then whether the turn's save reached the store.
turns = st.lists(st.tuples(st.lists(edits, max_size=4), st.booleans()), min_size=1, max_size=7)


class _Counter:
    def __init__(self) -> None:
        self.number = 0

    def message(self) -> BaseMessage:
        self.number += 1
        if self.number % 2:
            return HumanMessage(f"user {self.number}")
        return AIMessage(f"reply {self.number}")


def _edit(record: Namespace, edit: tuple[Any, ...], new: _Counter) -> None:  # noqa: C901
    """Apply one edit; edits that make no sense for the current list are skipped."""
    history = record.messages
    kind, *args = edit
    size = len(history)
    if kind == "append":
        history.extend(new.message() for _ in range(args[0]))
    elif kind == "set" and -size <= args[0] < size:
        history[args[0]] = new.message()
    elif kind == "set_slot" and size:
        history[0] = SystemMessage(f"prompt {new.number}") if args[0] else history[0]
    elif kind == "alias" and args[0] < size and args[1] < size:
        history[args[0]] = history[args[1]]  # the same object at two positions
    elif kind == "set_slice":
        history[args[0] : args[1]] = [new.message() for _ in range(args[2])]
    elif kind == "del" and -size <= args[0] < size:
        del history[args[0]]
    elif kind == "del_slice":
        del history[args[0] : args[1] : args[2]]
    elif kind == "insert":
        history.insert(args[0], new.message())
    elif kind == "pop" and -size <= args[0] < size:
        history.pop(args[0])
    elif kind == "remove" and args[0] < size:
        history.remove(history[args[0]])
    elif kind == "reverse":
        history.reverse()
    elif kind == "sort":
        history.sort(key=lambda message: str(message.content))
    elif kind == "imul":
        history *= args[0]
    elif kind == "iadd":
        history += [new.message() for _ in range(args[0])]
    elif kind == "plain":
        record.messages = list(history)  # a flow that assigned a list of its own
    elif kind == "erase" and size:  # Memory.erase keeps the system slot, so it needs one
        memory = Memory()
        memory.namespaces()["ns"] = record
        memory.erase("ns")
    elif kind == "cut" and size > args[0]:
        del history[1 : args[0]]  # what compaction does


def _full(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    return [message_to_dict(message) for message in messages]


def _doc(session_id: str, revision: int, saved: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "id": session_id,
        "revision": revision,
        "flow": "F",
        "expires_at": None,
        "memory": {"ns": {"messages": saved, "summary": None}},
    }


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns)
def test_p2_every_save_stores_exactly_the_whole_history(
    plan: list[tuple[list[tuple[Any, ...]], bool]],
) -> None:
    """P2/P3: random edits between saves (appends, replacements, deletes, inserts, sorts, an
    erase, compaction's cut, a plain list assigned, a save that never reached the store): the
    dump, the checker's size and what MemoryStore and SQLiteStore give back after each save
    are those of a full serialisation; what the live list claims is kept never exceeds what
    is."""
    asyncio.run(_run_plan(plan))


async def _run_plan(plan: list[tuple[list[tuple[Any, ...]], bool]]) -> None:
    new = _Counter()
    record = Namespace(messages=[SystemMessage("prompt"), new.message(), new.message()])
    with tempfile.TemporaryDirectory() as tmp:
        stores = [MemoryStore(), SQLiteStore(Path(tmp) / "s.db")]
        checker = DocumentChecker()
        revisions = [0, 0]
        first = _dump_messages(record)
        for store in stores:
            await store.create(_doc("s-1", 0, first))
        for edit_list, reaches_store in plan:
            record = _copy_namespace(record)  # as the engine's next turn takes a cached one
            for edit in edit_list:
                _edit(record, edit, new)
            claimed = unchanged_since_sync(record.messages, record.synced[0])
            if claimed is not None:
                assert claimed <= unchanged(list(record.messages), record.synced[0])[0]
            saved = _dump_messages(record)
            expected = _full(record.messages)
            assert list(saved) == expected
            doc = _doc("s-1", 0, saved)
            assert checker.check(doc, "s-1") == DocumentChecker().check(
                _doc("s-1", 0, expected), "s-1"
            )
            if not reaches_store:
                continue
            for index, store in enumerate(stores):
                revisions[index] = await store.save(doc, revisions[index])
                loaded = await store.load("s-1")
                assert loaded is not None
                assert loaded["memory"]["ns"]["messages"] == json.loads(json.dumps(expected))
        for store in stores:
            await store.aclose()


def test_p2_saved_messages_are_read_only_and_copies_are_plain_lists() -> None:
    """P2: the lists a store may reuse cannot change under it; a copy carries no promise."""
    saved = SavedMessages([{"type": "human", "data": {"content": "hi"}}])
    attempts = [
        lambda: saved.append({}),
        lambda: saved.extend([{}]),
        lambda: saved.insert(0, {}),
        lambda: saved.pop(),
        lambda: saved.remove(saved[0]),
        lambda: saved.clear(),
        lambda: saved.sort(),
        lambda: saved.reverse(),
        lambda: saved.__setitem__(0, {}),
        lambda: saved.__delitem__(0),
        lambda: saved.__iadd__([{}]),
        lambda: saved.__imul__(2),
    ]
    for attempt in attempts:
        with pytest.raises(TypeError, match="SavedMessages is read-only.*Copy it with list"):
            attempt()
    assert saved == [{"type": "human", "data": {"content": "hi"}}]
    for twin in (copy.copy(saved), copy.deepcopy(saved), pickle.loads(pickle.dumps(saved))):
        assert type(twin) is list
        assert twin == saved


def test_p2_a_store_reuses_a_grown_list_without_comparing_it() -> None:
    """P2: a list that names the one it grew from is reused as it says, in one step; a list
    that names another base is compared item by item."""
    encoded: list[Any] = []

    def encode(message: Any) -> Any:
        encoded.append(message)
        return message["n"]

    items = [{"n": n} for n in range(6)]
    first = SavedMessages(items[:4])
    encodings: MessageEncodings[Any] = MessageEncodings()
    assert encodings.encode("s", "ns", first, encode) == [0, 1, 2, 3]
    grown = SavedMessages([*items[:4], *items[4:]], base=first, kept=(4, True))
    encoded.clear()
    assert encodings.encode("s", "ns", grown, encode) == [0, 1, 2, 3, 4, 5]
    assert encoded == items[4:]
    stranger = SavedMessages([*items[:2], {"n": 9}], base=SavedMessages(items), kept=(3, True))
    encoded.clear()
    assert encodings.encode("s", "ns", stranger, encode) == [0, 1, 9]
    assert encoded == [{"n": 9}]  # compared with `grown` itself: items 0 and 1 reused


def test_p2_saved_lists_never_hold_a_chain_of_earlier_saves() -> None:
    """P2: each save's list names only the save before it, so a long session keeps one
    extra list per namespace, not one per turn."""
    record = Namespace(messages=[SystemMessage("p")])
    saves = []
    for number in range(4):
        record.messages.append(HumanMessage(str(number)))
        saves.append(_dump_messages(record))
    assert [save._base for save in saves] == [None, None, None, saves[2]]


def test_p2_a_live_history_knows_a_plain_append_keeps_everything() -> None:
    """P2: after a save, appends alone leave the whole saved prefix known to be unchanged, a
    new prompt in the system slot on its own does too, and an edit lowers it to its position."""
    record = Namespace(messages=[SystemMessage("p"), HumanMessage("a"), AIMessage("b")])
    _dump_messages(record)
    history = record.messages
    assert isinstance(history, LiveHistory)
    history.append(HumanMessage("c"))
    history[0] = SystemMessage("new prompt")
    assert unchanged_since_sync(history, record.synced[0]) == 3
    history[-2] = AIMessage("b, edited")
    assert unchanged_since_sync(history, record.synced[0]) == 2
    _dump_messages(record)
    assert unchanged_since_sync(history, record.synced[0]) == 4
