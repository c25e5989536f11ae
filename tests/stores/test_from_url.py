"""`picoflow.stores.from_url` (E1) and the lazy MongoStore import."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import picoflow.stores
from picoflow.stores import MemoryStore, SQLiteStore, from_url

ACCEPTED = (
    "Use 'memory:', 'sqlite:///relative/path.db', 'sqlite:////absolute/path.db', "
    "'mongodb://...' or 'mongodb+srv://...'."
)
NO_MONGO_MODULE = (
    "MongoStore is not available: this picoflow installation has no picoflow.stores.mongo "
    "module. Upgrade picoflow, or use a 'sqlite:///' or 'memory:' store URL."
)


def test_e1_memory_url_builds_a_memory_store() -> None:
    assert isinstance(from_url("memory:"), MemoryStore)


async def test_e1_sqlite_url_with_three_slashes_is_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)

    store = from_url("sqlite:///data/sessions.db")
    assert isinstance(store, SQLiteStore)
    await store.create({"id": "s-1", "revision": 0})
    await store.aclose()

    assert (tmp_path / "data" / "sessions.db").is_file()


async def test_e1_sqlite_url_with_four_slashes_is_an_absolute_path(tmp_path: Path) -> None:
    path = tmp_path / "abs" / "sessions.db"
    url = f"sqlite:///{path}"
    assert url.startswith("sqlite:////")

    store = from_url(url)
    await store.create({"id": "s-1", "revision": 0})
    await store.aclose()

    assert path.is_file()


@pytest.mark.parametrize(
    ("query", "level"), [("", 1), ("?synchronous=FULL", 2), ("?synchronous=normal", 1)]
)
async def test_e1_sqlite_url_chooses_synchronous(tmp_path: Path, query: str, level: int) -> None:
    store = from_url(f"sqlite:///{tmp_path / 'sessions.db'}{query}")
    assert isinstance(store, SQLiteStore)
    await store.create({"id": "s-1", "revision": 0})
    read = await store._read("read", lambda db: db.execute("PRAGMA synchronous").fetchone()[0])
    await store.aclose()

    assert read == level
    assert (tmp_path / "sessions.db").is_file()


@pytest.mark.parametrize("query", ["?synchronous=OFF", "?journal=wal", "?synchronous=FULL&x=1"])
def test_e1_sqlite_url_refuses_other_options(query: str) -> None:
    with pytest.raises(ValueError) as caught:
        from_url(f"sqlite:///data/sessions.db{query}")
    assert str(caught.value) == (
        f"Unsupported SQLite store URL option in 'sqlite:///data/sessions.db{query}': the only "
        "option is synchronous=NORMAL (the default) or synchronous=FULL, e.g. "
        "'sqlite:///data/sessions.db?synchronous=FULL'."
    )


async def test_e1_sqlite_memory_url_builds_an_in_memory_sqlite_store() -> None:
    store = from_url("sqlite:///:memory:")
    assert isinstance(store, SQLiteStore)
    await store.create({"id": "s-1", "revision": 0})

    assert await store.load("s-1") == {"id": "s-1", "revision": 0}
    await store.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "",
        "memory",
        "memory://",
        "sqlite://",
        "sqlite:///",
        "sqlite://sessions.db",
        "SQLITE:///sessions.db",
        "redis://localhost:6379/0",
        "/var/lib/picoflow/sessions.db",
    ],
)
def test_e1_unsupported_url_raises_value_error_naming_the_accepted_forms(url: str) -> None:
    with pytest.raises(ValueError) as caught:
        from_url(url)

    assert str(caught.value) == f"Unsupported store URL {url!r}. {ACCEPTED}"


def test_e1_unsupported_url_error_masks_the_password() -> None:
    with pytest.raises(ValueError) as caught:
        from_url("postgresql://bob:s3cret@db.example.com:5432/app")

    assert str(caught.value) == (
        f"Unsupported store URL 'postgresql://bob:***@db.example.com:5432/app'. {ACCEPTED}"
    )


@pytest.mark.parametrize("url", ["mongodb://localhost:27017/picoflow", "mongodb+srv://h/db"])
def test_p6_mongodb_url_without_the_mongo_module_raises_import_error(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "picoflow.stores.mongo", None)

    with pytest.raises(ImportError) as caught:
        from_url(url)

    assert str(caught.value) == NO_MONGO_MODULE


def test_p6_mongo_store_name_is_resolved_lazily(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "picoflow.stores.mongo", None)

    assert "MongoStore" in picoflow.stores.__all__
    with pytest.raises(ImportError) as caught:
        picoflow.stores.MongoStore  # noqa: B018

    assert str(caught.value) == NO_MONGO_MODULE
    with pytest.raises(AttributeError) as missing:
        picoflow.stores.RedisStore  # type: ignore[attr-defined]  # noqa: B018
    assert str(missing.value) == "module 'picoflow.stores' has no attribute 'RedisStore'"


def test_p6_mongodb_url_without_pymongo_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("picoflow.stores.mongo", reason="MongoStore is not written yet")
    monkeypatch.delitem(sys.modules, "picoflow.stores.mongo")
    for name in [name for name in sys.modules if name.split(".")[0] == "pymongo"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "pymongo", None)

    with pytest.raises(ImportError) as caught:
        from_url("mongodb://localhost:27017/picoflow")

    assert str(caught.value) == (
        "MongoStore needs the pymongo package, which is not installed. "
        "Install it with: pip install 'picoflow[mongo]'."
    )


async def test_p6_mongodb_url_builds_a_mongo_store() -> None:
    mongo = pytest.importorskip("picoflow.stores.mongo", reason="MongoStore is not written yet")

    store = from_url("mongodb://localhost:27017/picoflow")

    assert isinstance(store, mongo.MongoStore)
    await store.aclose()
