"""An app process for the K3 kill -9 scenario: it resolves an approval and stops before a save.

    python killed_approval_worker.py SQLITE_URL SESSION_ID APPROVAL_ID PAUSE_AT

It approves the approval; before its save number PAUSE_AT (1: the claim, 2: the tool's result,
3: the model's reply) it prints `before save N` and waits for a line on stdin that never comes:
the test kills it there with SIGKILL. The booking tool records each run in the file that
PICOFLOW_TEST_RUNS names.
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
    """Stops before one save, so the test can kill the process at exactly that point."""

    def __init__(self, path: str, pause_at: int) -> None:
        super().__init__(path)
        self.pause_at = pause_at
        self.saves = 0

    async def save(self, doc: dict[str, Any], expected_revision: int) -> int:
        self.saves += 1
        if self.saves == self.pause_at:
            print(f"before save {self.saves}", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
        return await super().save(doc, expected_revision)


async def main(url: str, session_id: str, approval_id: str, pause_at: str) -> None:
    store = PausingStore(url.removeprefix("sqlite:///"), int(pause_at))
    engine = booking_engine(store)
    print("ready", flush=True)
    result = await engine.resolve_approval(session_id, approval_id, "approve", by="worker")
    print(f"done {result.success}", flush=True)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
