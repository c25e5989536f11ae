"""L1, L4, L5: the memory bank on every store — kept per owner, ranked search, edit, delete."""

from __future__ import annotations

import pytest

from picoflow.stores._bank import new_entry
from picoflow.stores.base import Store


async def test_l1_entries_are_kept_per_owner_and_listed_newest_first(store: Store) -> None:
    first = await store.bank_add(new_entry("ada", "Prefers a double room", "preference"))
    second = await store.bank_add(new_entry("ada", "Travels with a dog"))
    await store.bank_add(new_entry("bob", "Prefers a twin room", "preference"))
    listed = await store.bank_list("ada")
    assert {entry["id"] for entry in listed} == {first["id"], second["id"]}
    assert all(entry["owner"] == "ada" for entry in listed)
    assert listed[0]["updated_at"] >= listed[1]["updated_at"]
    assert first["kind"] == "preference" and second["kind"] == "fact"
    assert [e["text"] for e in await store.bank_list("bob")] == ["Prefers a twin room"]
    assert await store.bank_list("carol") == []


async def test_l4_search_ranks_the_more_relevant_entry_first_and_pages(store: Store) -> None:
    add = store.bank_add
    await add(new_entry("ada", "Likes breakfast included"))
    await add(new_entry("ada", "Wants parking and breakfast"))
    await add(new_entry("ada", "Needs parking"))
    await add(new_entry("ada", "Allergic to feathers"))
    await add(new_entry("bob", "Needs parking and breakfast"))
    found = await store.bank_search("ada", "parking breakfast")
    texts = [entry["text"] for entry in found]
    assert "Allergic to feathers" not in texts
    assert all(entry["owner"] == "ada" for entry in found)  # never another owner's (L5)
    assert len(texts) == 3
    assert texts[0] == "Wants parking and breakfast"  # both words outrank one
    one = await store.bank_search("ada", "parking")
    assert {e["text"] for e in one} == {"Wants parking and breakfast", "Needs parking"}
    page2 = await store.bank_search("ada", "parking", page=2, page_size=1)
    assert len(page2) == 1 and page2[0]["id"] == one[1]["id"]
    assert await store.bank_search("ada", "!!! ???") == []
    assert await store.bank_search("ada", 'parking" OR owner:bob') != []  # no query syntax


async def test_l5_edit_delete_and_forget_touch_only_the_owners_entries(store: Store) -> None:
    add = store.bank_add
    mine = await add(new_entry("ada", "Prefers a double room"))
    theirs = await add(new_entry("bob", "Prefers a double room"))
    assert await store.bank_update("bob", mine["id"], text="hacked") is None
    edited = await store.bank_update(
        "ada", mine["id"], text="Prefers a king room", kind="preference"
    )
    assert edited is not None and edited["text"] == "Prefers a king room"
    assert [e["text"] for e in await store.bank_search("ada", "king")] == ["Prefers a king room"]
    assert await store.bank_search("ada", "double") == []
    assert await store.bank_delete("bob", mine["id"]) is False
    assert await store.bank_delete("ada", mine["id"]) is True
    assert await store.bank_delete("ada", mine["id"]) is False
    await add(new_entry("bob", "Travels light"))
    assert await store.bank_forget("bob") == 2
    assert await store.bank_list("bob") == []
    assert theirs["owner"] == "bob"


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda s: s.bank_add(new_entry("ada", "x") | {"text": " "}), "non-empty text"),
        (lambda s: s.bank_add(new_entry("ada", "x") | {"kind": "Fact!"}), "short lowercase"),
        (lambda s: s.bank_add({"text": "x"}), "lacks created_at"),
        (lambda s: s.bank_list(""), "belongs to an owner"),
        (lambda s: s.bank_search("ada", "x", page=0), "pages count from 1"),
        (lambda s: s.bank_search("ada", "x", page_size=101), "1 to 100 entries"),
        (lambda s: s.bank_update("ada", "id", text="y" * 2001), "at most 2000 characters"),
    ],
)
async def test_l5_bad_bank_input_is_refused_with_the_same_words_everywhere(
    store: Store, call: object, words: str
) -> None:
    with pytest.raises(ValueError) as caught:
        await call(store)
    assert words in str(caught.value)
