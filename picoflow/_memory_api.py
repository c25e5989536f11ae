"""The engine's memory methods (L5, M13, M15), mixed into `FlowEngine`: bank, compact, preview."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage

from ._bank import MemoryBank
from ._housekeeping.on_demand import compact_now, compactable
from ._migration import migrate
from ._preview import Preview, preview_of
from .errors import SessionNotFoundError
from .session import continuation, empty_usage, load_flow

if TYPE_CHECKING:
    from ._housekeeping.scheduler import Housekeeping
    from ._sessions import Sessions
    from .flow import Flow
    from .stores import Store
    from .stores.base import JSONDict

__all__ = ["MemoryOperations"]


class MemoryOperations:
    """Long-term memory and compaction on demand on `FlowEngine` (docs/long-term-memory.md)."""

    if TYPE_CHECKING:
        _store: Store
        _sessions: Sessions
        _flows: dict[str, type[Flow]]
        _housekeeping: Housekeeping
        _embeddings: Any

        async def get_session(
            self, session_id: str, *, owner: str | None = None
        ) -> JSONDict | None: ...

    def memory_bank(self, owner: str) -> MemoryBank:
        """One owner's long-term memory (L5): list, search, add, edit, delete, forget.

        Raises:
            ValueError: `owner` is empty, or the store keeps no memory banks.
        """
        return MemoryBank(self._store, owner, self._embeddings)

    async def extract_memory(self, session_id: str, *, owner: str | None = None) -> dict[str, Any]:
        """Extract the session into its owner's long-term memory now (L3).

        Every step with `use_long_term_memory(extract=...)` is extracted from where the last
        extraction ended: for a scheduler, before an idle session expires. Returns
        `{"entries": [...written...], "warnings": [...]}`; the extracted ranges are saved
        with the session, so a second call extracts nothing new.

        Raises:
            SessionNotFoundError: no such session (or another owner's, H4).
            SessionConflictError: another writer saved the session meanwhile; the entries
                written stay, and the next extraction does not write them again.
        """
        if await self.get_session(session_id, owner=owner) is None:
            raise SessionNotFoundError(session_id)
        async with self._sessions.lock(session_id):
            doc, spaces = await self._sessions.load(session_id)
            flow_class = self._flows.get(doc["flow"]) if doc is not None else None
            if doc is None or flow_class is None:
                raise SessionNotFoundError(session_id)
            flow = flow_class()
            load_flow(flow, doc, spaces)
            flow._owner = doc.get("owner")
            usage = empty_usage()
            before = len(flow._session.warnings)
            written = await self._housekeeping.extract(flow, [], usage, every=True)
            warnings = flow._session.warnings[before:]
            if written or warnings or usage["summary"]:
                await self._sessions.commit(flow, doc, usage)
            return {"entries": written, "warnings": list(warnings)}

    async def compact(
        self, session_id: str, namespace: str | None = None, *, owner: str | None = None
    ) -> dict[str, Any]:
        """Compact a session's memory now, to what each policy keeps (M13).

        Without `namespace`, every namespace with a policy. Returns the hosted memory API's
        shapes: `{"compacted": True, "summary_message_id", "compacted_count", "to_sequence"}`
        (`summary_message_id` is None when only windows evicted), or
        `{"ok": True, "compacted": False, "message": "Nothing to compact"}`. It takes the
        session's lock and saves with the revision check, like a turn (P3, P4).

        Raises:
            SessionNotFoundError: no such session (or another owner's, H4).
            ValueError: `namespace` has no memory policy.
            SessionConflictError: another writer saved the session meanwhile; nothing changed.
        """
        if await self.get_session(session_id, owner=owner) is None:
            raise SessionNotFoundError(session_id)
        async with self._sessions.lock(session_id):
            doc, spaces = await self._sessions.load(session_id)
            flow_class = self._flows.get(doc["flow"]) if doc is not None else None
            if doc is None or flow_class is None:
                raise SessionNotFoundError(session_id)
            flow = flow_class()
            load_flow(flow, doc, spaces)
            names = compactable(flow, namespace)
            usage = empty_usage()
            model = self._housekeeping.summary_model(flow)
            result = await compact_now(flow, doc["memory"], names, self._store, model, usage)
            if result["compacted"]:
                await self._sessions.commit(flow, doc, usage)
            return result

    async def preview(self, session_id: str, *, message: str | None = None) -> Preview | None:
        """Exactly the messages the session's next model call would receive, or None.

        Nothing is written. The current step's `on_restore` and `get_prompt()` run as in a
        turn; the namespace's summary is the memory block (M7); `message`, if given, is the
        user message of that next turn. None if a turn would not continue this id (P5).
        The list also carries `message_count`, `truncated`, `compacted` and `warnings` (M15).
        """
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
