"""Where PicoFlow documents come from (JSON files, a MongoDB collection) and where they go.

A JSON file may hold one document, a list of them, or one per line (what `mongoexport`
writes); extended JSON (`{"$date": ...}`) is fine. A MongoDB collection is read with PyMongo's
async client (the `picoflow[mongo]` extra). Converted documents go to a directory (one
`<id>.json` each) or straight into a picoflow store, where an id that is already there is left
alone and reported, so an import can be run again after a partial failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from picoflow.errors import SessionConflictError
from picoflow.stores import Store

__all__ = ["read_json", "read_mongo", "write_files", "write_store"]


def read_json(path: Path) -> list[dict[str, Any]]:
    """The documents of a JSON file: one object, a list, or JSON lines."""
    text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                data.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"{path}: line {number} is not JSON ({exc.msg}); give one document, a list "
                    "of documents, or one document per line"
                ) from exc
    return data if isinstance(data, list) else [data]


async def read_mongo(
    uri: str, database: str, collection: str, query: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """Every document of a PicoFlow sessions collection that matches `query`."""
    try:
        from pymongo import AsyncMongoClient
    except ImportError as exc:
        raise ValueError(
            "reading from MongoDB needs pymongo: pip install 'picoflow[mongo]'"
        ) from exc
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(uri, tz_aware=True)
    try:
        return [doc async for doc in client[database][collection].find(query or {})]
    finally:
        await client.close()


def write_files(docs: list[dict[str, Any]], directory: Path) -> list[Path]:
    """Write each document to `<directory>/<id>.json`; return the paths."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in docs:
        path = directory / f"{doc['id']}.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


async def write_store(docs: list[dict[str, Any]], store: Store) -> list[str]:
    """Create each document in `store`; return the ids that were already there (untouched)."""
    existing = []
    for doc in docs:
        try:
            await store.create(doc)
        except SessionConflictError:
            existing.append(doc["id"])
    return existing
