"""L4 on every store: optional embeddings give bank entries vectors and hybrid search.

`KeywordEmbeddings` (picoflow.testing) is deterministic and has meaning by construction ("dog"
and "pet" share a dimension), so these tests show an entry found by meaning where the text
index finds nothing, without a network or a model.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from bank_stores import BANK_FACTORIES
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from picoflow import Flow, FlowDefinitionError, FlowEngine, Step
from picoflow._bank import MemoryBank
from picoflow._bank.vectors import fuse
from picoflow.errors import EmbeddingsMismatchError
from picoflow.stores._bank import new_entry
from picoflow.stores.base import Store
from picoflow.testing import KeywordEmbeddings, ScriptedChatModel, tool_call

CONCEPTS = {
    "pet": ["dog", "cat", "pet", "puppy"],
    "car": ["car", "van", "parking", "garage"],
    "food": ["breakfast", "dinner", "vegan", "meal"],
}


@pytest.fixture(params=list(BANK_FACTORIES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """Every store, and SQLite both with the vec0 index and without it (Python scoring)."""
    async with BANK_FACTORIES[request.param](request) as fresh_store:
        yield fresh_store


class Broken(Embeddings):
    """An embeddings service that is down."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embeddings service unreachable")

    def embed_query(self, text: str) -> list[float]:
        raise ConnectionError("embeddings service unreachable")


async def test_l4_a_semantically_related_entry_ranks_first_where_text_finds_nothing(
    store: Store,
) -> None:
    bank = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
    await bank.add("Needs parking for a van")
    dog = await bank.add("Travels with a dog")
    await bank.add("Likes breakfast included")
    await MemoryBank(store, "bob", KeywordEmbeddings(CONCEPTS)).add("Has a cat")
    assert await store.bank_search("ada", "pet friendly hotel") == []  # no word in common
    found = await bank.search("pet friendly hotel")
    assert [e["id"] for e in found] == [dog["id"]]  # the others share no concept
    assert all(e["owner"] == "ada" for e in found)  # bob's cat is never offered (L5)
    both = await bank.search("puppy breakfast")  # text finds one, meaning both
    assert [e["text"] for e in both] == ["Likes breakfast included", "Travels with a dog"]


async def test_l4_hybrid_fuses_text_rank_and_similarity(store: Store) -> None:
    bank = MemoryBank(store, "ada", KeywordEmbeddings(CONCEPTS))
    await bank.add("Wants a room with a garage")
    parking = await bank.add("Parking needed")
    await bank.add("Allergic to feathers")
    found = await bank.search("parking")
    assert found[0]["id"] == parking["id"]  # first in both rankings
    assert [e["text"] for e in found] == ["Parking needed", "Wants a room with a garage"]
    assert [e["text"] for e in await bank.search("parking", page=2, page_size=1)] == [
        "Wants a room with a garage"
    ]


async def test_l4_vectors_follow_their_entries_and_stay_with_their_owner(store: Store) -> None:
    embeddings = KeywordEmbeddings(CONCEPTS)
    bank = MemoryBank(store, "ada", embeddings)
    entry = await bank.add("Travels with a dog")
    vectors: Any = store
    pet, car = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    ((kept, score),) = await vectors.bank_nearest("ada", pet)
    assert kept["id"] == entry["id"] and score == pytest.approx(1.0)
    await bank.update(entry["id"], text="Needs parking for a van")
    assert await vectors.bank_nearest("ada", pet) == []  # re-embedded with the new text
    ((kept, score),) = await vectors.bank_nearest("ada", car)
    assert kept["text"] == "Needs parking for a van" and score == pytest.approx(1.0)
    await bank.update(entry["id"], kind="preference")  # a kind change keeps the vector
    assert [e["kind"] for e, _ in await vectors.bank_nearest("ada", car)] == ["preference"]
    assert await vectors.bank_set_vector("bob", entry["id"], pet) is False  # not bob's
    assert await vectors.bank_nearest("bob", car) == []
    with pytest.raises(EmbeddingsMismatchError, match="3 dimensions.*2 dimensions"):
        await vectors.bank_nearest("ada", [1.0, 1.0])  # another length: refused, never mixed
    assert await bank.delete(entry["id"]) is True
    assert await vectors.bank_nearest("ada", car) == []
    await bank.add("Has a cat")
    assert await bank.forget() == 1 and await vectors.bank_nearest("ada", pet) == []
    with pytest.raises(ValueError, match="non-empty list of finite numbers"):
        await vectors.bank_set_vector("ada", entry["id"], [float("nan")])
    with pytest.raises(ValueError, match="non-empty list of finite numbers"):
        await vectors.bank_set_vector("ada", entry["id"], "1,2")
    with pytest.raises(ValueError, match="non-empty list of finite numbers"):
        await vectors.bank_nearest("ada", [])


