"""How the engine finds the session a turn continues (P5, H4, W4): the `SessionLoader` part."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from picoflow._internal.state import now_iso
from picoflow.errors import SessionConflictError, SessionNotFoundError
from picoflow.flow import Flow
from picoflow.memory import Namespace
from picoflow.session import continuation
from picoflow.stores.base import JSONDict

if TYPE_CHECKING:
    from picoflow._ops import Telemetry
    from picoflow.engine._revisions import Revisions
    from picoflow.session._keeper import SessionKeeper
    from picoflow.stores import Store

__all__ = ["SessionLoader", "InvalidRequestError", "is_owner"]

logger = logging.getLogger("picoflow.engine")


class InvalidRequestError(Exception):
    """Raised inside a turn for a request that cannot run as sent; never escapes `run`."""


def is_owner(doc: JSONDict, owner: str | None) -> bool:
    """H4: an owner sees only the sessions it created; no owner means a trusted caller."""
    return owner is None or doc.get("owner") == owner


class SessionLoader:
    """Load the session a turn continues, or decide that a new one starts.

    `cancel` stops a session's background housekeeping (`Housekeeping.cancel`): an expired
    session a turn finds is deleted, and nothing may still write to it.
    """

    def __init__(
        self,
        sessions: SessionKeeper,
        revisions: Revisions,
        telemetry: Telemetry,
        cancel: Callable[[str], None],
    ) -> None:
        self._sessions = sessions
        self._revisions = revisions
        self._telemetry = telemetry
        self._cancel = cancel

    @property
    def _store(self) -> Store:
        return self._sessions.store

    async def load_usable(
        self,
        flow_class: type[Flow],
        session_id: str | None,
        owner: str | None,
        edit: int | None = None,
    ) -> tuple[JSONDict | None, dict[str, Namespace] | None]:
        """The stored session to continue (and its cached namespaces), or None (P5, H4)."""
        if session_id is None and edit is not None:
            raise SessionNotFoundError(
                "None",
                "edit_message needs the id of the session whose message it edits; "
                "got None. Pass the session id that engine.history() was read from.",
            )
        if session_id is None:
            return None, None
        if edit is not None:  # W4: the session as it was before that turn
            return await self._revisions.edit_base(session_id, edit, owner), None
        with self._telemetry.operation("store.load", session_id=session_id):
            doc, spaces = await self._sessions.load(session_id)
        if doc is not None and not is_owner(doc, owner):
            return None, None  # H4: another principal's session behaves as an unknown id
        status = continuation(doc, datetime.now(UTC))
        if doc is None or status != "continue":
            if doc is not None and status == "expired":
                await self._forget_expired(doc)
            return None, None
        if doc["flow"] != flow_class.name:
            raise InvalidRequestError(
                f"Session '{session_id}' belongs to flow '{doc['flow']}', not "
                f"'{flow_class.name}'. Continue it with flow '{doc['flow']}', or omit the "
                "session id to start a new session."
            )
        return doc, spaces

    async def _forget_expired(self, doc: JSONDict) -> None:
        """Delete an expired session and its archive once a turn finds it (P5).

        Nobody can continue it any more, and its messages are personal data: keeping them until
        someone cleans up is not a good default (MongoDB's TTL index removes only the session).
        A delete has no revision check, so the session is first closed with one (P4): if
        another process saved it since it was loaded here, that save wins and nothing is
        deleted; once closed (`aborted`), no turn anywhere continues it. The caller holds the
        session's lock, so a background compaction for it can only be dropped.
        """
        session_id = doc["id"]
        self._sessions.forget(session_id)
        self._cancel(session_id)
        closed = {**doc, "run_status": "aborted", "updated_at": now_iso()}
        try:
            await self._store.save(closed, doc["revision"])
        except (SessionConflictError, SessionNotFoundError):
            return  # saved or deleted elsewhere meanwhile: not this turn's to delete
        await self._store.delete(session_id)
        logger.info("expired session deleted", extra={"session_id": session_id})
