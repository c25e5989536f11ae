"""The history methods of `FlowEngine` (W1-W5), kept apart from the turn machinery.

`FlowEngine` inherits them; they delegate to `picoflow.engine._revisions.Revisions`
(history, rewind, undo, fork, purge, forget) and, for `edit_message`, to the engine's own turn.
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
from picoflow.engine._revisions import Revisions
from picoflow.session import is_session_id
from picoflow.session._sessions import Sessions
from picoflow.stores.base import JSONDict

__all__ = ["HistoryMethods"]

_T = TypeVar("_T")


class HistoryMethods:
    """History, rewind, undo, fork, edit, purge and forget_principal of an engine."""

    _revisions: Revisions
    _sessions: Sessions
    _store: Any
    _run: Callable[..., Any]
    get_session: Callable[..., Any]
    flow_names: Callable[[], list[str]]

    async def history(
        self, session_id: str, *, limit: int | None = None, owner: str | None = None
    ) -> list[JSONDict]:
        """The session's kept revisions, newest first (W1); [] for an unknown session.

        Each is `{"revision", "saved_at", "message", "step_before", "step_after", "reply",
        "action", "restored"}`: `action` is "turn", "edit", "rewind", "fork" or "compaction",
        `restored` the revision a rewind copied (or an edit ran on), `reply` an excerpt.
        """
        return await self._revisions.list(session_id, limit, owner)

    async def rewind(
        self,
        session_id: str,
        to_revision: int,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> int:
        """Make the session what it was after `to_revision`, as a new revision; return it (W2).

        The rewound turns stay in the history until retention removes them; token usage is
        not rewound (it was spent). Takes the session's lock and revision check like a turn:
        a turn of another process saved meanwhile makes this a `SessionConflictError`. With
        `idempotency_key` (H5, O4) the same request sent again, to any engine on the store,
        returns the first one's revision instead of rewinding again.

        Raises:
            SessionNotFoundError: no such session (or `owner` does not own it).
            RevisionNotFoundError: the session keeps no revision `to_revision`.
            SessionConflictError: another process saved the session meanwhile.
            IdempotencyKeyReusedError: the key was first sent with another request.
        """
        return await self._change(
            idempotency_key,
            owner,
            ("rewind", session_id, to_revision),
            lambda: self._revisions.rewind(session_id, to_revision, owner),
            lambda reply: int(reply["revision"]),
        )

    async def undo(
        self, session_id: str, *, owner: str | None = None, idempotency_key: str | None = None
    ) -> int:
        """Rewind to before the last turn (W2); undoing again undoes the turn before it.

        So a retried undo would undo two turns: send it with an `idempotency_key` and the
        retry returns the first undo's revision instead (H5, O4).

        Raises:
            SessionNotFoundError, SessionConflictError, IdempotencyKeyReusedError: as `rewind`.
            RevisionNotFoundError: there is no earlier turn kept to go back to.
        """
        return await self._change(
            idempotency_key,
            owner,
            ("undo", session_id),
            lambda: self._revisions.undo(session_id, owner),
            lambda reply: int(reply["revision"]),
        )

    async def fork(
        self,
        session_id: str,
        at_revision: int | None = None,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> str:
        """A new session copied from `at_revision` (default: the current one); its id (W3).

        Same owner and flow; the copy records `forked_from: {"session_id", "revision"}` and
        its history starts at the fork. Later turns of either never touch the other. With
        `idempotency_key`, a retry returns the first fork's id instead of a second copy.

        Raises:
            SessionNotFoundError, RevisionNotFoundError, IdempotencyKeyReusedError: as `rewind`.
        """
        return await self._change(
            idempotency_key,
            owner,
            ("fork", session_id, at_revision),
            lambda: self._revisions.fork(session_id, at_revision, owner),
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
    ) -> TurnResult:
        """Run turn `revision` again with `text` instead of its message, as one new revision (W4).

        The turn runs on the session as it was before that turn, and is saved against the
        current revision: if it fails (or another process saved meanwhile) the session is
        left exactly as it was, and the result says why. With `idempotency_key`, the same
        edit sent again gets the first one's result (`replayed=True`), as `run` does.
        """
        doc = await self.get_session(session_id, owner=owner) if is_session_id(session_id) else None
        # An unknown session fails inside the turn (SessionNotFoundError) with any flow name.
        flow_name = doc["flow"] if doc is not None else self.flow_names()[0]

        async def edit() -> TurnResult:
            result: TurnResult = await self._run(
                flow_name, text, session_id, config, None, owner=owner, edit=revision
            )
            return result

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
        """Delete every expired session now, with its history and archive; how many (W5).

        SQLite and memory stores also purge in the background after saves (at most every
        ten minutes); MongoDB's TTL indexes do it on the server.
        """
        return await self._revisions.purge()

    async def forget_principal(self, principal: str) -> int:
        """Delete every session, revision, archived message and memory entry of `principal` (W5).

        `principal` is the `owner` the sessions were run with (H4); its long-term memory bank
        (L5) goes too, where the store keeps one. Returns how many sessions went.
        """
        gone = await self._revisions.forget_principal(principal)
        forget = getattr(self._store, "bank_forget", None)
        if forget is not None and principal:
            await forget(principal)
        return int(gone)
