"""K3 under kill -9: a process killed between an approval and its tool's recorded result leaves
the approval pending, claimed (`running`) or resolved, and the tool never runs twice.

The worker (support/killed_approval_worker.py) approves, and is killed with SIGKILL just before
one of its three saves: the claim (the approval stays pending), the tool's result (the tool ran,
the claim is stored: `running`), or the model's reply (the result is recorded). A new engine
then resolves the same approval: it runs the tool only if nobody claimed it, and the tool, which
counts its own runs, has run exactly once at the end. CI kills at the middle point, the one that
matters most; `--long` at all three.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.approval_flows import RUNS_FILE, booking_engine, runs
from support.killed import kill_when_printed

from picoflow.stores import SQLiteStore

HERE = Path(__file__).resolve().parent
WORKER = HERE.parent / "support" / "killed_approval_worker.py"
STATE_AT = {1: "pending", 2: "running", 3: "resolved"}
RUNS_BEFORE_RECOVERY = {1: 0, 2: 1, 3: 1}


def _kill_before_save(url: str, session_id: str, approval_id: str, pause_at: int) -> None:
    args = [url, session_id, approval_id, str(pause_at)]
    kill_when_printed(WORKER, args, ["ready", f"before save {pause_at}"])


async def test_k3_kill_9_between_approval_and_result_never_runs_the_tool_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    points = [1, 2, 3] if request.config.getoption("--long") else [2]
    for pause_at in points:
        log = tmp_path / f"runs-{pause_at}.jsonl"
        monkeypatch.setenv(RUNS_FILE, str(log))
        path = tmp_path / f"sessions-{pause_at}.db"
        asking = booking_engine(SQLiteStore(path))
        first = await asking.run("BookingFlow", "book Ritz 900", config={"limit": 500})
        session_id, approval_id = first.session_id or "", first.pending_approvals[0]["id"]
        await asking.aclose()

        _kill_before_save(f"sqlite:///{path}", session_id, approval_id, pause_at)

        recovering = booking_engine(SQLiteStore(path))
        stored = await recovering.get_session(session_id)
        assert stored is not None
        assert stored["approvals"][0]["status"] == STATE_AT[pause_at]
        assert len(runs(log)) == RUNS_BEFORE_RECOVERY[pause_at]
        recovering.approval_lease = 0  # the killed resolver is gone: take over its claim now
        done = await recovering.resolve_approval(session_id, approval_id, "approve")
        again = await recovering.resolve_approval(session_id, approval_id, "approve")
        await recovering.aclose()

        assert done.success and again.message == done.message
        assert len(runs(log)) == 1, f"killed before save {pause_at}"
        if pause_at == 2:  # claimed, tool ran, result lost with the process: said so, not re-run
            assert done.message.startswith("Result: Interrupted: this call of book was approved")
        else:
            assert done.message == "Result: Booked Ritz for 900."
