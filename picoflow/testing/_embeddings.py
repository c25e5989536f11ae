"""`KeywordEmbeddings`: deterministic embeddings with meaning you choose, for offline tests (L4).

LangChain's `DeterministicFakeEmbedding` hashes the whole text: the same text gives the same
vector, but "dog" and "pet" are as far apart as any two texts, so it cannot show that hybrid
search finds an entry by meaning. Here each dimension is a concept given by its words; a text's
vector counts, per concept, the words of the text that start with one of the concept's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from langchain_core.embeddings import Embeddings

__all__ = ["KeywordEmbeddings"]

_WORD = re.compile(r"\w+", re.UNICODE)


class KeywordEmbeddings(Embeddings):
    """Embeddings over named concepts: `KeywordEmbeddings({"pet": ["dog", "cat", "pet"]})`.

    >>> e = KeywordEmbeddings({"pet": ["dog", "pet"], "car": ["car", "van", "parking"]})
    >>> e.embed_query("Travels with two dogs"), e.embed_query("a pet-friendly room")
    ([1.0, 0.0], [1.0, 0.0])
    >>> e.embed_query("the weather")  # no concept: the zero vector, similar to nothing
    [0.0, 0.0]
    """

    def __init__(self, concepts: Mapping[str, Iterable[str]]) -> None:
        if not isinstance(concepts, Mapping) or not concepts:
            raise ValueError(
                "KeywordEmbeddings takes a non-empty mapping of concept name to its words, "
                f"e.g. {{'pet': ['dog', 'cat']}}, got {concepts!r}."
            )
        self._concepts: list[tuple[str, ...]] = []
        for name, words in concepts.items():
            listed = (words,) if isinstance(words, str) else tuple(words)
            cleaned = tuple(w.lower() for w in listed if isinstance(w, str) and w.strip())
            if not cleaned or len(cleaned) != len(listed):
                raise ValueError(
                    f"KeywordEmbeddings: concept {name!r} needs a list of non-empty words, "
                    f"got {words!r}."
                )
            self._concepts.append(cleaned)

    def _vector(self, text: str) -> list[float]:
        found = [word.lower() for word in _WORD.findall(text)]
        return [
            float(sum(1 for f in found if any(f.startswith(w) for w in words)))
            for words in self._concepts
        ]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """One vector per text."""
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """The query's vector, made as a document's."""
        return self._vector(text)
