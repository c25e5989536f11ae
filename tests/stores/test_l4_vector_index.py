"""L4, L5 at scale: the SQLite memory bank's vec0 index (picoflow[vectors]) and its guarantees.

The index is sqlite-vec's vec0 table partitioned by owner; the Python path (no extra) is the
reference it must agree with. Both are tested here on the same data: "sqlite" is the index,
"sqlite-python" the store with the index turned off (`_sqlite_driver.use_index(False)`).
Changes of an entry change its vector in the same transaction, forgetting an owner leaves no
vector behind (scanned, vec0's own tables included), and a bank of one embedding model
refuses another.
"""

from __future__ import annotations

import logging
import random
import sqlite3
import struct
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding

from picoflow import Flow, FlowEngine, Step
from picoflow._bank import MemoryBank
from picoflow.errors import EmbeddingsMismatchError, StoreError
from picoflow.stores import MemoryStore, SQLiteStore, _bank_sqlite, _bank_vec, _sqlite_driver
from picoflow.stores._bank import nearest, new_entry, unit
from picoflow.testing import KeywordEmbeddings, ScriptedChatModel

CONCEPTS = {"pet": ["dog", "cat", "pet"], "car": ["car", "van", "parking"], "food": ["vegan"]}


@asynccontextmanager
async def sqlite(path: Path, *, index: bool = True) -> AsyncIterator[SQLiteStore]:
    """A SQLiteStore on `path`, with the vec0 index or as on a machine without the extra."""
    _sqlite_driver.use_index(index)
    store = SQLiteStore(path)
    try:
        yield store
    finally:
        await store.aclose()
        _sqlite_driver.use_index(True)


