"""Session stores: where sessions live between turns (P2, P6).

`MemoryStore` for tests, `SQLiteStore` as the embedded default, `MongoStore` for production.
`MongoStore` is imported on first access, so `import picoflow.stores` works without the optional
`pymongo` dependency.
"""

from __future__ import annotations

from typing import Any

from picoflow.stores._url import from_url, load_mongo_store
from picoflow.stores.base import Store
from picoflow.stores.memory import MemoryStore
from picoflow.stores.sqlite import SQLiteStore

__all__ = ["Store", "MemoryStore", "SQLiteStore", "MongoStore", "from_url"]


def __getattr__(name: str) -> Any:
    # PEP 562: resolve MongoStore lazily; pymongo is only needed by those who use it.
    if name == "MongoStore":
        return load_mongo_store()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
