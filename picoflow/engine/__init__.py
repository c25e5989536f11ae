"""FlowEngine: runs turns of registered flows against a session store (E1-E4, P3-P5).

A turn is atomic: the engine loads the session, runs the turn on a fresh flow object, and writes
the document once at the end with a revision check. Anything that goes wrong before that write
leaves the stored session exactly as it was, and the `TurnResult` says why.

`FlowEngine` is a face over parts (STYLE §2, "compose, don't mix in"), each built with what it
uses (`_setup.build_parts`); the store's optional abilities are asked once (`abilities_of`, P2)
and handed to the parts that need them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from datetime import timedelta
from typing import Any

from langchain_core.embeddings import Embeddings

from picoflow._bank import MemoryBank
from picoflow._housekeeping.idle import DEFAULT_PAGE
from picoflow._housekeeping.scheduler import Housekeeping
from picoflow._internal.call_keys import IDEMPOTENCY
from picoflow._internal.results import StreamEvent, TurnResult
from picoflow._ops import Budgets, Telemetry
from picoflow._runner.preview import Preview
from picoflow.engine._batch import BatchRuns
from picoflow.engine._budgets import Spending, check_ledger
from picoflow.engine._checks import as_ttl, as_turn_timeout
from picoflow.engine._leases import ConcurrentTurns, turn_leases
from picoflow.engine._loading import is_owner
from picoflow.engine._mcp import MCPConnections
from picoflow.engine._request import TurnRequest
from picoflow.engine._revisions import Revisions, retention
from picoflow.engine._setup import build_parts, checked_store, registered_flows
from picoflow.engine._turns import INVALID_REQUEST as INVALID_REQUEST  # the error names stay
from picoflow.engine._turns import STORE_REFUSED as STORE_REFUSED  # at `picoflow.engine.X`
from picoflow.engine._turns import TURN_TIMEOUT as TURN_TIMEOUT
from picoflow.engine._turns import EngineServices
from picoflow.flow import Flow
from picoflow.models import ProviderFactory, ProviderRegistry
from picoflow.models._flow_providers import merged_providers
from picoflow.session import is_session_id
from picoflow.session._expiration import ttl_from_environment
from picoflow.session._keeper import SessionKeeper
from picoflow.step import Step
from picoflow.step._sources import mcp_servers_of
from picoflow.stores import Store
from picoflow.stores.base import JSONDict

__all__ = ["FlowEngine", "TurnResult", "StreamEvent"]


class FlowEngine:
    """Runs flows; holds the store, the model providers, the per-session locks and its parts.

    Every public method is defined here and delegates to the part that does the work:
    approvals and handoff (K3-K7) to `People`, history (W1-W5) to `HistoryActions`, memory
    (L5, M13-M15) to `MemoryOperations`, turns to `Turns` (keyed ones through `KeyedTurns`).

    Attributes:
        approval_lease: seconds after which an approved call whose process died before it
            reported is taken as interrupted by the next resolve, never run again (K3).
    """

    approval_lease: float = 300.0

    def __init__(
        self,
        flows: Iterable[type[Flow]],
        store: Store | None = None,
        providers: Mapping[str, ProviderFactory] | None = None,
        session_ttl: timedelta | float | None = None,
        *,
        turn_timeout: float | None = None,
        budgets: Mapping[str, int | None] | Budgets | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        history_limit: int = 50,
        history_max_age: timedelta | float | None = None,
        archive_limit: int | None = 1000,
        concurrent_turns: ConcurrentTurns = "reject",
        embeddings: Embeddings | None = None,
        decision_providers: Iterable[Any] | Mapping[str, Any] | None = None,
    ) -> None:
        """Check every flow now, so a mistake fails here rather than at a live turn (F5).

        `turn_timeout` (seconds) bounds a whole turn before its save: a model or tool that
        hangs fails the turn instead of holding the session's lock forever (H6). `sleep` is
        how model-call retries wait (V9; tests pass one that returns at once). `budgets` (O3):
        `{"session_tokens": N, "owner_tokens_per_day": N, "model_calls_per_turn": N}`, any
        subset; a turn that would pass one fails with `BudgetExceeded` and saves nothing.
        `history_limit` revisions are kept per session, none older than `history_max_age`
        (seconds or a timedelta) but the current one; `archive_limit` evicted messages are
        kept per namespace, the newest (W5). `concurrent_turns` (O4): "reject" fails a turn of
        a session running on another worker at its save, "queue" (needs `turn_timeout`) waits
        for its lease. `embeddings` (a LangChain `Embeddings`) gives long-term memory vectors
        (L4). `decision_providers` (D2): what decision steps ask, a list or `{id: provider}`.
        """
        flows = list(flows)
        self._registry = ProviderRegistry(merged_providers(flows, providers))
        self._turn_timeout = as_turn_timeout(turn_timeout)
        budgets_parsed = Budgets.parse(budgets)  # arguments checked before the store is touched
        ttl = as_ttl(session_ttl) or ttl_from_environment()  # U6: SESSION_EXPIRATION
        self._telemetry = Telemetry()  # O1/O2: traces and metrics, a no-op until wanted
        self._flows, built, decisions = registered_flows(flows, self._registry, decision_providers)
        self._mcp = MCPConnections(mcp_servers_of(built))
        self._store, self._abilities = checked_store(store, built, embeddings, archive_limit)
        self._embeddings = embeddings
        self._sessions = SessionKeeper(self._store, ttl, retention(history_limit, history_max_age))
        self._leases = turn_leases(concurrent_turns, self._turn_timeout, self._abilities)  # O4
        self._housekeeping = Housekeeping(self._sessions, self._registry, sleep)
        self._housekeeping.telemetry, self._housekeeping.embeddings = self._telemetry, embeddings
        self._revisions = Revisions(self._sessions, ttl, self._housekeeping.cancel, self._abilities)
        spending = check_ledger(self._abilities, budgets_parsed)  # O3
        self._build_parts(sleep, spending, decisions)

    def _build_parts(
        self, sleep: Callable[[float], Awaitable[Any]], spending: Spending | None, decisions: Any
    ) -> None:
        """The parts behind the public methods (`_setup.build_parts`) and what turns borrow."""
        services = EngineServices(
            registry=self._registry,
            sessions=self._sessions,
            telemetry=self._telemetry,
            housekeeping=self._housekeeping,
            revisions=self._revisions,
            leases=self._leases,
            mcp=self._mcp,
            batch=BatchRuns(self),  # U8: concurrent_steps starts sessions through `run`
            spending=spending,
            embeddings=self._embeddings,
            sleep=sleep,
            turn_timeout=self._turn_timeout,
            decisions=decisions,  # D2: the decision providers by id
        )
        parts = build_parts(
            self._flows, services, self._abilities, self.get_session, lambda: self.approval_lease
        )
        self._turns, self._keyed, self._people = parts.turns, parts.keyed, parts.people
        self._memory, self._history = parts.memory, parts.history

    def flow_names(self) -> list[str]:
        """The registered flow names."""
        return list(self._flows)

    @property
    def store(self) -> Store:
        """The session store this engine writes to."""
        return self._store

    @property
    def telemetry(self) -> Telemetry:
        """Where this engine's turns report (O1, O2); `create_app(metrics=True)` attaches to it."""
        return self._telemetry

    async def run(
        self,
        flow_name: str,
        message: str,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> TurnResult:
        """Run one turn; never raises for run failures (they come back as success=False).

        `owner` (H4) names who runs the turn: a new session records it, and a session recorded
        with another owner (or none) is treated as unknown, so a new session starts (P5).
        Without `owner` the caller is trusted with any session id. With `idempotency_key`
        (O4, H5, K5) the result is saved with the turn, and the same request sent again, to
        any engine on the store, gets it (`replayed=True`) instead of a second turn.
        """
        request = TurnRequest(flow_name, message, session_id, config, owner=owner)
        token = IDEMPOTENCY.set(idempotency_key)
        try:
            return await self._turn_of(request, idempotency_key)
        finally:
            IDEMPOTENCY.reset(token)

    async def stream(
        self,
        flow_name: str,
        message: str,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run one turn, yielding its events as they happen; the last one is "done".

        The turn stays atomic: it is saved once at its end. If the consumer stops listening
        early, the turn still runs to completion (and is saved) rather than being cut in half.
        """
        queue: asyncio.Queue[StreamEvent] = asyncio.Queue()

        def emit(kind: str, data: dict[str, Any]) -> None:
            queue.put_nowait(StreamEvent(kind, data))

        request = TurnRequest(flow_name, message, session_id, config, emit, owner)
        token = IDEMPOTENCY.set(idempotency_key)  # the task copies the context now (K5)
        task = asyncio.ensure_future(self._turn_of(request, idempotency_key))  # O4: as in `run`
        IDEMPOTENCY.reset(token)
        try:
            while not (task.done() and queue.empty()):
                getter = asyncio.ensure_future(queue.get())
                await asyncio.wait({getter, task}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            yield StreamEvent("done", result=task.result())
        finally:
            await asyncio.shield(task)

    def _turn_of(self, request: TurnRequest, key: str | None) -> Awaitable[TurnResult]:
        """The request's turn: keyed (O4; a replay has only "done" to stream), or plain."""
        return self._turns.run(request) if key is None else self._keyed.run(key, request)

    async def get_session(
        self, session_id: str, *, owner: str | None = None, revision: int | None = None
    ) -> JSONDict | None:
        """The stored session document (P1), or None (also if `owner` is not its owner).

        With `revision`: as that revision saved it (W1), or None if it is not kept.
        """
        if revision is not None:
            return await self._revisions.revision(session_id, revision, owner)
        if not is_session_id(session_id):
            return None
        doc = await self._store.load(session_id)
        return doc if doc is not None and is_owner(doc, owner) else None

    async def end_session(self, session_id: str, *, owner: str | None = None) -> bool:
        """Delete a session and its archive; True if it existed (and `owner` owns it)."""
        if not is_session_id(session_id):
            return False
        if owner is not None and await self.get_session(session_id, owner=owner) is None:
            return False
        async with self._sessions.lock(session_id):
            self._sessions.forget(session_id)
            self._housekeeping.cancel(session_id)
            return await self._store.delete(session_id)

    async def aclose(self) -> None:
        """Wait for background compactions, then close the store's and MCP connections."""
        await self._housekeeping.drain()
        await self._revisions.drain()
        await self._mcp.aclose()
        await self._store.aclose()

    async def wait_for_background(self) -> None:
        """Wait until every background compaction has been committed or dropped.

        Only `set_summary_config(..., background=True)` starts such work, besides the purge of
        expired sessions (W5). Tests and batch jobs call this to observe it; `aclose` waits too.
        """
        await self._housekeeping.drain()
        await self._revisions.drain()

    async def pending_approvals(self, session_id: str) -> list[dict[str, Any]]:
        """The approvals that wait in this session, oldest first (K4); [] for an unknown id."""
        return await self._people.pending_approvals(session_id)

    async def waiting(self, limit: int = 100) -> list[dict[str, Any]]:
        """Sessions where a person is expected, newest first (K7): for an operator's queue.

        Each entry has the session's `id`, `flow`, `owner`, `current_step`, `updated_at`, its
        pending `approvals` and its `operator` record (None unless handed off).

        Raises:
            TypeError: the store cannot list sessions (it has no `waiting(limit)` method).
            ValueError: `limit` is not a whole number from 1 to 1000.
        """
        return await self._people.waiting(limit)

    async def resolve_approval(
        self,
        session_id: str,
        approval_id: str,
        decision: str,
        args: dict[str, Any] | None = None,
        by: str | None = None,
        note: str | None = None,
    ) -> TurnResult:
        """Decide a pending approval; the step continues from that tool call (K3).

        `decision` is "approve" (run the call as recorded), "edit" (run it with `args`,
        validated by the tool's schema) or "reject" (the model reads that it was declined, and
        `note` as the reason). The reply the model then gives is the result's `message`, and
        is kept on the approval record. Resolving again returns that recorded outcome and runs
        nothing; another decision for a decided approval is "ApprovalAlreadyResolved".
        """
        return await self._people.resolve_approval(
            session_id, approval_id, decision, args, by, note
        )

    async def operator_reply(self, session_id: str, text: str, by: str | None = None) -> TurnResult:
        """Answer the user as the operator of a session that was handed off (K6)."""
        return await self._people.operator_reply(session_id, text, by)

    async def return_to_flow(
        self,
        session_id: str,
        step: type[Step] | str | None = None,
        note: str | None = None,
        by: str | None = None,
    ) -> TurnResult:
        """Give a handed-off conversation back to the flow, at `step` or where it was (K6).

        The model of that step reads the operator's messages (and `note`) on the next turn.
        """
        return await self._people.return_to_flow(session_id, step, note, by)

    async def history(
        self, session_id: str, *, limit: int | None = None, owner: str | None = None
    ) -> list[JSONDict]:
        """The session's kept revisions, newest first (W1); [] for an unknown session.

        Each is `{"revision", "saved_at", "message", "step_before", "step_after", "reply",
        "action", "restored"}`: `action` names its cause (K10, docs/history.md).
        """
        return await self._history.history(session_id, limit=limit, owner=owner)

    async def rewind(
        self,
        session_id: str,
        to_revision: int,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> int:
        """Make the session what it was after `to_revision`, as a new revision; return it (W2).

        The rewound turns stay in the history until retention removes them; token usage is
        not rewound (it was spent), nor are effects (K9): going back past a tool's effect
        needs `force=True`, which keeps the record and tells the step's next model call.
        Takes the session's lock and revision check like a turn. With `idempotency_key`
        (H5, O4) the same request sent again returns the first one's revision.

        Raises:
            SessionNotFoundError, RevisionNotFoundError: no such session (or not the owner's),
                or no revision `to_revision` kept.
            EffectInHistoryError: a tool acted on the world after `to_revision` (not forced).
            SessionConflictError, IdempotencyKeyReusedError: another process saved meanwhile;
                the key was first sent with another request.
        """
        return await self._history.rewind(
            session_id, to_revision, owner=owner, idempotency_key=idempotency_key, force=force
        )

    async def undo(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> int:
        """Rewind to before the last turn (W2); undoing again undoes the turn before it.

        With an `idempotency_key` a retried undo returns the first one's revision instead of
        undoing a second turn (H5, O4). Raises as `rewind` (and when no earlier turn is kept).
        """
        key = idempotency_key
        return await self._history.undo(session_id, owner=owner, idempotency_key=key, force=force)

    async def fork(
        self,
        session_id: str,
        at_revision: int | None = None,
        *,
        owner: str | None = None,
        idempotency_key: str | None = None,
        force: bool = False,
    ) -> str:
        """A new session copied from `at_revision` (default: the current one); its id (W3).

        Same owner and flow; the copy records `forked_from: {"session_id", "revision"}` and
        its history starts at the fork. With `idempotency_key`, a retry returns the first
        fork's id. Raises as `rewind` does (`force` too: K9).
        """
        return await self._history.fork(
            session_id, at_revision, owner=owner, idempotency_key=idempotency_key, force=force
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
        """Run turn `revision` again with `text` instead of its message, as one new revision (W4).

        It runs on the session as it was before that turn and saves against the current
        revision: if it fails (another process saved meanwhile; a tool acted on the world since
        and `force` is False: "EffectInHistoryError", K9) nothing changes. With
        `idempotency_key` a resend gets the first result, as `run`.
        """
        key, history = idempotency_key, self._history
        return await history.edit_message(
            session_id, revision, text, owner=owner, config=config, idempotency_key=key, force=force
        )

    async def purge(self) -> int:
        """Delete every expired session now, with its history and archive; how many (W5).

        SQLite and memory stores also purge after saves (at most every ten minutes), MongoDB's
        TTL indexes on the server.
        """
        return await self._history.purge()

    async def forget_principal(self, principal: str) -> int:
        """Delete every session, revision, archived message and memory entry of `principal` (W5).

        `principal` is the `owner` the sessions were run with (H4); its long-term memory bank
        (L5) goes too, where the store keeps one. Returns how many sessions went.
        """
        return await self._history.forget_principal(principal)

    def memory_bank(self, owner: str) -> MemoryBank:
        """One owner's long-term memory (L5): list, search, add, edit, delete, forget.

        Raises:
            ValueError: `owner` is empty, or the store keeps no memory banks.
        """
        return self._memory.memory_bank(owner)

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
        return await self._memory.extract_memory(session_id, owner=owner)

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
        return await self._memory.compact(session_id, namespace, owner=owner)

    async def compact_idle(
        self, older_than: timedelta | float, *, page_size: int = DEFAULT_PAGE
    ) -> dict[str, Any]:
        """Compact every running session idle for at least `older_than` (M14), for a scheduler.

        `older_than` is a `timedelta` or seconds. Sessions are read from the store page by
        page (`page_size` per call), oldest first; each is compacted like `compact()`: under
        its lock, saved with the revision check, so a turn racing it either waits for it or
        wins (the compaction is then dropped, never merged). The save keeps the session's
        `updated_at` and `expires_at`: compaction is not activity. One session failing never
        stops the others. Returns `{"looked_at", "compacted", "compacted_ids",
        "compacted_count", "nothing_to_compact", "skipped", "failed"}`: `skipped` counts
        sessions a turn would not continue (expired, or of a flow this engine does not serve)
        and those a turn saved meanwhile; `failed` lists `{"session_id", "error"}`.

        Raises:
            TypeError: `older_than` is neither a timedelta nor a number.
            ValueError: `older_than` is not positive, or `page_size` is not 1 to 1000.
            StoreError: the store cannot list its idle sessions (or failed to).
        """
        return await self._memory.compact_idle(older_than, page_size=page_size)

    async def preview(self, session_id: str, *, message: str | None = None) -> Preview | None:
        """Exactly the messages the session's next model call would receive, or None.

        Nothing is written. The current step's `on_restore` and `get_prompt()` run as in a
        turn; the namespace's summary is the memory block (M7); `message`, if given, is the
        user message of that next turn. None if a turn would not continue this id (P5).
        The list also carries `message_count`, `truncated`, `compacted` and `warnings` (M15).
        """
        return await self._memory.preview(session_id, message=message)
