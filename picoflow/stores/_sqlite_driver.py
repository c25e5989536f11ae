"""How SQLiteStore connects: the stdlib `sqlite3`, with sqlite-vec's vec0 where it is installed.

The memory bank's vector index (L4) is sqlite-vec's `vec0` virtual table, a loadable extension
that the optional extra `picoflow[vectors]` installs. Many Pythons (pyenv builds, for one) are
compiled without `Connection.enable_load_extension`, so where it is missing vec0 is registered
with SQLite's `sqlite3_auto_extension`, called through ctypes on the SQLite library the stdlib
`_sqlite3` module itself uses: every connection that library opens from then on has vec0.

Why not a second SQLite driver (sqlean-py, pysqlite3-binary, apsw)? Each bundles its own copy
of SQLite, and two copies in one process that open the same file do not see each other's POSIX
locks: closing a file in one drops the other's locks, which corrupts a database (SQLite's "How
To Corrupt", 2.2.1). The store's own tests, which open its file with `sqlite3` to look inside,
failed with "disk I/O error" under sqlean. One library, one set of locks.

A connection opened here with the index on is an `IndexedConnection`, so the bank knows which
of its connections may use the index (`has_index`); `use_index(False)` opens plain ones, as on
a machine without the extra (the tests of the Python path, the benchmark without the index).
"""

from __future__ import annotations

import ctypes
import glob
import logging
import sqlite3
import threading
from contextlib import closing
from typing import Any

__all__ = ["IndexedConnection", "available", "connect", "has_index", "use_index"]

logger = logging.getLogger(__name__)


class IndexedConnection(sqlite3.Connection):
    """A connection opened with vec0 loaded: the bank may use its vector index."""


_wanted = True  # `use_index(False)` turns the index off for connections opened afterwards
_state: dict[str, bool] = {}  # "loaded": vec0 is available to every connection (auto extension)
_once = threading.Lock()  # connections are opened on the store's worker threads


def _vec_init_of(path_stem: str) -> Any:
    """sqlite-vec's entry point, from its shared library in the wheel."""
    (library, *_) = glob.glob(path_stem + ".*")
    return ctypes.CDLL(library).sqlite3_vec_init


def _register() -> bool:
    """Register vec0 as an automatic extension of the stdlib's SQLite, once; False if it cannot."""
    try:
        import _sqlite3

        import sqlite_vec  # type: ignore[import-untyped]  # the optional extra
    except ImportError:
        return False
    try:
        init = _vec_init_of(sqlite_vec.loadable_path())
        sqlite = ctypes.CDLL(_sqlite3.__file__)  # resolves to the SQLite `_sqlite3` links
        sqlite.sqlite3_auto_extension.argtypes = [ctypes.c_void_p]
        sqlite.sqlite3_cancel_auto_extension.argtypes = [ctypes.c_void_p]
        entry = ctypes.cast(init, ctypes.c_void_p)
        if sqlite.sqlite3_auto_extension(entry) != 0:
            return False
    except (OSError, AttributeError, ValueError) as exc:  # no library, or symbols not exported
        logger.warning("sqlite-vec is installed but cannot be loaded: %s", exc)
        return False
    try:  # vec0 that fails to start would make every connection fail to open: try one first
        with closing(sqlite3.connect(":memory:")) as probe:
            probe.execute("SELECT vec_version()").fetchone()
    except sqlite3.Error as exc:
        sqlite.sqlite3_cancel_auto_extension(entry)
        logger.warning("sqlite-vec is installed but this SQLite cannot run it: %s", exc)
        return False
    return True


def available() -> bool:
    """Whether the extra is installed and vec0 runs on this Python's SQLite."""
    if "loaded" not in _state:
        with _once:
            if "loaded" not in _state:
                _state["loaded"] = _register()
    return _state["loaded"]


def use_index(wanted: bool) -> None:
    """Use the vector index in connections opened from now on (if `available()`).

    For tests and benchmarks of the Python path on a machine that has the extra; a store must
    not change its mind while it is open, so call it before a store opens its file.
    """
    global _wanted
    _wanted = wanted


def connect(path: str, **options: Any) -> sqlite3.Connection:
    """`sqlite3.connect(path, **options)`; an `IndexedConnection` where the index is used."""
    if _wanted and available():
        options["factory"] = IndexedConnection
    db: sqlite3.Connection = sqlite3.connect(path, **options)
    return db


def has_index(db: sqlite3.Connection) -> bool:
    """Whether the bank may use the vector index on this connection."""
    return isinstance(db, IndexedConnection)