@pytest.fixture(params=["sqlite", "sqlite-python"])
async def either(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    async with sqlite(tmp_path / "bank.db", index=request.param == "sqlite") as store:
        yield store


def tables(path: Path) -> Iterator[tuple[str, list[Any]]]:
    """Every table's rows, vec0's own (shadow) tables included, read with the stdlib."""
    with closing(sqlite3.connect(path)) as db:
        names = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for name in names:
            if name != "bank_vec":  # the virtual table: its rows are in its shadow tables
                yield name, db.execute(f'SELECT * FROM "{name}"').fetchall()


def blobs(found: dict[str, list[Any]]) -> bytes:
    """Every BLOB of every row, joined: a vector's bytes are found in it wherever they are."""
    return b"|".join(c for rows in found.values() for row in rows for c in row if type(c) is bytes)


def test_l4_the_dev_install_has_the_index_so_both_paths_are_tested() -> None:
    assert _sqlite_driver.available(), "pip install -e '.[dev]' brings sqlite-vec"


async def test_l4_sqlite_vectors_are_in_a_vec0_table_partitioned_by_owner(tmp_path: Path) -> None:
    async with sqlite(tmp_path / "bank.db") as store:
        ada, bob = (MemoryBank(store, o, KeywordEmbeddings(CONCEPTS)) for o in ("ada", "bob"))
        dog = await ada.add("Travels with a dog")
        await bob.add("Has a dog too")  # the same vector, another owner
        with closing(sqlite3.connect(tmp_path / "bank.db")) as db:
            (made,) = db.execute("SELECT sql FROM sqlite_master WHERE name = 'bank_vec'").fetchone()
            assert "USING vec0(owner TEXT PARTITION KEY, entry_id TEXT PRIMARY KEY" in made
            assert "FLOAT[3]" in made and "distance_metric=cosine" in made
            rows = db.execute("SELECT owner, entry_id FROM bank_vec ORDER BY owner").fetchall()
        assert rows == [("ada", dog["id"]), ("bob", rows[1][1])]
        found = await store.bank_nearest("ada", [1.0, 0.0, 0.0])
        assert [(e["id"], round(s, 5)) for e, s in found] == [(dog["id"], 1.0)]  # L5


async def test_l4_the_index_ranks_as_the_exact_python_scan(tmp_path: Path) -> None:
    rng = random.Random(4)
    data = [[rng.uniform(-1, 1) for _ in range(16)] for _ in range(300)]
    queries = [[rng.uniform(-1, 1) for _ in range(16)] for _ in range(20)]
    async with sqlite(tmp_path / "bank.db") as store:
        ids = []
        for i, vector in enumerate(data):
            entry = await store.bank_add(new_entry("ada", f"entry {i}"))
            await store.bank_set_vector("ada", entry["id"], vector, model="m")
            ids.append(entry["id"])
        for query in queries:
            exact = nearest(query, zip(ids, map(unit, data), strict=True), 10)
            found = await store.bank_nearest("ada", query, limit=10, model="m")
            assert [e["id"] for e, _ in found] == [key for key, _ in exact]
            assert [s for _, s in found] == pytest.approx([s for _, s in exact], abs=1e-5)


async def test_l4_an_edit_or_delete_changes_the_vector_in_the_same_transaction(
    either: SQLiteStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = either
    bank = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
    dog = await bank.add("Travels with a dog")

    def broken(db: Any, entry_id: str) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_bank_vec, "drop", broken)  # the index's part fails: nothing changes
    with pytest.raises(StoreError, match="disk I/O error"):
        await bank.update(dog["id"], text="Needs parking for a van")
    with pytest.raises(StoreError, match="disk I/O error"):
        await bank.delete(dog["id"])
    assert [e["text"] for e in await bank.list()] == ["Travels with a dog"]
    assert [e["id"] for e, _ in await store.bank_nearest("ada", [1.0, 0.0, 0.0])] == [dog["id"]]
    monkeypatch.undo()
    await bank.update(dog["id"], text="Needs parking for a van")
    assert await store.bank_nearest("ada", [1.0, 0.0, 0.0]) == []  # the dog's vector went
    assert [e["id"] for e, _ in await store.bank_nearest("ada", [0.0, 1.0, 0.0])] == [dog["id"]]
    assert await bank.delete(dog["id"]) is True
    assert await store.bank_nearest("ada", [0.0, 1.0, 0.0]) == []
    assert [e["text"] for e in await bank.search("van parking")] == []


async def test_w5_forget_principal_leaves_no_vector_in_any_table(tmp_path: Path) -> None:
    class One(Step):
        pass

    class OneFlow(Flow):
        def config_model(self) -> Any:
            return ScriptedChatModel(script=["hi"])

        def define_steps(self) -> list[Step]:
            return [One(self).use_long_term_memory()]

    path = tmp_path / "bank.db"
    async with sqlite(path) as store:
        engine = FlowEngine([OneFlow], store=store, embeddings=KeywordEmbeddings(CONCEPTS))
        await engine.memory_bank("alice").add("alice travels with a cat and a van")
        await engine.memory_bank("bob").add("bob eats vegan")
        packed = [struct.pack("<3f", *unit([1.0, 1.0, 0.0])), struct.pack("<3d", *unit([1, 1, 0]))]
        before = dict(tables(path))
        assert "bank_vec_vector_chunks00" in before  # vec0's own tables are scanned too
        assert [name for name, rows in before.items() if "alice" in repr(rows)]
        assert len([vector for vector in packed if vector in blobs(before)]) == 2
        await engine.forget_principal("alice")
        after = dict(tables(path))
        assert not [name for name, rows in after.items() if "alice" in repr(rows)]
        assert not [vector for vector in packed if vector in blobs(after)]  # vec0 zeroes slots
        assert [e["text"] for e in await engine.memory_bank("bob").search("vegan food")] == [
            "bob eats vegan"
        ]


async def test_l4_a_bank_refuses_vectors_of_another_model_naming_both(either: SQLiteStore) -> None:
    store = either
    keyword = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
    await keyword.add("Travels with a dog")
    other = MemoryBank(store, "ada", DeterministicFakeEmbedding(size=3))  # same size, not same
    with pytest.raises(EmbeddingsMismatchError) as caught:
        await other.add("Likes vegan food")
    message = str(caught.value)
    assert "KeywordEmbeddings (3 dimensions)" in message
    assert "DeterministicFakeEmbedding (3 dimensions)" in message
    assert caught.value.retryable is False
    assert [e["text"] for e in await keyword.list()] == ["Travels with a dog"]  # nothing kept
    with pytest.raises(EmbeddingsMismatchError, match="DeterministicFakeEmbedding"):
        await other.search("vegan")
    bigger = MemoryBank(store, "bob", DeterministicFakeEmbedding(size=8))
    with pytest.raises(EmbeddingsMismatchError, match=r"\(3 dimensions\).*\(8 dimensions\)"):
        await bigger.add("Has a cat")  # another owner: the bank is the store's, one model
    assert [e["text"] for e in await keyword.search("pet")] == ["Travels with a dog"]


async def test_l4_the_model_is_recorded_in_the_file_and_checked_after_a_restart(
    tmp_path: Path,
) -> None:
    async with sqlite(tmp_path / "bank.db") as store:
        await MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS)).add("Travels with a dog")
    async with sqlite(tmp_path / "bank.db", index=False) as store:
        with pytest.raises(EmbeddingsMismatchError, match="KeywordEmbeddings"):
            await store.bank_nearest("ada", [1.0, 0.0, 0.0], model="OpenAIEmbeddings")


