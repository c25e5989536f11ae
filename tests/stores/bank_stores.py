"""The `store` fixture of the memory-bank vector tests: every store, SQLite on both paths (L4).

SQLite keeps vectors two ways: with `picoflow[vectors]` (sqlean and sqlite-vec, installed by
the dev extra) in a vec0 index queried in SQL, without it scored in Python. Both must behave
the same, so these tests run on both: "sqlite" on the index, "sqlite-python" with the index
turned off (`_sqlite_driver.use_index(False)`) as on a machine without the extra. Import
`BANK_FACTORIES` into a test module and define its `store` fixture over them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from conftest import STORE_FACTORIES

from picoflow.stores import SQLiteStore, Store, _sqlite_driver


@asynccontextmanager
async def sqlite_python_store(request: pytest.FixtureRequest) -> AsyncIterator[Store]:
    """SQLiteStore as on a machine without the extra: no vec0 index, vectors scored in Python."""
    tmp_path = request.getfixturevalue("tmp_path")
    _sqlite_driver.use_index(False)
    store = SQLiteStore(tmp_path / "sessions.db")
    try:
        yield store
    finally:
        await store.aclose()
        _sqlite_driver.use_index(True)


BANK_FACTORIES = {**STORE_FACTORIES, "sqlite-python": sqlite_python_store}
