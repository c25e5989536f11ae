"""The session document (P1): build it, read it into a flow, write a flow back into it.

The document is plain JSON with stable top-level keys, because people query it in MongoDB.
Messages are stored in LangChain's `message_to_dict` form. Serialised messages are cached per
message object, so a turn only serialises what it added: the cost of a save does not grow with
the conversation beyond copying references.
"""

from __future__ import annotations

import pickle
import secrets
from datetime import datetime, timedelta
from typing import Any, Literal, NotRequired, TypedDict

from langchain_core.messages import BaseMessage, message_to_dict, messages_from_dict

from picoflow._internal.effects import dump_effects, load_effects
from picoflow._internal.live_history import LiveHistory, unchanged_since_sync
from picoflow._internal.people_records import dump_people, load_people
from picoflow._internal.session_log import write_logs
from picoflow._internal.state import is_session_id, now_iso
from picoflow._internal.usage import Usage as Usage  # re-exported: the type of `usage`
from picoflow._internal.usage import add_counters, empty_usage
from picoflow.errors import StoreError
from picoflow.flow import Flow
from picoflow.memory import Namespace
from picoflow.models import describe_model
from picoflow.stores.base import SavedMessages, encode_new, unchanged

__all__ = [
    "SCHEMA_VERSION",
    "SessionDocument",
    "new_session_id",
    "is_session_id",
    "new_document",
    "load_flow",
    "dump_flow",
    "empty_usage",
    "add_usage",
    "is_expired",
    "continuation",
]

SCHEMA_VERSION = 1
MAX_WARNINGS = 100

RunStatus = Literal["running", "completed", "aborted"]


class SessionDocument(TypedDict):
    """The shape of a stored session; every key is part of the contract (P1)."""

    id: str
    schema_version: int
    revision: int
    flow: str
    run_status: RunStatus
    created_at: str
    updated_at: str
    expires_at: str | None
    context: dict[str, Any]
    current_step: str | None
    sequence: list[str]
    steps: dict[str, dict[str, Any]]
    memory: dict[str, dict[str, Any]]
    usage: dict[str, dict[str, int]]
    warnings: list[dict[str, str]]
    owner: NotRequired[str]  # H4: only in sessions created with an owner
    approvals: NotRequired[list[dict[str, Any]]]  # K1: only once a tool asked for approval
    operator: NotRequired[dict[str, Any] | None]  # K6: only once a step handed off
    idempotency: NotRequired[dict[str, Any]]  # O4, K5: results of keyed turns, saved with them
    sequence_levels: NotRequired[list[int]]  # V2: only once a nested run is in `sequence`
    decision_usage: NotRequired[dict[str, int]]  # D3: only once a decision step decided


def new_session_id() -> str:
    """An unguessable id (144 random bits, URL-safe) (P5) that starts with a letter or digit.

    An id starting with `-` reads as an option on a command line (`--session -x...` is an
    argparse error), so such draws are skipped; that costs well under one bit of the 144.
    """
    while True:
        session_id = secrets.token_urlsafe(18)
        if session_id[0].isalnum():
            return session_id


def add_usage(stored: Usage, added: Usage) -> Usage:
    """A session's usage after a save: the stored counters plus what the save adds (M10)."""
    totals = {kind: dict(counters) for kind, counters in stored.items()}
    for kind, counters in added.items():
        for key, value in counters.items():
            totals[kind][key] = totals[kind].get(key, 0) + value
    return totals


def new_document(session_id: str, flow_name: str, config: dict[str, Any] | None) -> dict[str, Any]:
    """A brand-new session; the run's config becomes its frozen context (F7)."""
    now = now_iso()
    doc: SessionDocument = {
        "id": session_id,
        "schema_version": SCHEMA_VERSION,
        "revision": 0,
        "flow": flow_name,
        "run_status": "running",
        "created_at": now,
        "updated_at": now,
        "expires_at": None,
        "context": {"config": config or {}},
        "current_step": None,
        "sequence": [],
        "steps": {},
        "memory": {},
        "usage": empty_usage(),
        "warnings": [],
    }
    return dict(doc)


