"""A MongoDB server for the store tests: SecantusDB on 127.0.0.1, or the one MONGO_URI names.

SecantusDB is a MongoDB-compatible server written in Python (a dev dependency). It runs as a
subprocess on a free loopback port with its data in a temporary directory, so nothing is left
behind; it is started once per test session and stopped at its end. `retryWrites=false` is in
its URI because SecantusDB's retryable-write bookkeeping slows writes down about tenfold.

With `MONGO_URI` set (e.g. `mongodb://localhost:27017`), the tests use that server instead; each
test still gets a database of its own, named `picoflow_test_<random>` and dropped afterwards.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pymongo import MongoClient
from pymongo.collection import Collection
from pymongo.errors import PyMongoError

START_TIMEOUT_SECONDS = 30.0


class MongoServer:
    """One reachable server: its URI, and fresh databases that are dropped after use."""

    def __init__(self, uri: str, *, local: bool) -> None:
        self.uri = uri
        self.local = local  # our own SecantusDB, started with test commands (fail points)
        self._admin: MongoClient = MongoClient(uri, serverSelectionTimeoutMS=5000)

    def fresh_database(self) -> str:
        return f"picoflow_test_{secrets.token_hex(6)}"

    def drop(self, database: str) -> None:
        self._admin.drop_database(database)

    def collection(self, database: str, name: str) -> Collection:
        """A synchronous handle, to look at what a store wrote exactly as MongoDB holds it."""
        return self._admin[database][name]

    def fail_next(self, command: str, times: int = 1, **data: object) -> None:
        """Make the server fail the next `times` runs of `command` (mongod's failCommand)."""
        self._admin.admin.command(
            {
                "configureFailPoint": "failCommand",
                "mode": {"times": times},
                "data": {"failCommands": [command], **data},
            }
        )

    def sweep_expired(self, database: str) -> int:
        """Do at once what MongoDB's TTL monitor does within a minute: delete what expired.

        Tests that expire a session on purpose race the monitor; this makes the sweep happen
        where the test wants it. SecantusDB runs its own monitor's pass; on another server the
        pass is done by hand, index by index, as the monitor would.
        """
        if self.local:
            return int(self._admin.admin.command("secantusAdmin.pruneTtl")["pruned"])
        swept, now = 0, datetime.now(UTC)
        for name in self._admin[database].list_collection_names():
            collection = self._admin[database][name]
            for index in collection.list_indexes():
                if "expireAfterSeconds" in index:
                    field = next(iter(index["key"]))
                    cutoff = now - timedelta(seconds=index["expireAfterSeconds"])
                    swept += collection.delete_many({field: {"$lt": cutoff}}).deleted_count
        return swept

    def close(self) -> None:
        self._admin.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def secantus_server(*flags: str) -> Iterator[str]:
    """Run SecantusDB on a free loopback port until the block ends; yield its URI.

    Its data and an empty config file (which stops it from reading a `secantusd.toml` lying
    around) go to a temporary directory, so the server is killed at the end instead of shut
    down gracefully (which takes two seconds), and nothing outlives the block.
    """
    port = free_port()
    uri = f"mongodb://127.0.0.1:{port}/?retryWrites=false"
    with tempfile.TemporaryDirectory(prefix="secantus-") as home, tempfile.TemporaryFile() as log:
        config = Path(home) / "secantusd.toml"
        config.write_text("")
        command = [
            sys.executable,
            "-c",
            "import sys; from secantus.cli import main; sys.exit(main())",
            *("--config", str(config), "--host", "127.0.0.1", "--port", str(port)),
            *("--storage-path", str(Path(home) / "data"), "--log-level", "WARNING", *flags),
        ]
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            _wait_for_ping(uri, process, log)
            yield uri
        finally:
            process.kill()
            process.wait()


def _wait_for_ping(uri: str, process: subprocess.Popen[bytes], log: object) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with MongoClient(uri, serverSelectionTimeoutMS=100) as client:
                client.admin.command("ping")
            return
        except PyMongoError:
            continue  # the server is still starting; each attempt waits up to 100 ms
    log.seek(0)  # type: ignore[attr-defined]
    output = log.read().decode(errors="replace")[-2000:]  # type: ignore[attr-defined]
    raise RuntimeError(f"SecantusDB did not answer a ping at {uri}:\n{output}")


@contextmanager
def mongo_server() -> Iterator[MongoServer]:
    """MONGO_URI's server if set, else a local SecantusDB with test commands enabled."""
    external = os.environ.get("MONGO_URI")
    if external:
        server = MongoServer(external, local=False)
        try:
            yield server
        finally:
            server.close()
        return
    with secantus_server("--enable-test-commands") as uri:
        server = MongoServer(uri, local=True)
        try:
            yield server
        finally:
            server.close()