def test_l4_memory_store_refuses_another_model_too() -> None:
    import asyncio

    async def run() -> None:
        store = MemoryStore()
        entry = await store.bank_add(new_entry("ada", "a"))
        assert await store.bank_nearest("ada", [1.0]) == []  # nothing kept yet
        await store.bank_set_vector("ada", entry["id"], [1.0, 0.0], model="A")
        with pytest.raises(EmbeddingsMismatchError, match="A \\(2 dimensions\\).*B"):
            await store.bank_set_vector("ada", entry["id"], [1.0, 0.0], model="B")
        with pytest.raises(EmbeddingsMismatchError):
            await store.bank_nearest("ada", [1.0, 0.0, 0.0])

    asyncio.run(run())


async def test_l4_vectors_kept_without_the_index_are_indexed_when_it_comes(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bank.db"
    async with sqlite(path, index=False) as store:  # written where the extra was missing
        bank = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
        dog = await bank.add("Travels with a dog")
        van = await bank.add("Needs parking for a van")
    with closing(sqlite3.connect(path)) as db:
        made = db.execute(
            "SELECT name FROM sqlite_master WHERE name GLOB 'bank_vec' OR name GLOB 'bank_vec_*'"
        )
        assert made.fetchall() == []
    async with sqlite(path) as store:  # opened with it: the index is built from bank_vector
        assert [e["id"] for e, _ in await store.bank_nearest("ada", [1.0, 0.0, 0.0])] == [dog["id"]]
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT count(*) FROM bank_vec").fetchone() == (2,)
    async with sqlite(path, index=False) as store:  # edited without it again: index is behind
        await MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS)).delete(dog["id"])
    async with sqlite(path) as store:
        assert [e["id"] for e, _ in await store.bank_nearest("ada", [0.5, 0.5, 0.0])] == [van["id"]]
        with closing(sqlite3.connect(path)) as db:
            assert db.execute("SELECT count(*) FROM bank_vec").fetchone() == (1,)  # rebuilt


async def test_l4_without_the_index_a_large_bank_warns_once_naming_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_bank_sqlite, "SLOW_SCAN", 2)
    monkeypatch.setattr(_bank_sqlite, "_warned", False)
    async with sqlite(tmp_path / "bank.db", index=False) as store:
        bank = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
        for text in ("a dog", "a cat", "a van"):
            await bank.add(text)
        with caplog.at_level(logging.WARNING, logger=_bank_sqlite.__name__):
            await bank.search("pet")
            await bank.search("car")
    warned = [r.getMessage() for r in caplog.records if "picoflow[vectors]" in r.getMessage()]
    assert len(warned) == 1 and "owner has 3 vectors" in warned[0]


async def test_l5_an_owner_whose_name_holds_anothers_words_gets_only_their_entries(
    tmp_path: Path,
) -> None:
    """The text index narrows by the owner's words: "ada" is a word of "ada@example.com"."""
    async with sqlite(tmp_path / "bank.db") as store:
        for n in range(5):  # the other owner's entries match better (more of the query)
            await store.bank_add(new_entry("ada@example.com", f"dog dog parking {n}"))
        mine = [await store.bank_add(new_entry("ada", f"dog {n}")) for n in range(3)]
        found = await store.bank_search("ada", "dog parking", page_size=2)
        assert [e["id"] for e in found] == [mine[2]["id"], mine[1]["id"]]  # ties: newest first
        page = await store.bank_search("ada", "dog parking", page=2, page_size=2)
        assert [e["id"] for e in page] == [mine[0]["id"]]
        theirs = await store.bank_search("ada@example.com", "dog", page_size=100)
        assert len(theirs) == 5 and {e["owner"] for e in theirs} == {"ada@example.com"}


async def test_l4_a_store_of_ones_own_without_model_still_gets_vectors() -> None:
    """P2: a store written before `model` existed keeps working (its bank is unchecked)."""

    class Older(MemoryStore):
        async def bank_set_vector(self, owner: str, entry_id: str, vector: list[float]) -> bool:  # type: ignore[override]
            return await super().bank_set_vector(owner, entry_id, vector)

        async def bank_nearest(  # type: ignore[override]
            self, owner: str, vector: list[float], *, limit: int = 100
        ) -> list[tuple[Any, float]]:
            return await super().bank_nearest(owner, vector, limit=limit)

    bank = MemoryBank(Older(), "ada", KeywordEmbeddings(CONCEPTS))
    dog = await bank.add("Travels with a dog")
    assert [e["id"] for e in await bank.search("pet friendly")] == [dog["id"]]
