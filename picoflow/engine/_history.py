"""The history part of an engine (W1-W5), kept apart from the turn machinery.

`FlowEngine` holds one and delegates to it; it delegates in turn to
`picoflow.engine._revisions.Revisions` (history, rewind, undo, fork, purge, forget), adds the
idempotency keys (O4) and, for `edit_message`, runs a turn through the engine's turn runner.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from picoflow._internal.call_keys import IDEMPOTENCY
from picoflow._internal.results import TurnResult
from picoflow.engine._idempotent import (
    KEY_REUSED,
    IdempotentTurn,
    change_once,
    replayed_turn,
    run_keyed,
)
from picoflow.engine._kept_effects import forcing
from picoflow.engine._request import ReadsSessions, RunsTurns, TurnRequest
from picoflow.engine._revisions import Revisions
from picoflow.session import is_session_id
from picoflow.session._keeper import SessionKeeper
from picoflow.stores.base import JSONDict, KeepsMemoryBank

__all__ = ["HistoryActions"]

_T = TypeVar("_T")


class HistoryActions:
    """History, rewind, undo, fork, edit, purge and forget_principal of an engine.

    Its dependencies are explicit: the `Revisions` and `SessionKeeper`, the store's memory-bank
    ability (or None: `forget_principal` then has no bank to empty), the engine's turn
    runner (an edit is a turn), `get_session` (the owner check) and the first flow's name.
    """

    def __init__(
        self,
        revisions: Revisions,
        sessions: SessionKeeper,
        bank: KeepsMemoryBank | None,
        *,
        run_turn: RunsTurns,
        get_session: ReadsSessions,
        first_flow: str,
    ) -> None:
        self._revisions = revisions
        self._sessions = sessions
        self._bank = bank
        self._run_turn = run_turn
        self.get_session = get_session
        self._first_flow = first_flow

    async def history(
        self, session_id: str, *, limit: int | None = None, owner: str | None = None
    ) -> list[JSONDict]:
        """The session's kept revisions, newest first (W1); [] for an unknown session."""
        return await self._revisions.list(session_id, limit, owner)

    async def rewind(
        self,
        session_id: str,
        to_revision: int,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> int:
        """Make the session what it was after `to_revision`, as a new revision; return it (W2)."""
        return await self._change(
            idempotency_key,
            owner,
            ("rewind", session_id, to_revision, *_forced(force)),
            lambda: self._revisions.rewind(session_id, to_revision, owner, force),
            lambda reply: int(reply["revision"]),
        )

    async def undo(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> int:
        """Rewind to before the last turn (W2); undoing again undoes the turn before it."""
        return await self._change(
            idempotency_key,
            owner,
            ("undo", session_id, *_forced(force)),
            lambda: self._revisions.undo(session_id, owner, force),
            lambda reply: int(reply["revision"]),
        )

    async def fork(
        self,
        session_id: str,
        at_revision: int | None = None,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> str:
        """A new session copied from `at_revision` (default: the current one); its id (W3)."""
        return await self._change(
            idempotency_key,
            owner,
            ("fork", session_id, at_revision, *_forced(force)),
            lambda: self._revisions.fork(session_id, at_revision, owner, force),
            lambda reply: str(reply["session"]),
            in_copy=True,
        )

    async def edit_message(
        self,
        session_id: str,
        revision: int,
        text: str,
        *,
        owner: str | None = None,
        config: dict[str, Any] | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> TurnResult:
        """Run turn `revision` again with `text` instead of its message (W4).

        Not past an effect unless forced (K9): the refusal is the result's error.
        """
        doc = await self.get_session(session_id, owner=owner) if is_session_id(session_id) else None
        # An unknown session fails inside the turn (SessionNotFoundError) with any flow name.
        flow_name = doc["flow"] if doc is not None else self._first_flow
        request = TurnRequest(flow_name, text, session_id, config, owner=owner, edit=revision)

        async def edit() -> TurnResult:
            with forcing(force):
                return await self._run_turn(request)

        if idempotency_key is None:
            return await edit()
        turn = IdempotentTurn.of(owner, idempotency_key, "edit", session_id, revision, text, config)
        token = IDEMPOTENCY.set(idempotency_key)
        try:
            return await run_keyed(
                self._sessions,
                turn,
                (session_id, owner),
                edit,
                replayed=replayed_turn,
                refused=lambda why: TurnResult(
                    session_id, why, False, False, None, error=KEY_REUSED
                ),
            )
        finally:
            IDEMPOTENCY.reset(token)

    async def _change(
        self,
        key: str | None,
        owner: str | None,
        request: tuple[Any, ...],
        change: Callable[[], Awaitable[_T]],
        replay: Callable[[JSONDict], _T],
        *,
        in_copy: bool = False,
    ) -> _T:
        """Run a history change, once per idempotency key when it has one (O4).

        `request` is (action, session id, ...). The record is kept in that session, or, for a
        fork (`in_copy`), in the copy, whose id the key derives.
        """
        if key is None:
            return await change()
        turn = IdempotentTurn.of(owner, key, *request)
        holder = turn.derived_id if in_copy else request[1]
        return await change_once(self._sessions, turn, (holder, owner), change, replay)

    async def purge(self) -> int:
        """Delete every expired session now, with its history and archive; how many (W5)."""
        return await self._revisions.purge()

    async def forget_principal(self, principal: str) -> int:
        """Delete every session, revision, archived message and memory entry of `principal` (W5)."""
        gone = await self._revisions.forget_principal(principal)
        if self._bank is not None and principal:  # L5: where the store keeps a bank
            await self._bank.bank_forget(principal)
        return int(gone)


def _forced(force: bool) -> tuple[str, ...]:
    """What `force` adds to a keyed change's request (nothing unforced: old keys still match)."""
    return ("force",) if force else ()