def check_schema(doc: dict[str, Any]) -> None:
    """Refuse documents written by a newer picoflow rather than misreading them."""
    version = doc.get("schema_version")
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StoreError(
            f"Session '{doc.get('id')}' has schema_version {version!r}, but this picoflow "
            f"reads up to {SCHEMA_VERSION}. Upgrade picoflow to read it.",
            retryable=False,
        )


def is_expired(doc: dict[str, Any], now: datetime) -> bool:
    """Expiry is checked on load by the engine, whatever the store's own TTL does (P5)."""
    expires = doc.get("expires_at")
    if not expires:
        return False
    return datetime.fromisoformat(expires.replace("Z", "+00:00")) <= now


def continuation(
    doc: dict[str, Any] | None, now: datetime
) -> Literal["continue", "new", "expired"]:
    """Whether a turn continues this stored session (P5): the one rule for turns and previews.

    "new": there is nothing to continue (no document, or a completed or closed session), so a
    turn starts a new session; "expired": it was running, but its time is up. A document
    written by a newer picoflow raises `StoreError` instead of being misread.
    """
    if doc is None or doc.get("run_status") != "running":
        return "new"
    check_schema(doc)
    return "expired" if is_expired(doc, now) else "continue"


def expiry(now: datetime, ttl: timedelta | None) -> str | None:
    """The ISO expiry stamp for a save at `now`, or None without a TTL."""
    if ttl is None:
        return None
    return (now + ttl).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def load_flow(flow: Flow, doc: dict[str, Any], spaces: dict[str, Namespace] | None = None) -> None:
    """Fill a freshly built flow with a stored session.

    `spaces` are live namespaces of this exact document kept by the engine's cache; they are
    copied (the lists, not the messages, which are never mutated) instead of parsed again.
    Context and states are copied too: the cached document must never change.
    """
    session = flow._session
    session.doc = doc
    session.session_id = doc["id"]
    session.current = doc["current_step"]
    session.sequence = list(doc["sequence"])
    session.levels = _levels(doc)
    session.completed = doc["run_status"] == "completed"
    session.context = _copy_json(doc["context"]) if spaces else doc["context"]
    for name, entry in doc["steps"].items():
        state = entry.get("state") or {}
        session.states[name] = _copy_json(state) if spaces else state
    load_people(session, doc)
    load_effects(session, doc)
    target = flow.get_memory().namespaces()
    if spaces:
        for namespace, record in spaces.items():
            target[namespace] = _copy_namespace(record)
        return
    for namespace, entry in doc["memory"].items():
        target[namespace] = _load_namespace(entry)


