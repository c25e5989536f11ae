"""Idempotent turns across workers (H5, O4): the first result is saved with the turn itself.

A client that timed out cannot know whether its turn ran, so it sends the request again with
the same idempotency key, maybe to another worker. The worker that ran the turn may even have
been killed after its save and before its reply. So the result of a keyed turn is kept *in the
session document*, under `idempotency`, and written by the very save that stores the turn:
one atomic write, in every store, so whichever worker gets the retry finds the turn and its
result together, or neither.

    doc["idempotency"] = {
        "<slot>": {"request": "<fingerprint>", "at": "2026-12-02T03:00:00.000Z",
                   "reply": {"message": "...", "completed": false, "step": "PresentStep",
                             "content_type": "text/plain"}},
    }

The slot is a digest of (owner, key), so two principals may pick the same key. A retry that
continues a session finds the record in that session. A retry of a request that *started* a
session has no session id to send; so a keyed turn that starts a session gives it an id derived
from the owner, the key and the request (`derived_id`), and the retry looks there. The request
is part of it so that knowing a key is not enough to find a session: it takes the message too.

Only successful turns are saved (P3), so only they are recorded: a failed turn's retry runs;
except a turn that failed after a tool with effects ran (K8), which is saved up to that tool's
result and recorded with its `error`, so its retry replays the failure and runs nothing again.
Records older than `RECORD_TTL` are dropped when the session is next saved with a key, and a
session keeps at most `MAX_RECORDS`.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol, TypeVar

from picoflow._internal.results import TurnResult
from picoflow._internal.state import now_iso
from picoflow.engine._request import RunsTurns, TurnRequest
from picoflow.errors import (
    IdempotencyKeyReusedError,
    PicoflowError,
    RevisionNotFoundError,
    SessionConflictError,
)
from picoflow.flow import Flow
from picoflow.session import is_session_id, new_session_id
from picoflow.session._keeper import SessionKeeper
from picoflow.stores.base import JSONDict

__all__ = [
    "IdempotentTurn",
    "KEY_REUSED",
    "KeyedTurns",
    "RECORDS",
    "change_once",
    "current_turn",
    "fingerprint",
    "first_reply",
    "keep_reply",
    "recorded_reply",
    "records_with",
    "replay_if_recorded",
    "replayed_turn",
    "run_keyed",
    "session_id_for_new",
]

RECORDS = "idempotency"  # the session document's key
RECORD_TTL = timedelta(hours=24)
MAX_RECORDS = 16
# TurnResult.error of a key sent again with another request (the HTTP API answers 422).
KEY_REUSED = "IdempotencyKeyReused"


def fingerprint(*parts: Any) -> bytes:
    """What identifies a request, so a key reused for another request can be refused.

    A digest, not the request: thousands of kept keys must not hold thousands of messages.
    """
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


@dataclass(slots=True)
class IdempotentTurn:
    """One keyed request: where its record goes and what it must match."""

    key: str
    slot: str  # digest of (owner, key)
    request: str  # digest of (flow, message, session id, config)
    derived_id: str  # the id a session started by this request gets
    use_derived: bool = True  # False once the derived id is found taken by another session

    @classmethod
    def of(cls, owner: str | None, key: str, *request: Any) -> IdempotentTurn:
        """The turn for `key` sent by `owner` with `request` (flow, message, session, config)."""
        slot = fingerprint("slot", owner, key).hex()[:32]
        request_print = fingerprint(*request).hex()[:32]
        digest = fingerprint("session", owner, key, request_print)
        derived = "i" + base64.urlsafe_b64encode(digest).decode()[:23]
        return cls(key, slot, request_print, derived)


current_turn: ContextVar[IdempotentTurn | None] = ContextVar(
    "picoflow_idempotent_turn", default=None
)
# Set by the engine around one keyed turn, so the two places that need it (the new session's
# id, the save) read it without every function of the turn passing it along.


def recorded_reply(doc: JSONDict | None, turn: IdempotentTurn) -> JSONDict | None:
    """The first result of this key in `doc`, or None.

    Raises:
        IdempotencyKeyReusedError: the key's record is for another request.
    """
    records = doc.get(RECORDS) if doc is not None else None
    record = records.get(turn.slot) if isinstance(records, dict) else None
    if not isinstance(record, dict) or _expired(record, datetime.now(UTC)):
        return None
    if record.get("request") != turn.request:
        raise IdempotencyKeyReusedError(turn.key)
    reply: JSONDict = record["reply"]
    return reply


def replay_if_recorded(doc: JSONDict | None) -> TurnResult | None:
    """The key's first result, if the session a keyed turn just loaded holds it; else None.

    The retry checked before it ran, but it may then have waited for its session (the lock of
    this process, or the lease of `concurrent_turns="queue"`) while the first request ran and
    saved: it must replay that result, not store the message a second time.
    """
    turn = current_turn.get()
    if turn is None or doc is None:
        return None
    try:
        reply = recorded_reply(doc, turn)
    except IdempotencyKeyReusedError as exc:
        return TurnResult(doc["id"], str(exc), False, False, None, error=KEY_REUSED)
    return None if reply is None else replayed_turn(doc["id"], reply)


def session_id_for_new() -> str:
    """The id of a session a turn starts: derived from its key when it has one (see above)."""
    turn = current_turn.get()
    if turn is not None and turn.use_derived:
        return turn.derived_id
    return new_session_id()


def keep_reply(doc: JSONDict, flow: Flow, reply: str, error: str | None = None) -> JSONDict:
    """`doc` with this turn's result recorded under its key; `doc` itself as it was.

    The save that stores the turn writes the record too (one atomic write). `error` is set for
    a turn that stopped after a tool with effects ran (K8): its retry replays the failure.
    """
    turn = current_turn.get()
    if turn is None:
        return doc
    session = flow._session
    reply_of = {
        "message": reply,
        "completed": session.completed,
        "step": session.current,
        "content_type": session.content_type,
    }
    if error is not None:
        reply_of["error"] = error
    return {**doc, RECORDS: records_with(doc.get(RECORDS), turn, reply_of)}


def records_with(old: Any, turn: IdempotentTurn, reply: JSONDict) -> dict[str, JSONDict]:
    """The records a keyed save writes: the unexpired ones of `old`, and `turn`'s `reply`.

    At most `MAX_RECORDS`, the newest kept; `old` is not changed.
    """
    now = datetime.now(UTC)
    records = {
        slot: record
        for slot, record in (old.items() if isinstance(old, dict) else ())
        if isinstance(record, dict) and not _expired(record, now) and slot != turn.slot
    }
    records[turn.slot] = {"request": turn.request, "at": now_iso(), "reply": reply}
    return dict(list(records.items())[-MAX_RECORDS:])  # insertion order: oldest first


def _expired(record: JSONDict, now: datetime) -> bool:
    try:
        at = datetime.fromisoformat(str(record.get("at")).replace("Z", "+00:00"))
    except ValueError:
        return True
    return at + RECORD_TTL < now


async def first_reply(
    sessions: SessionKeeper, turn: IdempotentTurn, session_id: str | None, owner: str | None
) -> tuple[str, JSONDict] | None:
    """(session id, reply) of the key's first result, wherever a retry must look, or None.

    In the session the request names, if any; then, unless that session is one the turn
    continues, in the session the request would have started. A store that cannot be read
    finds nothing: the turn then runs, and fails with the store's error as any turn would.

    Raises:
        IdempotencyKeyReusedError: the key's record is for another request.
    """
    try:
        if session_id is not None:
            doc, _ = await sessions.load(session_id)
            if doc is not None and _owned(doc, owner):
                reply = recorded_reply(doc, turn)
                if reply is not None:
                    return session_id, reply
                if doc.get("run_status") == "running":
                    return None  # the turn continues this session: nowhere else to look
        doc, _ = await sessions.load(turn.derived_id)
    except PicoflowError:
        return None
    reply = recorded_reply(doc, turn) if doc is not None and _owned(doc, owner) else None
    if doc is not None and reply is None:
        turn.use_derived = False  # taken (by a record that expired): start with a random id
    return None if reply is None else (turn.derived_id, reply)


def _owned(doc: JSONDict, owner: str | None) -> bool:
    return owner is None or doc.get("owner") == owner


class _Result(Protocol):
    @property
    def error(self) -> str | None: ...


_R = TypeVar("_R", bound=_Result)
_T = TypeVar("_T")


async def run_keyed(
    sessions: SessionKeeper,
    turn: IdempotentTurn,
    where: tuple[str | None, str | None],
    run: Callable[[], Awaitable[_R]],
    *,
    replayed: Callable[[str, JSONDict], _R],
    refused: Callable[[str], _R],
) -> _R:
    """Replay the key's first result if the store has it, else run the turn with its record.

    `where` is (session id, owner) of the request. A retry that raced the first one (on
    another worker) loses at the save with a conflict, and then finds the first one's result.
    """
    session_id, owner = where
    try:
        first = await first_reply(sessions, turn, session_id, owner)
        if first is None:
            token = current_turn.set(turn)
            try:
                result = await run()
            finally:
                current_turn.reset(token)
            if result.error != "SessionConflictError":
                return result
            first = await first_reply(sessions, turn, session_id, owner)
            if first is None:
                return result
    except IdempotencyKeyReusedError as exc:
        return refused(str(exc))
    return replayed(*first)


async def change_once(
    sessions: SessionKeeper,
    turn: IdempotentTurn,
    where: tuple[str, str | None],
    run: Callable[[], Awaitable[_T]],
    replay: Callable[[JSONDict], _T],
) -> _T:
    """A keyed history change (rewind, undo, fork) run once, or its first result replayed.

    `where` is (the session whose document holds the record, owner). The change itself
    writes the record (`current_turn` tells it the key); a retry that waited for the
    session's lock finds it there, and one that raced the first on another worker loses at
    the save with a conflict (or, an undo, finds nothing left to undo) and then finds it.

    Raises:
        IdempotencyKeyReusedError: the key's record is for another request.
    """
    holder, owner = where

    async def recorded() -> JSONDict | None:
        doc, _ = await sessions.load(holder)
        reply = recorded_reply(doc, turn) if doc is not None and _owned(doc, owner) else None
        if doc is not None and reply is None and holder == turn.derived_id:
            turn.use_derived = False  # taken (by a record that expired): a random id then
        return reply

    # A rewind or undo looks for its record itself, in the session it loads anyway
    # (`Revisions`); a fork's record is in the copy, which only this looks in.
    if holder == turn.derived_id and (first := await recorded()) is not None:
        return replay(first)
    token = current_turn.set(turn)
    try:
        return await run()
    except (SessionConflictError, RevisionNotFoundError):
        # The first request changed the session meanwhile: this one lost the save, or (an
        # undo) found no turn left to undo, having looked after the first one's save.
        first = await recorded()
        if first is None:
            raise
        return replay(first)
    finally:
        current_turn.reset(token)


class KeyedTurns:
    """The engine's keyed turns (O4): run once with the record, or replay the first result.

    Given the `SessionKeeper` (where a retry looks for the first result) and the engine's turn
    runner, not the engine: this part runs a turn only through `run_turn`.
    """

    def __init__(self, sessions: SessionKeeper, run_turn: RunsTurns) -> None:
        self._sessions = sessions
        self._run_turn = run_turn

    async def run(self, key: str, request: TurnRequest) -> TurnResult:
        """A turn whose result is saved with it; a retry of it gets that result instead."""
        turn = IdempotentTurn.of(request.owner, key, *request.fingerprint_parts())
        session_id = request.session_id if is_session_id(request.session_id) else None

        def refused(text: str) -> TurnResult:
            return TurnResult(session_id, text, False, False, None, error=KEY_REUSED)

        return await run_keyed(
            self._sessions,
            turn,
            (request.session_id, request.owner),
            lambda: self._run_turn(request),
            replayed=replayed_turn,
            refused=refused,
        )


def replayed_turn(session_id: str, reply: JSONDict) -> TurnResult:
    """The first result of an idempotency key, as recorded with its turn (O4)."""
    error = reply.get("error")
    return TurnResult(
        session_id,
        reply["message"],
        success=error is None,
        error=error,
        completed=reply["completed"],
        step=reply["step"],
        content_type=reply["content_type"],
        replayed=True,
    )
