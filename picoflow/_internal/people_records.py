"""The records of people in the loop, as the session document keeps them (K1, K3, K6).

Two top-level keys, present only in sessions that used them, so every store keeps them as it
keeps the rest of the document and they are easy to query in MongoDB:

- `approvals`: a list of approval records. One record, from request to outcome:

      {"id": "apr_3f1c...", "status": "pending", "step": "BookStep", "tool": "book",
       "call_id": "call_1", "args": {"total": 900}, "key": "<session>:3:call_1",
       "requested_at": "...", "requested_by": "alice", "waiting_reply": "...", "held": []}

  `status` goes `pending` -> `running` (approved or edited; written before the tool runs)
  -> `resolved` (the tool's result is recorded: `decision`, `resolved_by`, `resolved_at`,
  `note`, `result`, and `reply` once the model has answered). A `running` record whose tool
  never reported back (the process died) becomes `interrupted`; its tool is never run again.
- `operator`: the handoff in progress (`since`, `note`, `step`, `messages`), or None.

A retried keyed turn is replayed from the session's `idempotency` record (`_idempotent`, O4),
written by the same save as the turn, so its tools are not called again (K5). Releases before
2026-12-02 also kept a `turns` map for this; the next save of such a session drops it.
"""

from __future__ import annotations

import copy
import secrets
from typing import Any

from picoflow._internal.live_session import LiveSession
from picoflow._internal.state import now_iso

__all__ = [
    "load_people",
    "dump_people",
    "approvals_of",
    "pending_of",
    "find_approval",
    "new_approval",
    "operator_of",
    "PEOPLE_KEYS",
    "PENDING",
    "RUNNING",
    "RESOLVED",
    "INTERRUPTED",
]

PENDING, RUNNING, RESOLVED, INTERRUPTED = "pending", "running", "resolved", "interrupted"
PEOPLE_KEYS = frozenset({"approvals", "operator"})  # top-level, only when used
MAX_SETTLED = 50  # settled approvals kept per session; pending and running ones always stay


def load_people(session: LiveSession, doc: dict[str, Any]) -> None:
    """Copy the document's records into the turn's runtime (the loaded document never changes)."""
    session.people = {
        "approvals": copy.deepcopy(doc.get("approvals") or []),
        "operator": copy.deepcopy(doc.get("operator")),
        "owner": doc.get("owner"),
    }


def dump_people(session: LiveSession, out: dict[str, Any]) -> None:
    """Write the records into the document being saved; absent keys stay absent."""
    people = session.people
    approvals = people.get("approvals") or []
    if approvals or "approvals" in out:
        out["approvals"] = copy.deepcopy(_trimmed(approvals))
    operator = people.get("operator")
    if operator is not None or "operator" in out:
        out["operator"] = copy.deepcopy(operator)
    out.pop("turns", None)  # an older release's copy of keyed turns; `idempotency` has them


def _trimmed(approvals: list[dict[str, Any]]) -> list[dict[str, Any]]:
    settled = [a for a in approvals if a["status"] in (RESOLVED, INTERRUPTED)]
    dropped = {id(a) for a in settled[:-MAX_SETTLED]} if len(settled) > MAX_SETTLED else set()
    return [a for a in approvals if id(a) not in dropped]


def approvals_of(session: LiveSession) -> list[dict[str, Any]]:
    """The session's approval records, oldest first (the live list)."""
    approvals: list[dict[str, Any]] = session.people.setdefault("approvals", [])
    return approvals


def pending_of(session: LiveSession) -> list[dict[str, Any]]:
    """Copies of the approvals that wait for a person (K4)."""
    return [_public(a) for a in approvals_of(session) if a["status"] == PENDING]


def _public(approval: dict[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in approval.items() if k != "held"}


def find_approval(session: LiveSession, approval_id: str) -> dict[str, Any] | None:
    """The live record with this id, or None."""
    return next((a for a in approvals_of(session) if a["id"] == approval_id), None)


def new_approval(
    session: LiveSession, step: str, call: dict[str, Any], args: dict[str, Any], key: str
) -> dict[str, Any]:
    """A pending approval of one tool call, added to the session."""
    approval: dict[str, Any] = {
        "id": f"apr_{secrets.token_hex(8)}",
        "status": PENDING,
        "step": step,
        "tool": call["name"],
        "call_id": call["id"],
        "args": args,
        "key": key,
        "requested_at": now_iso(),
        "requested_by": session.people.get("owner"),
        "held": [],
    }
    approvals_of(session).append(approval)
    return approval


def operator_of(session: LiveSession) -> dict[str, Any] | None:
    """The handoff in progress (K6), or None."""
    operator: dict[str, Any] | None = session.people.get("operator")
    return operator