async def test_l4_nearest_ranks_by_cosine_and_limits(store: Store) -> None:
    vectors: Any = store
    made = []
    for text, vector in [("a", [1.0, 0.0]), ("b", [3.0, 4.0]), ("c", [0.0, 1.0]), ("d", [-1, 0])]:
        entry = await store.bank_add(new_entry("ada", text))
        assert await vectors.bank_set_vector("ada", entry["id"], vector) is True
        made.append(entry)
    ranked = await vectors.bank_nearest("ada", [1.0, 0.0])
    assert [(e["text"], round(s, 3)) for e, s in ranked] == [("a", 1.0), ("b", 0.6)]
    assert [e["text"] for e, _ in await vectors.bank_nearest("ada", [1.0, 1.0], limit=1)] == ["b"]


async def test_l4_failing_embeddings_never_fail_a_write_or_a_search(store: Store) -> None:
    bank = MemoryBank(store, "ada", Broken())
    entry = await bank.add("Needs parking for a van")
    vectors: Any = store
    assert await vectors.bank_nearest("ada", [0.0, 1.0, 0.0]) == []  # kept without a vector
    assert [e["id"] for e in await bank.search("parking")] == [entry["id"]]  # by text alone
    await store.bank_add(new_entry("ada", "Likes breakfast"))  # written past the bank
    fake = MemoryBank(store, "ada", DeterministicFakeEmbedding(size=8))
    assert {e["text"] for e in await fake.search("breakfast parking")} >= {
        "Likes breakfast",
        "Needs parking for a van",
    }


async def test_l4_recall_through_the_engine_uses_the_engines_embeddings(store: Store) -> None:
    model = ScriptedChatModel(script=[tool_call("recall", query="pet"), "You have a dog."])

    class Concierge(Step):
        pass

    class RecallFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [Concierge(self).use_long_term_memory()]

    engine = FlowEngine([RecallFlow], store=store, embeddings=KeywordEmbeddings(CONCEPTS))
    await engine.memory_bank("ada").add("Travels with a dog")
    result = await engine.run("RecallFlow", "what do you know?", owner="ada")
    assert result.success
    said = [m for m in model.requests[1].messages if m.type == "tool"][-1].text
    assert "- Travels with a dog (fact" in said


def test_l4_embeddings_must_be_langchain_embeddings_on_a_store_that_keeps_vectors() -> None:
    with pytest.raises(TypeError, match="takes a LangChain Embeddings instance"):
        FlowEngine([], embeddings="openai")  # type: ignore[arg-type]

    class BankOnly:
        """A store of one's own with a bank but no vectors."""

        async def bank_add(self, entry: Any) -> Any: ...
        async def bank_list(self, owner: str) -> Any: ...
        async def bank_search(self, owner: str, query: str) -> Any: ...
        async def bank_update(self, owner: str, entry_id: str) -> Any: ...
        async def bank_delete(self, owner: str, entry_id: str) -> Any: ...
        async def bank_forget(self, owner: str) -> Any: ...

    with pytest.raises(FlowDefinitionError, match="keeps no embeddings"):
        FlowEngine([], store=BankOnly(), embeddings=KeywordEmbeddings(CONCEPTS))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concept 'pet' needs a list of non-empty words"):
        KeywordEmbeddings({"pet": []})
    with pytest.raises(ValueError, match="non-empty mapping"):
        KeywordEmbeddings({})


def test_l4_reciprocal_rank_fusion_orders_by_the_summed_reciprocal_ranks() -> None:
    a, b, c = (new_entry("ada", text) for text in ("a", "b", "c"))
    # b: 1/62 + 1/62; c: 1/63 + 1/61, a hair more; a: 1/61 alone
    assert [e["text"] for e in fuse([[a, b, c], [c, b]])] == ["c", "b", "a"]
    assert [e["text"] for e in fuse([[a], []])] == ["a"]


def test_l4_docstring_examples_hold() -> None:
    import doctest

    import picoflow._bank.vectors
    import picoflow.stores._bank
    import picoflow.testing._embeddings

    for module in (picoflow._bank.vectors, picoflow.testing._embeddings, picoflow.stores._bank):
        outcome = doctest.testmod(module)
        assert outcome.failed == 0 and outcome.attempted > 0, module.__name__


async def test_l4_extracted_entries_get_vectors_and_are_found_by_meaning(store: Store) -> None:
    from test_l3_extraction import citing, hotel, moving_model

    extractor = ScriptedChatModel(policy=citing(("dog", "Travels with a dog", "fact")))
    engine = FlowEngine(
        [hotel(moving_model(), extractor)], store=store, embeddings=KeywordEmbeddings(CONCEPTS)
    )
    first = await engine.run("HotelFlow", "Hi, my dog comes along", owner="ada")
    await engine.run("HotelFlow", "book it", session_id=first.session_id)  # leaves Greet
    vectors: Any = store
    ((entry, score),) = await vectors.bank_nearest("ada", [1.0, 0.0, 0.0])
    assert entry["text"] == "Travels with a dog" and score == pytest.approx(1.0)
    found = await engine.memory_bank("ada").search("is it pet friendly?")
    assert [e["text"] for e in found] == ["Travels with a dog"]
