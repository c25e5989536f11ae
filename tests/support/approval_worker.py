"""Another app process for the K3 tests: it resolves an approval on a shared SQLite file.

    python approval_worker.py SQLITE_URL SESSION_ID APPROVAL_ID DECISION

It prints the TurnResult's `success`, `message` and `error` as one JSON object. The booking
tool records its runs in the file that PICOFLOW_TEST_RUNS names, as in the test process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: support

from picoflow.stores import from_url  # noqa: E402
from support.approval_flows import booking_engine  # noqa: E402


async def main(url: str, session_id: str, approval_id: str, decision: str) -> None:
    engine = booking_engine(from_url(url))
    try:
        result = await engine.resolve_approval(session_id, approval_id, decision, by="worker")
    finally:
        await engine.aclose()
    print(json.dumps({"success": result.success, "message": result.message, "error": result.error}))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
