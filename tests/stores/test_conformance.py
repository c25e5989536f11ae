"""The store conformance suite, sessions part (P2, P4): every store passes all of it.

Each test runs once per store in `conftest.STORE_FACTORIES`, through the `store` fixture. The
archive part (M9) is in `test_conformance_archive.py`.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, message_to_dict

from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.stores import Store
from picoflow.stores.base import SavedMessages


def new_doc(session_id: str = "s-1", **fields: Any) -> dict[str, Any]:
    return {
        "id": session_id,
        "schema_version": 1,
        "revision": 0,
        "flow": "HotelFlow",
        "run_status": "running",
        "created_at": "2025-01-02T03:04:05.123456+00:00",
        "updated_at": "2025-01-02T03:04:05.123456+00:00",
        # In the future: MongoDB's TTL monitor deletes documents whose expiry has passed.
        "expires_at": "2099-01-03T03:04:05+00:00",
        "context": {"config": {"tenant": "acme"}},
        "current_step": "ExploreStep",
        "sequence": ["ExploreStep"],
        "steps": {},
        "memory": {},
        "usage": {},
        "warnings": [],
        **fields,
    }


def human(position: int, text: str) -> dict[str, Any]:
    return {"position": position, "message": message_to_dict(HumanMessage(text))}


CONFLICT_1_2 = (
    "Session 's-1' was saved by another writer: expected revision 1, found 2. Nothing was "
    "written; reload the session and retry the turn."
)


# --- create / load -----------------------------------------------------------------------


async def test_p2_store_implements_the_store_protocol(store: Store) -> None:
    assert isinstance(store, Store)


async def test_p2_create_then_load_round_trips_every_json_value(store: Store) -> None:
    doc = new_doc(
        steps={
            "ExploreStep": {
                "state": {
                    "city": "Zürich 🏨 東京",
                    "quote": 'He said "hi"\n\ttab \\ backslash',
                    "nights": 3,
                    "big": 2**53 + 1,
                    "negative": -7,
                    "price": 0.1,
                    "tiny": 1e-300,
                    "ratio": -2.5,
                    "flags": [True, False, None],
                    "nested": {"a": {"b": {"c": [1, [2, [3]], {"d": "e"}]}}},
                    "empty_dict": {},
                    "empty_list": [],
                    "empty_str": "",
                    "when": "2025-06-01T12:00:00+02:00",
                    "_saveOn": "2025-01-02T03:04:05.123456+00:00",
                },
                "model": None,
            }
        }
    )
    await store.create(doc)

    assert await store.load("s-1") == doc


async def test_p2_create_stores_revision_zero(store: Store) -> None:
    await store.create(new_doc())

    loaded = await store.load("s-1")
    assert loaded is not None
    assert loaded["revision"] == 0


async def test_p2_load_of_an_unknown_id_returns_none(store: Store) -> None:
    assert await store.load("nope") is None


async def test_p2_load_returns_a_private_copy(store: Store) -> None:
    await store.create(new_doc(sequence=["ExploreStep"]))
    loaded = await store.load("s-1")
    assert loaded is not None

    loaded["sequence"].append("PresentStep")
    loaded["context"]["config"]["tenant"] = "other"
    loaded["flow"] = "Changed"

    assert await store.load("s-1") == new_doc(sequence=["ExploreStep"])


async def test_p2_create_neither_mutates_nor_shares_the_callers_doc(store: Store) -> None:
    doc = new_doc()
    original = copy.deepcopy(doc)

    await store.create(doc)
    assert doc == original
    doc["context"]["config"]["tenant"] = "other"

    assert await store.load("s-1") == original


async def test_p2_duplicate_create_raises_conflict_and_keeps_the_stored_doc(store: Store) -> None:
    await store.create(new_doc(flow="First"))
    await store.save(new_doc(flow="Saved"), 0)

    with pytest.raises(SessionConflictError) as caught:
        await store.create(new_doc(flow="Second"))

    assert str(caught.value) == (
        "Session 's-1' already exists (revision 1); create() never overwrites a session. "
        "Load it and save() instead, or create it under a new id."
    )
    assert (caught.value.session_id, caught.value.actual_revision) == ("s-1", 1)
    assert await store.load("s-1") == new_doc(flow="Saved", revision=1)


# --- save and revisions --------------------------------------------------------------------


async def test_p2_save_increments_the_revision_and_returns_it(store: Store) -> None:
    await store.create(new_doc())

    assert await store.save(new_doc(current_step="PresentStep"), 0) == 1
    assert await store.save(new_doc(current_step="CompareStep"), 1) == 2

    assert await store.load("s-1") == new_doc(current_step="CompareStep", revision=2)


async def test_p2_save_neither_mutates_nor_shares_the_callers_doc(store: Store) -> None:
    await store.create(new_doc())
    doc = new_doc(current_step="PresentStep")
    original = copy.deepcopy(doc)

    await store.save(doc, 0)
    assert doc == original  # the revision in the caller's dict stays the caller's business
    doc["sequence"].append("Mutated")

    assert await store.load("s-1") == {**original, "revision": 1}


async def test_p2_stale_revision_raises_conflict_and_writes_nothing(store: Store) -> None:
    await store.create(new_doc())
    await store.save(new_doc(current_step="PresentStep"), 0)
    await store.save(new_doc(current_step="CompareStep"), 1)

    with pytest.raises(SessionConflictError) as caught:
        await store.save(new_doc(current_step="Stale"), 1)

    assert str(caught.value) == CONFLICT_1_2
    assert caught.value.session_id == "s-1"
    assert caught.value.expected_revision == 1
    assert caught.value.actual_revision == 2
    assert repr(caught.value) == (
        "SessionConflictError(session_id='s-1', expected_revision=1, actual_revision=2)"
    )
    assert await store.load("s-1") == new_doc(current_step="CompareStep", revision=2)


async def test_p2_revision_ahead_of_the_store_raises_conflict(store: Store) -> None:
    await store.create(new_doc())

    with pytest.raises(SessionConflictError) as caught:
        await store.save(new_doc(current_step="Ahead"), 5)

    assert str(caught.value) == (
        "Session 's-1' was saved by another writer: expected revision 5, found 0. Nothing was "
        "written; reload the session and retry the turn."
    )
    assert await store.load("s-1") == new_doc()


async def test_p2_save_of_a_missing_id_raises_not_found(store: Store) -> None:
    with pytest.raises(SessionNotFoundError) as caught:
        await store.save(new_doc("ghost"), 0)

    assert str(caught.value) == "Session 'ghost' does not exist in the store; start a new session."
    assert caught.value.session_id == "ghost"
    assert await store.load("ghost") is None


async def test_p4_concurrent_saves_with_one_revision_have_exactly_one_winner(
    store: Store,
) -> None:
    await store.create(new_doc())
    docs = [new_doc(current_step=f"Step{i}") for i in range(5)]

    results = await asyncio.gather(*(store.save(d, 0) for d in docs), return_exceptions=True)

    winners = [i for i, result in enumerate(results) if result == 1]
    assert len(winners) == 1
    losers = [result for result in results if result != 1]
    assert len(losers) == 4
    for loser in losers:
        assert isinstance(loser, SessionConflictError)
        assert (loser.expected_revision, loser.actual_revision) == (0, 1)
    assert await store.load("s-1") == {**docs[winners[0]], "revision": 1}


# --- delete ------------------------------------------------------------------------------


async def test_p2_delete_returns_whether_the_session_existed(store: Store) -> None:
    await store.create(new_doc())

    assert await store.delete("s-1") is True
    assert await store.load("s-1") is None
    assert await store.delete("s-1") is False


async def test_p2_delete_removes_the_archive_of_that_session_only(store: Store) -> None:
    for session_id in ("s-1", "s-2"):
        await store.create(new_doc(session_id))
        await store.archive(session_id, "explore", [human(1, "hotel in Lisbon")])
        await store.archive(session_id, "present", [human(1, "hotel in Porto")])

    await store.delete("s-1")

    assert await store.search_archive("s-1", "explore", "hotel") == []
    assert await store.search_archive("s-1", "present", "hotel") == []
    assert await store.search_archive("s-2", "explore", "hotel") == [human(1, "hotel in Lisbon")]
    assert await store.load("s-2") == new_doc("s-2")


async def test_p2_deleted_id_can_be_created_again(store: Store) -> None:
    await store.create(new_doc())
    await store.save(new_doc(), 0)
    await store.delete("s-1")

    await store.create(new_doc(flow="Again"))

    assert await store.load("s-1") == new_doc(flow="Again")


# --- invalid input -----------------------------------------------------------------------

BAD_IDS = [
    ({"revision": 0}, None),
    ({"id": "", "revision": 0}, ""),
    ({"id": 42, "revision": 0}, 42),
]
BAD_REVISIONS = [
    ({"id": "s-1"}, "got None"),
    ({"id": "s-1", "revision": 1}, "got 1"),
    ({"id": "s-1", "revision": "0"}, "got '0'"),
    ({"id": "s-1", "revision": False}, "got False"),
]


@pytest.mark.parametrize(("doc", "bad_id"), BAD_IDS)
async def test_p2_create_rejects_a_missing_or_empty_id(
    store: Store, doc: dict[str, Any], bad_id: Any
) -> None:
    with pytest.raises(ValueError) as caught:
        await store.create(doc)

    assert str(caught.value) == (
        f"Cannot create a session: doc['id'] must be a non-empty string, got {bad_id!r}. "
        "Give the document its session id before storing it."
    )


@pytest.mark.parametrize(("doc", "got"), BAD_REVISIONS)
async def test_p2_create_rejects_a_revision_other_than_zero(
    store: Store, doc: dict[str, Any], got: str
) -> None:
    with pytest.raises(ValueError) as caught:
        await store.create(doc)

    assert str(caught.value) == (
        f"Cannot create session 's-1': doc['revision'] must be 0 for a new session, {got}. "
        "Use save() to update an existing session."
    )
    assert await store.load("s-1") is None


@pytest.mark.parametrize("bad_id", [None, 7, ["s-1"]])
async def test_p2_save_rejects_a_non_string_id(store: Store, bad_id: Any) -> None:
    with pytest.raises(ValueError) as caught:
        await store.save({"id": bad_id, "revision": 0}, 0)

    assert str(caught.value) == (
        f"Cannot save a session: doc['id'] must be a string, got {bad_id!r}. "
        "Save the document that create() stored or load() returned."
    )


@pytest.mark.parametrize("bad_revision", [-1, True, "0", None])
async def test_p2_save_rejects_an_invalid_expected_revision(
    store: Store, bad_revision: Any
) -> None:
    await store.create(new_doc())

    with pytest.raises(ValueError) as caught:
        await store.save(new_doc(), bad_revision)

    assert str(caught.value) == (
        "Cannot save session 's-1': expected_revision must be an integer >= 0, "
        f"got {bad_revision!r}. Pass the revision of the document you loaded."
    )
    assert await store.load("s-1") == new_doc()


# --- lifecycle ---------------------------------------------------------------------------


async def test_p2_a_closed_store_refuses_calls_with_store_error(store: Store) -> None:
    await store.create(new_doc())
    await store.aclose()
    name = type(store).__name__

    calls = [
        lambda: store.load("s-1"),
        lambda: store.create(new_doc("s-2")),
        lambda: store.save(new_doc(), 0),
        lambda: store.delete("s-1"),
        lambda: store.archive("s-1", "explore", [human(1, "x")]),
        lambda: store.search_archive("s-1", "explore", "x"),
    ]
    for call in calls:
        with pytest.raises(StoreError) as caught:
            await call()
        assert str(caught.value) == (
            f"{name} was closed with aclose() and cannot be used again; create a new {name}."
        )
    await store.aclose()  # closing twice is harmless


# --- revision (the engine's cheap freshness check) ----------------------------------------


async def test_p2_revision_reads_the_stored_revision_without_the_document(store: Store) -> None:
    assert await store.revision("s-1") is None
    await store.create(new_doc())
    assert await store.revision("s-1") == 0
    await store.save(new_doc(current_step="PresentStep"), 0)
    assert await store.revision("s-1") == 1
    await store.delete("s-1")
    assert await store.revision("s-1") is None


async def test_p2_resaving_the_same_message_objects_stores_what_was_saved(store: Store) -> None:
    # The engine re-saves unchanged message dicts every turn; each save must store them
    # exactly, and a message added later must appear, whatever a store caches.
    message = {"type": "human", "data": {"content": "hi", "type": "human"}}
    memory = {"ns": {"messages": [message], "summary": None}}
    await store.create(new_doc(memory=memory))
    later = {"type": "ai", "data": {"content": "hello", "type": "ai"}}
    grown = {"ns": {"messages": [message, later], "summary": None}}
    await store.save(new_doc(memory=grown), 0)
    loaded = await store.load("s-1")
    assert loaded is not None
    assert loaded["memory"] == grown


async def test_p2_a_message_dict_edited_in_place_is_stored_as_edited(store: Store) -> None:
    """P2: a caller of the store API may edit a document and save it again; every store keeps
    the edit, including in the system slot (index 0). Only the engine's `SavedMessages`
    lists, whose dicts are never edited, let a store reuse an earlier encoding."""
    system = {"type": "system", "data": {"content": "Be brief.", "type": "system"}}
    user = {"type": "human", "data": {"content": "hi", "type": "human"}}
    doc = new_doc(memory={"ns": {"messages": [system, user], "summary": None}})
    await store.create(doc)
    system["data"]["content"] = "EDITED PROMPT"
    user["data"]["content"] = "EDITED USER"
    await store.save(doc, 0)
    loaded = await store.load("s-1")
    assert loaded is not None
    contents = [m["data"]["content"] for m in loaded["memory"]["ns"]["messages"]]
    assert contents == ["EDITED PROMPT", "EDITED USER"]


async def test_p2_saved_messages_lists_store_what_was_saved(store: Store) -> None:
    """P2: the engine's SavedMessages lists, re-saved with the same dicts and grown, are stored
    exactly, whatever a store reuses."""
    system = {"type": "system", "data": {"content": "Be brief.", "type": "system"}}
    user = {"type": "human", "data": {"content": "hi", "type": "human"}}
    first = SavedMessages([system, user])
    await store.create(new_doc(memory={"ns": {"messages": first, "summary": None}}))
    reply = {"type": "ai", "data": {"content": "hello", "type": "ai"}}
    new_slot = {"type": "system", "data": {"content": "Be very brief.", "type": "system"}}
    grown = SavedMessages([new_slot, user, reply])
    await store.save(new_doc(memory={"ns": {"messages": grown, "summary": None}}), 0)
    loaded = await store.load("s-1")
    assert loaded is not None
    assert loaded["memory"]["ns"]["messages"] == [new_slot, user, reply]
    assert type(loaded["memory"]["ns"]["messages"]) is list  # callers get plain JSON back
