"""Build a store from a URL such as `PICOFLOW_STORE` (E1), and load MongoStore on demand.

MongoStore needs the optional `pymongo` dependency, so nothing here imports it until a
`mongodb://` URL or the `MongoStore` name is actually asked for.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
from typing import Any
from urllib.parse import parse_qs

from picoflow.stores.base import Store
from picoflow.stores.memory import MemoryStore
from picoflow.stores.sqlite import SQLiteStore

__all__ = ["from_url", "load_mongo_store", "store_from_environment"]

logger = logging.getLogger("picoflow.engine")

_MONGO_MODULE = "picoflow.stores.mongo"
_ACCEPTED = (
    "'memory:', 'sqlite:///relative/path.db', 'sqlite:////absolute/path.db', "
    "'mongodb://...' or 'mongodb+srv://...'"
)
# user:password@ in a URL; the password is masked before a URL goes into an error message.
_CREDENTIALS = re.compile(r"(://[^/@:]*):[^/@]*@")


def from_url(url: str) -> Store:
    """Build the store a URL names, so deployments choose a store without code changes.

    Accepted forms:

    - `memory:`: a `MemoryStore` (nothing survives a restart).
    - `sqlite:///relative/path.db`: a `SQLiteStore` whose path is relative to the working
      directory; `sqlite:////absolute/path.db` (four slashes) for an absolute path. As in
      SQLAlchemy, `sqlite://` is followed by an empty host and a `/`; whatever comes after that
      third slash is the path, so an absolute path brings its own leading slash.
      `sqlite:///:memory:` gives an in-memory SQLite database. `?synchronous=FULL` at the end
      makes every save sync the disk (see `SQLiteStore`); `?synchronous=NORMAL` is the default.
    - `mongodb://...` and `mongodb+srv://...`: a `MongoStore` given the whole URL (needs the
      `mongo` extra: `pip install 'picoflow[mongo]'`).

    Raises:
        ValueError: the URL has none of these forms.
        ImportError: a MongoDB URL was given but MongoStore cannot be imported.
    """
    if url == "memory:":
        return MemoryStore()
    if url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return _sqlite(url[len("sqlite:///") :])
    if url.startswith(("mongodb://", "mongodb+srv://")):
        store: Store = load_mongo_store()(url)
        return store
    shown = _CREDENTIALS.sub(r"\1:***@", url)
    raise ValueError(f"Unsupported store URL {shown!r}. Use {_ACCEPTED}.")


def _sqlite(rest: str) -> SQLiteStore:
    """A SQLiteStore from what follows `sqlite:///`: a path, then `?synchronous=...`."""
    path, _, query = rest.partition("?")
    options = parse_qs(query, keep_blank_values=True) if query else {}
    value = options.pop("synchronous", ["NORMAL"])
    if options or len(value) != 1 or value[0].upper() not in ("NORMAL", "FULL"):
        raise ValueError(
            f"Unsupported SQLite store URL option in {'sqlite:///' + rest!r}: the only option "
            "is synchronous=NORMAL (the default) or synchronous=FULL, e.g. "
            "'sqlite:///data/sessions.db?synchronous=FULL'."
        )
    return SQLiteStore(path, synchronous="FULL" if value[0].upper() == "FULL" else "NORMAL")


def load_mongo_store() -> Any:
    """Import and return the MongoStore class, explaining what to install if that fails."""
    try:
        module = importlib.import_module(_MONGO_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name == _MONGO_MODULE:
            raise ImportError(
                "MongoStore is not available: this picoflow installation has no "
                f"{_MONGO_MODULE} module. Upgrade picoflow, or use a 'sqlite:///' or "
                "'memory:' store URL."
            ) from exc
        if exc.name is not None and exc.name.split(".")[0] == "pymongo":
            raise ImportError(
                "MongoStore needs the pymongo package, which is not installed. "
                "Install it with: pip install 'picoflow[mongo]'."
            ) from exc
        raise
    return module.MongoStore


def store_from_environment() -> Store:
    """The engine's store when none is given: `PICOFLOW_STORE`'s URL, else a MemoryStore."""
    url = os.environ.get("PICOFLOW_STORE")
    if url:
        return from_url(url)
    logger.warning(
        "No store given and PICOFLOW_STORE is not set: using an in-process MemoryStore, so "
        "sessions will not survive a restart."
    )
    return MemoryStore()
