"""An app process for the K8 kill -9 scenario: it runs a keyed turn and stops before its save.

    python killed_effect_worker.py SQLITE_URL SESSION_ID

It sends "book Inn 100" (under the approval limit: the tool runs at once) with the
idempotency key "kill-1". The booking tool records each run in the file PICOFLOW_TEST_RUNS
names; before the turn's save the worker prints `before save` and waits for a line on stdin
that never comes: the test kills it there with SIGKILL, after the effect and before the save.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: support

from picoflow.stores import SQLiteStore  # noqa: E402
from support.approval_flows import booking_engine  # noqa: E402


class PausingStore(SQLiteStore):
    """Stops before the first save, so the test can kill the process at exactly that point."""

    async def save(self, doc: dict[str, Any], expected_revision: int, **kw: Any) -> int:
        print("before save", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        return await super().save(doc, expected_revision, **kw)


async def main(url: str, session_id: str) -> None:
    engine = booking_engine(PausingStore(url.removeprefix("sqlite:///")))
    print("ready", flush=True)
    result = await engine.run("BookingFlow", "book Inn 100", session_id, idempotency_key="kill-1")
    print(f"done {result.success}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:3]))
