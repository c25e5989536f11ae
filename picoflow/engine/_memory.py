"""The engine's memory part (L5, M13-M15): the memory bank, compaction on demand, preview."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage

from picoflow._bank import MemoryBank
from picoflow._housekeeping.idle import DEFAULT_PAGE, IdleRun, check_page_size, idle_cutoff
from picoflow._housekeeping.on_demand import compact_now, compactable
from picoflow._internal.services import TurnServices
from picoflow._runner.preview import Preview, preview_of
from picoflow.errors import SessionConflictError, SessionNotFoundError, StoreError
from picoflow.session import continuation, empty_usage, is_expired, load_flow
from picoflow.session._migration import migrate

if TYPE_CHECKING:
    from picoflow._housekeeping.scheduler import Housekeeping
    from picoflow.engine._request import ReadsSessions
    from picoflow.flow import Flow
    from picoflow.memory import Namespace
    from picoflow.session._keeper import SessionKeeper
    from picoflow.stores.base import JSONDict, ListsIdle, StoreAbilities

logger = logging.getLogger(__name__)

__all__ = ["MemoryOperations"]

_COMPACTION = {"action": "compaction"}  # what its revisions record as their cause (K10)


class MemoryOperations:
    """Long-term memory and compaction on demand of an engine (docs/long-term-memory.md).

    Given what it works with, not the engine: the `SessionKeeper` (locks, loads, commits), the
    registered flows, the housekeeping (summary models, extraction), the store's abilities,
    the engine's embeddings and `get_session` (the owner check every public read makes).
    """

    def __init__(
        self,
        sessions: SessionKeeper,
        flows: dict[str, type[Flow]],
        housekeeping: Housekeeping,
        abilities: StoreAbilities,
        *,
        embeddings: Any,
        get_session: ReadsSessions,
    ) -> None:
        self._sessions = sessions
        self._flows = flows
        self._housekeeping = housekeeping
        self._abilities = abilities
        self._embeddings = embeddings
        self.get_session = get_session

    @property
    def _store(self) -> Any:
        return self._sessions.store

    def memory_bank(self, owner: str) -> MemoryBank:
        """One owner's long-term memory (L5): list, search, add, edit, delete, forget."""
        return MemoryBank(self._store, owner, self._embeddings)

    async def extract_memory(self, session_id: str, *, owner: str | None = None) -> dict[str, Any]:
        """Extract the session into its owner's long-term memory now (L3)."""
        async with self._locked(session_id, owner) as (flow_class, doc, spaces):
            flow = flow_class()
            load_flow(flow, doc, spaces)
            flow._services = TurnServices(owner=doc.get("owner"))  # L1
            usage = empty_usage()
            before = len(flow._session.warnings)
            written = await self._housekeeping.extract(flow, [], usage, every=True)
            warnings = flow._session.warnings[before:]
            if written or warnings or usage["summary"]:
                await self._sessions.commit(flow, doc, usage, note={"action": "extraction"})
            return {"entries": written, "warnings": list(warnings)}

    async def compact(
        self, session_id: str, namespace: str | None = None, *, owner: str | None = None
    ) -> dict[str, Any]:
        """Compact a session's memory now, to what each policy keeps (M13)."""
        async with self._locked(session_id, owner) as (flow_class, doc, spaces):
            result, _ = await self._compact_loaded(flow_class, doc, spaces, namespace)
            return result

    @asynccontextmanager
    async def _locked(
        self, session_id: str, owner: str | None
    ) -> AsyncIterator[tuple[type[Flow], JSONDict, dict[str, Namespace] | None]]:
        """The session's flow class and document, loaded under its lock (like a turn, P4).

        Raises:
            SessionNotFoundError: no such session, another owner's (H4), or of no served flow.
        """
        if await self.get_session(session_id, owner=owner) is None:
            raise SessionNotFoundError(session_id)
        async with self._sessions.lock(session_id):
            doc, spaces = await self._sessions.load(session_id)
            flow_class = self._flows.get(doc["flow"]) if doc is not None else None
            if doc is None or flow_class is None:
                raise SessionNotFoundError(session_id)
            yield flow_class, doc, spaces

    async def compact_idle(
        self, older_than: timedelta | float, *, page_size: int = DEFAULT_PAGE
    ) -> dict[str, Any]:
        """Compact every running session idle for at least `older_than` (M14), for a scheduler."""
        now = datetime.now(UTC)
        cutoff = idle_cutoff(older_than, now)
        page_size = check_page_size(page_size)
        lister: ListsIdle | None = self._abilities.idle_sessions
        if lister is None:  # a StoreError, as M14's tests have always read it
            raise StoreError(
                f"{self._abilities.store_name} cannot list idle sessions, so compact_idle has "
                "nothing to walk. Use MemoryStore, SQLiteStore or MongoStore, or give the "
                "store an idle_sessions(before, after=..., limit=...) method."
            )
        run = IdleRun()
        after: tuple[str, str] | None = None
        while page := await lister.idle_sessions(cutoff, after=after, limit=page_size):
            for listed in page:
                run.looked_at += 1
                await self._compact_idle_one(listed, cutoff, now, run)
            after = (page[-1]["updated_at"], page[-1]["id"])
            if len(page) < page_size:
                break
        return run.report()

    async def _compact_idle_one(
        self, listed: JSONDict, cutoff: str, now: datetime, run: IdleRun
    ) -> None:
        """Compact one listed session into `run`'s counts; errors are recorded, not raised."""
        session_id = str(listed["id"])
        flow_class = self._flows.get(str(listed["flow"]))
        if flow_class is None or is_expired(listed, now):
            run.skipped += 1
            return
        try:
            async with self._sessions.lock(session_id):
                doc, spaces = await self._sessions.load(session_id)
                if doc is None or continuation(doc, now) != "continue":
                    run.skipped += 1
                    return
                if str(doc.get("updated_at")) >= cutoff:  # a turn saved it since the listing
                    run.skipped += 1
                    return
                result, problem = await self._compact_loaded(flow_class, doc, spaces, idle=True)
        except SessionConflictError:
            run.skipped += 1  # another process saved it meanwhile: its turn wins
            return
        except Exception as exc:  # one session's failure must not stop the others
            logger.warning("compact_idle: session %s failed: %s", session_id, exc)
            run.fail(session_id, f"{type(exc).__name__}: {exc}")
            return
        if result["compacted"]:
            run.compacted.append(session_id)
            run.compacted_count += int(result["compacted_count"])
        elif problem is not None:
            run.fail(session_id, problem)
        else:
            run.nothing_to_compact += 1

    async def _compact_loaded(
        self,
        flow_class: type[Flow],
        doc: JSONDict,
        spaces: dict[str, Namespace] | None,
        namespace: str | None = None,
        *,
        idle: bool = False,
    ) -> tuple[dict[str, Any], str | None]:
        """Compact a session loaded under its lock, and save it if anything was compacted.

        Returns the M13 answer and the warning of a summary that could not be written (M8),
        if one was recorded.
        """
        flow = flow_class()
        load_flow(flow, doc, spaces)
        names = compactable(flow, namespace)
        usage = empty_usage()
        model = self._housekeeping.summary_model(flow)
        warned = len(flow._session.warnings)
        result = await compact_now(flow, doc["memory"], names, self._store, model, usage)
        if result["compacted"]:
            await self._sessions.commit(flow, doc, usage, idle=idle, note=_COMPACTION)
        problems = flow._session.warnings[warned:]
        return result, (problems[0] if problems else None)

    async def preview(self, session_id: str, *, message: str | None = None) -> Preview | None:
        """Exactly the messages the session's next model call would receive, or None."""
        doc = await self.get_session(session_id)
        flow_class = self._flows.get(doc["flow"]) if doc is not None else None
        if doc is None or flow_class is None or continuation(doc, datetime.now(UTC)) != "continue":
            return None
        flow = flow_class()
        migrated, _ = await migrate(flow, doc, None)  # V10: loaded as a turn would load it
        if migrated is None:
            return None
        load_flow(flow, migrated)
        await flow.init()
        await flow._call_hook(flow.current_step.on_restore)
        messages = flow.preview()
        if message:
            messages = [*messages, HumanMessage(message)]
        return preview_of(flow, flow.current_step, messages)  # M15: with counts and flags