def _levels(doc: dict[str, Any]) -> dict[int, int]:
    """The nesting levels above 1 of `sequence`, by position (absent: all entries level 1)."""
    stored = doc.get("sequence_levels") or []
    count = len(doc["sequence"])
    return {i: level for i, level in enumerate(stored[:count]) if level != 1}


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (S5 keeps state and context JSON); pickle is 3x deepcopy."""
    return pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))


def _load_namespace(entry: dict[str, Any]) -> Namespace:
    dicts = entry["messages"]
    messages = messages_from_dict(dicts)
    record = Namespace(
        messages=messages,
        summary=entry.get("summary"),
        summary_generation=entry.get("summary_generation", 0),
        archived=entry.get("archived", 0),
        dropped_facts=entry.get("dropped_facts", 0),
        summary_usage=dict(entry.get("summary_usage") or {}),
        summary_range=entry.get("summary_range"),
    )
    _remember(record, messages, list(dicts))
    return record


def _copy_namespace(record: Namespace) -> Namespace:
    return Namespace(
        messages=_copy_history(record.messages),
        summary=record.summary,
        summary_generation=record.summary_generation,
        archived=record.archived,
        dropped_facts=record.dropped_facts,
        summary_usage=dict(record.summary_usage),
        summary_range=record.summary_range,
        synced=record.synced,
    )


def _copy_history(messages: list[BaseMessage]) -> LiveHistory:
    if type(messages) is LiveHistory:
        return messages.copy_history()
    return LiveHistory(messages)


def dump_flow(
    flow: Flow, doc: dict[str, Any], ttl: timedelta | None, now: datetime
) -> dict[str, Any]:
    """The document after this turn: a new dict; `doc` (the loaded one) is not changed."""
    session = flow._session
    out = dict(doc)
    out["updated_at"] = now_iso()
    out["expires_at"] = expiry(now, ttl)
    out["run_status"] = "completed" if session.completed else "running"
    out["context"] = session.context
    out["current_step"] = session.current
    out["sequence"] = list(session.sequence)
    dump_people(session, out)
    dump_effects(session, out)
    out.pop("sequence_levels", None)
    if session.levels:
        levels = session.levels
        out["sequence_levels"] = [levels.get(i, 1) for i in range(len(session.sequence))]
    out["steps"] = {name: _dump_step(flow, name) for name in flow.steps}
    out["memory"] = {
        name: _dump_namespace(record) for name, record in flow.get_memory().namespaces().items()
    }
    if session.warnings:
        stamp = now_iso()
        warnings = list(doc["warnings"]) + [{"at": stamp, "message": m} for m in session.warnings]
        out["warnings"] = warnings[-MAX_WARNINGS:]
    else:
        out["warnings"] = list(doc["warnings"][-MAX_WARNINGS:])
    write_logs(doc, out, session.logs)  # U5: log, error, debug
    if session.decision_usage:  # D3: apart from the chat `usage`, which the commit adds
        out["decision_usage"] = add_counters(doc.get("decision_usage"), session.decision_usage)
    return out


def _dump_step(flow: Flow, name: str) -> dict[str, Any]:
    state = {k: v for k, v in flow._session.states.get(name, {}).items() if k != "_transient"}
    model = flow.steps[name]._model
    return {"state": state, "model": describe_model(model) if model is not None else None}


def _dump_namespace(record: Namespace) -> dict[str, Any]:
    out = {
        "messages": _dump_messages(record),
        "summary": record.summary,
        "summary_generation": record.summary_generation,
        "archived": record.archived,
        "dropped_facts": record.dropped_facts,
        "summary_usage": dict(record.summary_usage),
    }
    if record.summary_range is not None:  # M16; absent until the first summary
        out["summary_range"] = dict(record.summary_range)
    return out


def _dump_messages(record: Namespace) -> SavedMessages:
    """Serialise a history, reusing the stored dicts of the messages saved last time.

    `encode_new` does the reuse, so a save costs what the turn added. The list says what it
    kept of the last one, so the checker and the store reuse their work without a pass of
    their own over the history.
    """
    messages = record.messages
    old_messages, old_dicts = record.synced
    keep = unchanged_since_sync(messages, old_messages)
    if keep is None:
        found = unchanged(messages, old_messages)
    else:
        found = keep, bool(messages) and bool(old_messages) and messages[0] is old_messages[0]
    dicts = encode_new(messages, record.synced, _serialise, found)
    if isinstance(old_dicts, SavedMessages):
        saved = SavedMessages(dicts, base=old_dicts, kept=found)
        old_dicts.forget_base()
    else:
        saved = SavedMessages(dicts)
    _remember(record, messages, saved)
    return saved


def _serialise(message: BaseMessage) -> dict[str, Any]:
    # JSON validity is checked by the store when it encodes the document (P3: the turn fails
    # there, before anything is written).
    return message_to_dict(message)


def _remember(record: Namespace, messages: list[BaseMessage], dicts: list[dict[str, Any]]) -> None:
    synced = list(messages)
    record.synced = (synced, dicts)
    if type(record.messages) is LiveHistory:
        record.messages.mark_synced(synced)
