"""Optional embeddings for the memory bank, and hybrid ranking (L4).

With `FlowEngine(embeddings=...)` (any LangChain `Embeddings`) every entry written through
picoflow (the `remember` tool, extraction, `MemoryBank.add`/`update`) gets a vector, kept by the
store beside the entry (a BLOB column on SQLite, an array field on MongoDB). A search then fuses
two rankings with reciprocal rank fusion: the store's text index (bm25 on SQLite, the text
score on MongoDB) and the store's `bank_nearest`, the owner's entries nearest the query (on
SQLite with `picoflow[vectors]` a k-nearest-neighbour query on sqlite-vec's index, partitioned
by owner; elsewhere cosine over the owner's vectors in Python, `stores._bank.nearest`). The two
rankings are asked for at once (on SQLite they run on two reader threads).

Vectors of two models cannot be compared, so every vector and query names its model
(`model_name`): a store refuses one of another model or dimension than its bank's
(`EmbeddingsMismatchError`, which is never swallowed).

Embeddings are an aid, never a point of failure: an embedding call that fails leaves the entry
without a vector (text search still finds it) and a search whose query cannot be embedded is
ranked by text alone; both are logged.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

from langchain_core.embeddings import Embeddings

from picoflow.errors import EmbeddingsMismatchError
from picoflow.stores._bank import BankEntry, check_page
from picoflow.stores.base import abilities_of

__all__ = ["add_entry", "update_entry", "search", "fuse", "check_embeddings", "model_name"]

logger = logging.getLogger(__name__)

RRF_K = 60  # the usual constant of reciprocal rank fusion: rank 1 scores 1/61
_CANDIDATES = 100  # each ranking contributes at most this many entries to the fusion


def check_embeddings(embeddings: Any, store: Any) -> None:
    """`FlowEngine(embeddings=...)`: a LangChain `Embeddings`, and a store that keeps vectors."""
    if embeddings is None:
        return
    if not isinstance(embeddings, Embeddings):
        raise TypeError(
            f"FlowEngine(embeddings=...) takes a LangChain Embeddings instance (e.g. "
            f"OpenAIEmbeddings(), or picoflow.testing.KeywordEmbeddings in tests), got "
            f"{type(embeddings).__name__}."
        )
    abilities_of(store).need("vectors", "FlowEngine(embeddings=...)")


def model_name(embeddings: Any) -> str:
    """How the bank records a model: its class, and the model it calls where it says.

    >>> from langchain_core.embeddings import DeterministicFakeEmbedding
    >>> model_name(DeterministicFakeEmbedding(size=4))
    'DeterministicFakeEmbedding'
    """
    name = type(embeddings).__name__
    for field in ("model", "model_name", "model_id", "deployment"):
        value = getattr(embeddings, field, None)
        if isinstance(value, str) and value:
            return f"{name}(model={value!r})"
    return name


async def _embed(embeddings: Any, text: str, *, query: bool) -> list[float] | None:
    try:
        if query:
            vector = await embeddings.aembed_query(text)
        else:
            (vector,) = await embeddings.aembed_documents([text])
        return [float(x) for x in vector]  # numpy scalars would make the scoring 5x slower
    except Exception:  # an aid, never a failure: text search still works
        logger.warning(
            "embedding failed; %s by text only", "ranked" if query else "kept", exc_info=True
        )
        return None


async def _store_vector(store: Any, embeddings: Any, entry: BankEntry) -> None:
    vector = await _embed(embeddings, entry["text"], query=False)
    if vector is not None:
        named = _named(store.bank_set_vector, embeddings)
        try:
            await store.bank_set_vector(entry["owner"], entry["id"], vector, **named)
        except ValueError:  # not a list of finite numbers: the entry stays text-only
            logger.warning("the embeddings model returned an unusable vector", exc_info=True)


async def add_entry(store: Any, embeddings: Any, entry: BankEntry) -> BankEntry:
    """`store.bank_add(entry)`, then its vector when embeddings are configured.

    A bank of another embedding model refuses the vector: the entry is taken back, so a refused
    add leaves nothing behind, and the error is raised.
    """
    added: BankEntry = await store.bank_add(entry)
    if embeddings is not None:
        try:
            await _store_vector(store, embeddings, added)
        except EmbeddingsMismatchError:
            await store.bank_delete(added["owner"], added["id"])
            raise
    return added


async def update_entry(
    store: Any, embeddings: Any, owner: str, entry_id: str, text: str | None, kind: str | None
) -> BankEntry | None:
    """`store.bank_update(...)`; a new text gets a new vector (the store drops the old one)."""
    entry: BankEntry | None = await store.bank_update(owner, entry_id, text=text, kind=kind)
    if entry is not None and text is not None and embeddings is not None:
        await _store_vector(store, embeddings, entry)
    return entry


async def search(
    store: Any, embeddings: Any, owner: str, query: str, *, page: int = 1, page_size: int = 10
) -> list[BankEntry]:
    """The owner's entries for `query`, the most relevant first: text rank fused with cosine.

    Without embeddings this is the store's text search. With them, an entry the text index
    does not find at all (other words, same meaning) can still come first.
    """
    if embeddings is None:
        return await store.bank_search(owner, query, page=page, page_size=page_size)  # type: ignore[no-any-return]
    check_page(page, page_size)
    both = await asyncio.gather(
        store.bank_search(owner, query, page_size=_CANDIDATES),
        _nearest(store, embeddings, owner, query),
        return_exceptions=True,  # both run to their end: no failure is left unretrieved
    )
    for outcome in both:
        if isinstance(outcome, BaseException):
            raise outcome
    text_ranked, vector_ranked = both
    fused = fuse([text_ranked, vector_ranked])
    return fused[(page - 1) * page_size : page * page_size]


async def _nearest(store: Any, embeddings: Any, owner: str, query: str) -> list[BankEntry]:
    """The vector ranking: the query embedded, then the store's nearest entries."""
    wanted = await _embed(embeddings, query, query=True) if query.strip() else None
    if wanted is None:
        return []
    named = _named(store.bank_nearest, embeddings)
    nearest = await store.bank_nearest(owner, wanted, limit=_CANDIDATES, **named)
    return [entry for entry, _ in nearest]


def _named(method: Any, embeddings: Any) -> dict[str, str]:
    """`{"model": ...}` for a store method that takes it, else nothing.

    A store of one's own written before `model` existed keeps working, unchecked.
    """
    try:
        takes = "model" in inspect.signature(method).parameters
    except (TypeError, ValueError):  # no signature to read: do not guess
        takes = False
    return {"model": model_name(embeddings)} if takes else {}


def fuse(rankings: list[list[BankEntry]]) -> list[BankEntry]:
    """Reciprocal rank fusion: each ranking gives an entry 1/(RRF_K + rank); the sum orders.

    Ties keep the order of the first ranking that has the entry (text first).

    >>> a, b, c = ({"id": x} for x in "abc")
    >>> [e["id"] for e in fuse([[a, b], [b, c]])]  # type: ignore[list-item]
    ['b', 'a', 'c']
    """
    scores: dict[str, float] = {}
    entries: dict[str, BankEntry] = {}
    for ranking in rankings:
        for rank, entry in enumerate(ranking, start=1):
            scores[entry["id"]] = scores.get(entry["id"], 0.0) + 1.0 / (RRF_K + rank)
            entries.setdefault(entry["id"], entry)
    order = {key: i for i, key in enumerate(entries)}
    ranked = sorted(entries, key=lambda key: (-scores[key], order[key]))
    return [entries[key] for key in ranked]
