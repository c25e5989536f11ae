"""History operations of an engine: list, rewind, undo, fork, purge, forget (W1-W3, W5).

The stores keep a revision per save (`picoflow.stores._history`); this module is what the
engine does with them. Every operation that writes goes through the session's lock and the
store's revision check, like a turn (P3, P4): a rewind racing a turn of another process is a
`SessionConflictError` for whichever saves second, never a merge. Editing a message (W4) is a
turn and lives in the engine; `edit_base` prepares the document it starts from.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

from picoflow._internal.state import now_iso
from picoflow.engine._idempotent import RECORDS, current_turn, recorded_reply, records_with
from picoflow.engine._kept_effects import forced, keep_effects
from picoflow.errors import RevisionNotFoundError, SessionNotFoundError
from picoflow.session import expiry, is_session_id, new_session_id
from picoflow.session._keeper import SessionKeeper
from picoflow.stores import _history
from picoflow.stores.base import (
    DeletesOwners,
    JSONDict,
    KeepsHistory,
    Store,
    StoreAbilities,
    abilities_of,
)

__all__ = ["Revisions", "limit_archive", "retention", "supports_history", "turn_note"]

# The actions of a revision a user's message made (K10): a turn that handed over is one too.
_TURNS = ("turn", "handoff")
# How often, at most, a background purge of expired sessions starts after a save (W5).
PURGE_EVERY_SECONDS = 600.0
# W4: the revision the edited turn being run started from, set by `edit_base` for `turn_note`
# (the turn's own task): N - 1 for a turn N, but what an edit N ran on for an edit N.
_EDIT_BASE: ContextVar[int | None] = ContextVar("picoflow_edit_base", default=None)


def supports_history(store: Store) -> bool:
    """Whether the store keeps revisions (picoflow's stores do; one of your own may not)."""
    return abilities_of(store).history is not None


def retention(
    history_limit: int, history_max_age: timedelta | float | None
) -> tuple[int, float | None]:
    """The checked (keep, max_age seconds) of an engine, or ValueError saying what to pass."""
    if not isinstance(history_limit, int) or isinstance(history_limit, bool) or history_limit < 1:
        raise ValueError(
            f"history_limit must be an int >= 1 (revisions kept per session; the current one "
            f"always stays), got {history_limit!r}."
        )
    if history_max_age is None:
        return history_limit, None
    if isinstance(history_max_age, timedelta):
        seconds = history_max_age.total_seconds()
    elif isinstance(history_max_age, (int, float)) and not isinstance(history_max_age, bool):
        seconds = float(history_max_age)
    else:
        seconds = -1.0
    if seconds <= 0:
        raise ValueError(
            f"history_max_age must be a timedelta or a number of seconds > 0, or None (no "
            f"limit), got {history_max_age!r}."
        )
    return history_limit, seconds


def limit_archive(abilities: StoreAbilities, limit: int | None) -> None:
    """Tell the store how many evicted messages to keep per namespace (W5), if it can trim."""
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(
            f"archive_limit must be an int >= 1 (evicted messages kept per namespace) or None "
            f"(keep all), got {limit!r}."
        )
    if abilities.trims_archive is not None:
        abilities.trims_archive.archive_limit = limit


def turn_note(
    message: str, step_before: str | None, step_after: str | None, reply: str, edit: int | None
) -> JSONDict:
    """What a turn's revision records (W1); an edit records the revision it ran on (W4)."""
    base = _EDIT_BASE.get()
    _EDIT_BASE.set(None)  # read once: a later turn of this task never sees it
    return {
        "action": "turn" if edit is None else "edit",
        "restored": None if edit is None else (edit - 1 if base is None else base),
        "message": message,
        "step_before": step_before,
        "step_after": step_after,
        "reply": reply,
    }


class Revisions:
    """The history side of one engine."""

    def __init__(
        self,
        sessions: SessionKeeper,
        ttl: timedelta | None,
        cancel: Callable[[str], None],
        abilities: StoreAbilities,
    ) -> None:
        self._sessions = sessions
        self._abilities = abilities
        self._ttl = ttl
        self._cancel = cancel  # stops a session's background housekeeping
        self._purging: asyncio.Task[int] | None = None
        self._last_purge = float("-inf")

    @property
    def store(self) -> Store:
        return self._sessions.store

    def _require(self, feature: str = "engine.history()") -> KeepsHistory:
        """The store's history ability, or `MissingAbilityError` naming `feature` (P2, W1)."""
        history: KeepsHistory = self._abilities.need("history", feature)
        return history

    async def current(self, session_id: str, owner: str | None) -> JSONDict:
        """The stored document, or SessionNotFoundError (also for another owner's session)."""
        doc = await self.store.load(session_id) if is_session_id(session_id) else None
        if doc is None or (owner is not None and doc.get("owner") != owner):
            raise SessionNotFoundError(session_id)
        return doc

    async def list(self, session_id: str, limit: int | None, owner: str | None) -> list[JSONDict]:
        """W1: the kept revisions, newest first; [] for an unknown or foreign session."""
        if limit is not None and (
            not isinstance(limit, int) or isinstance(limit, bool) or limit < 1
        ):
            raise ValueError(f"limit must be an int >= 1 or None (all), got {limit!r}.")
        store = self._require("engine.history()")
        if not is_session_id(session_id):
            return []
        if owner is not None and await self._owned(session_id, owner) is None:
            return []
        listed: list[JSONDict] = await store.history(session_id, limit=limit)
        return listed

    async def revision(self, session_id: str, revision: int, owner: str | None) -> JSONDict | None:
        """W1: the document as `revision` saved it, or None."""
        _history.check_revision(revision)
        store = self._require("engine.get_session(revision=...)")
        if not is_session_id(session_id):
            return None
        doc: JSONDict | None = await store.load_revision(session_id, revision)
        if doc is None or (owner is not None and doc.get("owner") != owner):
            return None
        return doc

    async def rewind(
        self, session_id: str, to_revision: int, owner: str | None, force: bool = False
    ) -> int:
        """W2: the session as it was after `to_revision`, saved as a new revision.

        Never past an effect unless forced (K9): the effects stay recorded either way.
        """
        _history.check_revision(to_revision)
        self._require("engine.rewind()")
        async with self._sessions.lock(session_id):
            current = await self.current(session_id, owner)
            if (first := _answered(current)) is not None:  # saved while this one waited
                return first
            keyed = current_turn.get()  # O4: a keyed rewind or undo (`change_once`)
            old = await self._old(session_id, to_revision)
            restored = {
                **old,
                "revision": current["revision"],
                "usage": current["usage"],  # tokens spent stay spent
                "updated_at": now_iso(),
                "expires_at": expiry(datetime.now(UTC), self._ttl) or current["expires_at"],
            }
            keep_effects(session_id, current, restored, to_revision, force)  # K9
            # The requests this session answered stay answered: a rewind does not unsend them.
            records = current.get(RECORDS)
            if keyed is not None:
                records = records_with(records, keyed, {"revision": current["revision"] + 1})
            _set_records(restored, records)
            note = {
                "action": "rewind",
                "restored": to_revision,
                "step_before": current.get("current_step"),
                "step_after": old.get("current_step"),
            }
            return await self._write(session_id, restored, note)

    async def undo(self, session_id: str, owner: str | None, force: bool = False) -> int:
        """W2: rewind to before the newest turn the session's current state came from.

        Rewinds are followed back to the revision they copied, and compactions skipped, so
        undoing twice undoes two turns (not the first undo).
        """
        store = self._require("engine.undo()")
        current = await self.current(session_id, owner)
        if (first := _answered(current)) is not None:  # its first request undid the turn
            return first
        entries = {e["revision"]: e for e in await store.history(session_id)}
        at, target = current["revision"], None
        while at in entries and target is None:
            entry = entries[at]
            action, restored = entry.get("action"), entry.get("restored")
            if action == "rewind" and restored is not None:
                at = restored
            elif action == "edit" and restored is not None:
                target = restored  # the edited turn ran on this revision
            elif action in _TURNS and at > 0:
                target = at - 1
            elif action in (*_TURNS, "fork"):
                break  # the session's first turn, or where it was forked: nothing before
            else:
                at -= 1  # a compaction, or a save through the store API: not a turn
        if target is None or target not in entries:
            raise RevisionNotFoundError(
                session_id,
                max(at - 1, 0),
                f"Session '{session_id}' has no earlier turn to undo: its history keeps no "
                "revision before the current state's turn (a first turn cannot be undone; "
                "start a new session instead).",
            )
        return await self.rewind(session_id, target, owner, force)

    async def fork(
        self, session_id: str, at_revision: int | None, owner: str | None, force: bool = False
    ) -> str:
        """W3: a new session, same owner, copied from a revision; its history starts here.

        Not from before an effect unless forced (K9): the copy then knows what was done.
        """
        if at_revision is None:
            source = await self.current(session_id, owner)
        else:
            _history.check_revision(at_revision)
            self._require("engine.fork(at_revision=...)")
            current = await self.current(session_id, owner)
            source = dict(await self._old(session_id, at_revision))
            keep_effects(session_id, current, source, at_revision, force)
        keyed = current_turn.get()  # O4: a keyed fork gets the id its retries look in
        new_id = keyed.derived_id if keyed is not None and keyed.use_derived else new_session_id()
        now = now_iso()
        doc = {
            **source,
            "id": new_id,
            "revision": 0,
            "created_at": now,
            "updated_at": now,
            "expires_at": expiry(datetime.now(UTC), self._ttl) or source.get("expires_at"),
            "forked_from": {"session_id": session_id, "revision": source["revision"]},
        }
        # The source's records answer requests made to the source, not to the copy.
        _set_records(doc, None if keyed is None else records_with(None, keyed, {"session": new_id}))
        note = {
            "action": "fork",
            "restored": source["revision"],
            "step_before": source.get("current_step"),
            "step_after": source.get("current_step"),
        }
        await self._sessions.create(doc, note)
        return new_id

    async def edit_base(self, session_id: str, revision: int, owner: str | None) -> JSONDict:
        """W4: the document before turn `revision`, at the session's current revision.

        The caller holds the session's lock; the edited turn then saves against the current
        revision, so a turn of another process saved meanwhile makes it a conflict.
        """
        _history.check_revision(revision)
        self._require("engine.edit_message()")
        current = await self.current(session_id, owner)
        entry = await self._entry(session_id, revision)
        if entry.get("action") not in (*_TURNS, "edit") or entry.get("message") is None:
            raise RevisionNotFoundError(
                session_id,
                revision,
                f"Revision {revision} of session '{session_id}' is not a turn with a user "
                "message, so there is no message to edit. engine.history(session_id) lists "
                "each revision's action and message.",
            )
        if revision == 0:
            raise RevisionNotFoundError(
                session_id,
                revision,
                f"Revision 0 of session '{session_id}' is its first turn, which started the "
                "session: there is nothing before it to run the new text on. Start a new "
                "session with the new text instead.",
            )
        # An edit ran on the revision it names (`restored`), not on the one before it.
        restored = entry.get("restored") if entry.get("action") == "edit" else None
        start = revision - 1 if restored is None else int(restored)
        base = await self._old(session_id, start)
        _EDIT_BASE.set(start)  # the turn's note records it (`turn_note`)
        edited = {**base, "revision": current["revision"], "usage": current["usage"]}
        keep_effects(session_id, current, edited, start, forced())  # K9
        # The current records: a retried keyed edit finds its first run's (O4), as a turn does.
        _set_records(edited, current.get(RECORDS))
        return edited

    async def purge(self) -> int:
        """W5: delete every expired session with everything it left; how many went."""
        purger = self._abilities.purge
        if purger is None:
            return 0
        self._last_purge = time.monotonic()
        return await purger.purge(now_iso())

    def purge_soon(self) -> None:
        """Start a background purge if none ran for `PURGE_EVERY_SECONDS` (W5, SQLite).

        Only with a session TTL: without one, no session ever expires.
        """
        if self._ttl is None or self._abilities.purge is None:
            return
        if self._purging is not None and not self._purging.done():
            return
        if time.monotonic() - self._last_purge < PURGE_EVERY_SECONDS:
            return
        self._last_purge = time.monotonic()
        self._purging = asyncio.ensure_future(self.purge())
        self._purging.add_done_callback(_quiet)

    async def drain(self) -> None:
        """Wait for a background purge (the engine is closing)."""
        if self._purging is not None:
            await asyncio.gather(self._purging, return_exceptions=True)

    async def forget_principal(self, principal: str) -> int:
        """W5: delete every session (with revisions and archive) `principal` owns."""
        if not isinstance(principal, str) or not principal:
            raise ValueError(
                f"forget_principal needs the owner's non-empty string (as passed to "
                f"engine.run(owner=...)), got {principal!r}."
            )
        deleter: DeletesOwners = self._abilities.need("delete_owner", "forget_principal()")
        self._sessions.forget_all()
        return await deleter.delete_owner(principal)

    async def _owned(self, session_id: str, owner: str) -> JSONDict | None:
        doc = await self.store.load(session_id)
        return doc if doc is not None and doc.get("owner") == owner else None

    async def _old(self, session_id: str, revision: int) -> JSONDict:
        doc: JSONDict | None = await self._require().load_revision(session_id, revision)
        if doc is None:
            raise RevisionNotFoundError(session_id, revision)
        return doc

    async def _entry(self, session_id: str, revision: int) -> JSONDict:
        for entry in await self._require().history(session_id):
            if entry["revision"] == revision:
                found: JSONDict = entry
                return found
        raise RevisionNotFoundError(session_id, revision)

    async def _write(self, session_id: str, doc: JSONDict, note: JSONDict) -> int:
        self._sessions.forget(session_id)  # the cached live messages are not these
        self._cancel(session_id)
        return await self._sessions.save(doc, note)


def _answered(current: JSONDict) -> int | None:
    """The revision a keyed rewind or undo's first request made, if `current` records it."""
    keyed = current_turn.get()
    first = recorded_reply(current, keyed) if keyed is not None else None
    return None if first is None else int(first["revision"])


def _set_records(doc: JSONDict, records: Any) -> None:
    """Give `doc` these idempotency records (O4), or none."""
    if records:
        doc[RECORDS] = records
    else:
        doc.pop(RECORDS, None)


def _quiet(task: asyncio.Task[int]) -> None:
    """A background purge that failed is retried by the next one; the error is logged there."""
    if not task.cancelled() and task.exception() is not None:
        import logging

        logging.getLogger(__name__).warning("background purge failed: %s", task.exception())
