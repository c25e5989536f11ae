"""FlowEngine: runs turns of registered flows against a session store (E1-E4, P3-P5).

A turn is atomic: the engine loads the session, runs the turn on a fresh flow object, and writes
the document once at the end with a revision check. Anything that goes wrong before that write
leaves the stored session exactly as it was, and the `TurnResult` says why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from datetime import timedelta
from typing import Any

from langchain_core.embeddings import Embeddings

from picoflow._housekeeping.scheduler import Housekeeping
from picoflow._internal.call_keys import IDEMPOTENCY
from picoflow._internal.results import StreamEvent, TurnResult
from picoflow._internal.services import TurnServices
from picoflow._ops import Budgets, CallRecord, Telemetry
from picoflow._runner.bank_tools import bank_tools
from picoflow._runner.crossing import crossing_message
from picoflow._runner.nested import NestedRuns
from picoflow._runner.people.hold import pending_approvals, run_or_hold
from picoflow._runner.recall import recall_tools
from picoflow._runner.turn import TurnContext, append_message
from picoflow.engine._bank_checks import check_long_term
from picoflow.engine._batch import BatchRuns, is_batch_turn, run_batch
from picoflow.engine._budgets import SpendingLimits, check_ledger
from picoflow.engine._checks import (
    as_ttl,
    as_turn_timeout,
    check_flow,
    turn_input_problem,
    warn_if_config_changed,
)
from picoflow.engine._fresh_scripts import FreshScripts
from picoflow.engine._history import HistoryMethods
from picoflow.engine._idempotent import (
    KeyedRuns,
    keep_reply,
    replay_if_recorded,
    session_id_for_new,
)
from picoflow.engine._leases import ConcurrentTurns, turn_leases
from picoflow.engine._loading import InvalidRequestError, SessionLoading, is_owner
from picoflow.engine._mcp import MCPConnections
from picoflow.engine._memory import MemoryOperations
from picoflow.engine._people import PeopleInTheLoop
from picoflow.engine._revisions import Revisions, limit_archive, retention, turn_note
from picoflow.errors import (
    PicoflowError,
    StoreError,
)
from picoflow.flow import Flow
from picoflow.mcp import MCPServer
from picoflow.memory import Namespace
from picoflow.models import ProviderFactory, ProviderRegistry, parse_model
from picoflow.models._flow_providers import merged_providers
from picoflow.session import (
    empty_usage,
    is_session_id,
    load_flow,
    new_document,
)
from picoflow.session._expiration import ttl_from_environment
from picoflow.session._migration import migrate
from picoflow.session._sessions import Sessions
from picoflow.step._sources import (
    ExtraTools,
    check_tool_names,
    foreign_tool_names,
    mcp_servers_of,
    step_tools,
)
from picoflow.stores import Store
from picoflow.stores._url import store_from_environment
from picoflow.stores.base import JSONDict
from picoflow.tools import collect_groups

__all__ = ["FlowEngine", "TurnResult", "StreamEvent"]

logger = logging.getLogger(__name__)

# W4: the revision whose turn this turn replaces (`edit_message`), for the turn's own code.
_EDITING: ContextVar[int | None] = ContextVar("picoflow_editing", default=None)


# TurnResult.error of a request refused before it ran (E2): the caller must change it.
INVALID_REQUEST = "InvalidRequest"
# TurnResult.error of a StoreError that retrying can never fix (retryable=False; H3).
STORE_REFUSED = "StoreRefused"
# TurnResult.error of a turn stopped at its deadline (H6): nothing was saved; send it again.
TURN_TIMEOUT = "TurnTimeout"


class _DeadlinePassed(Exception):
    """Raised when a turn's deadline stopped it before its save; never escapes `run`."""


class FlowEngine(
    PeopleInTheLoop, MemoryOperations, SpendingLimits, KeyedRuns, HistoryMethods, SessionLoading
):
    """Runs flows; holds the store, the model providers and the per-session locks.

    Approvals and handoff (K3-K6) come from `PeopleInTheLoop`: `resolve_approval`,
    `pending_approvals`, `operator_reply`, `return_to_flow`.
    """

    _result_type = TurnResult

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
    ) -> None:
        """Check every flow now, so a mistake fails here rather than at a live turn (F5).

        `turn_timeout` (seconds) bounds a whole turn before its save: a model or tool that
        hangs fails the turn instead of holding the session's lock forever (H6). `sleep` is
        how model-call retries wait (V9); tests pass one that records the delays and returns
        at once, so backoff is tested without waiting. `budgets` (O3) limits spending:
        `{"session_tokens": N, "owner_tokens_per_day": N, "model_calls_per_turn": N}`, any
        subset; a turn that would pass one fails with `BudgetExceeded` and saves nothing.
        `history_limit` revisions are kept per session, none older than `history_max_age`
        (seconds or a timedelta) but the current one; `archive_limit` evicted messages are
        kept per namespace, the newest (W5). `concurrent_turns` (O4) decides what a turn of a
        session running on another worker does: "reject" fails it with a conflict at its save,
        "queue" (needs `turn_timeout`) waits for the session's lease in the store. `embeddings`
        (a LangChain `Embeddings`) gives long-term memory vectors and hybrid search (L4).
        """
        self._sleep = sleep
        flows = list(flows)
        self._registry = ProviderRegistry(merged_providers(flows, providers))
        self._turn_timeout = as_turn_timeout(turn_timeout)
        self._budgets = Budgets.parse(budgets)
        self._telemetry = Telemetry()  # O1/O2: traces and metrics, a no-op until wanted
        self._flows: dict[str, type[Flow]] = {}
        for flow_class in flows:
            check_flow(flow_class, self._registry, self._flows)
            self._flows[flow_class.name] = flow_class
        built = [flow_class() for flow_class in self._flows.values()]
        for flow in built:
            for step in flow.steps.values():
                check_tool_names(step)
        self._mcp = MCPConnections(mcp_servers_of(built))
        self._store: Store = store if store is not None else store_from_environment()
        self._extra_tools = _extra_tools(self._store, self._mcp)  # every turn's: built once
        check_long_term(self._store, built, embeddings)  # L1, L3, L4
        self._embeddings = embeddings
        ttl = as_ttl(session_ttl) or ttl_from_environment()  # U6: SESSION_EXPIRATION
        limit_archive(self._store, archive_limit)
        self._sessions = Sessions(self._store, ttl, retention(history_limit, history_max_age))
        self._leases = turn_leases(concurrent_turns, self._turn_timeout, self._store)  # O4
        self._housekeeping = Housekeeping(self._sessions, self._registry, sleep)
        self._revisions = Revisions(self._sessions, ttl, self._housekeeping.cancel)
        self._housekeeping.telemetry, self._housekeeping.embeddings = self._telemetry, embeddings
        self._fresh_scripts = FreshScripts()  # F4: a test model rebuilt every turn
        if self._budgets is not None and self._budgets.counts_owners:
            check_ledger(self._store)

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
        (O4, H5, K5), the result is saved with the turn, and the same request sent again with
        the same key, to this engine or any other on the store, gets that result
        (`replayed=True`) instead of a second turn; see `docs/deployment.md`.
        """
        token = IDEMPOTENCY.set(idempotency_key)
        try:
            if idempotency_key is not None:
                request = (flow_name, message, session_id, config)
                return await self._run_keyed(idempotency_key, request, None, owner=owner)
            return await self._run(flow_name, message, session_id, config, None, owner=owner)
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

        token = IDEMPOTENCY.set(idempotency_key)  # the task copies the context now (K5)
        if idempotency_key is not None:  # O4: as in `run`; a replay has only "done"
            request = (flow_name, message, session_id, config)
            turn = self._run_keyed(idempotency_key, request, emit, owner=owner)
        else:
            turn = self._run(flow_name, message, session_id, config, emit, owner=owner)
        task = asyncio.ensure_future(turn)
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

    async def _run(
        self,
        flow_name: str,
        message: str,
        session_id: str | None,
        config: dict[str, Any] | None,
        emit: Callable[[str, dict[str, Any]], None] | None,
        *,
        owner: str | None,
        edit: int | None = None,
    ) -> TurnResult:
        token = _EDITING.set(edit)  # W4: this turn replaces the one of that revision
        try:
            with self._telemetry.turn(flow_name, session_id) as record:
                result = await self._run_locked(
                    flow_name, message, session_id, config, emit, owner=owner, record=record
                )
                record.outcome = "ok" if result.success else (result.error or "error")
                record.set("picoflow.step_after", result.step)
                record.set("picoflow.completed", result.completed)
        finally:
            _EDITING.reset(token)
        if not result.success and is_session_id(session_id):  # U5: on record with the next save
            self._sessions.note_failure(str(session_id), result.message, result.error)
        return result

    async def _run_locked(
        self,
        flow_name: str,
        message: str,
        session_id: str | None,
        config: dict[str, Any] | None,
        emit: Callable[[str, dict[str, Any]], None] | None,
        *,
        owner: str | None,
        record: CallRecord,
    ) -> TurnResult:
        problem = turn_input_problem(self._flows, flow_name, message, session_id, config)
        if problem is not None:
            return _failure(session_id, problem, INVALID_REQUEST)
        async with self._sessions.lock(session_id):
            try:
                flow_class = self._flows[flow_name]
                return await self._turn(
                    flow_class, message, session_id, config, emit, owner=owner, record=record
                )
            except _DeadlinePassed:
                logger.warning(
                    "turn stopped at its deadline of %ss",
                    self._turn_timeout,
                    extra={"session_id": session_id},
                )
                return _failure(
                    session_id,
                    f"The turn took longer than its deadline of {self._turn_timeout:g} s and was "
                    "stopped; the session was not changed. Send the message again.",
                    TURN_TIMEOUT,
                )
            except InvalidRequestError as exc:
                return _failure(session_id, str(exc), INVALID_REQUEST)
            except PicoflowError as exc:
                logger.warning("turn failed: %s", exc, extra={"session_id": session_id})
                refused = isinstance(exc, StoreError) and not exc.retryable
                error = STORE_REFUSED if refused else type(exc).__name__
                return _failure(session_id, str(exc), error)
            except Exception as exc:  # P3: any failure leaves the stored session untouched
                logger.exception("turn failed", extra={"session_id": session_id})
                return _failure(
                    session_id,
                    f"The turn failed and the session was not changed: {type(exc).__name__}: {exc}",
                    type(exc).__name__,
                )

    async def get_session(
        self, session_id: str, *, owner: str | None = None, revision: int | None = None
    ) -> JSONDict | None:
        """The stored session document (P1), or None (also if `owner` is not its owner).

        With `revision`, the document exactly as that revision saved it (W1), or None if the
        session keeps no such revision.
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

        Only `set_summary_config(..., background=True)` starts such work. Tests and batch
        jobs call this to observe its result; servers need not (`aclose` waits too). A
        background purge of expired sessions (W5) is waited for too.
        """
        await self._housekeeping.drain()
        await self._revisions.drain()

    # -- one turn -----------------------------------------------------------------------------

    async def _turn(
        self,
        flow_class: type[Flow],
        message: str,
        session_id: str | None,
        config: dict[str, Any] | None,
        emit: Callable[[str, dict[str, Any]], None] | None,
        *,
        owner: str | None,
        record: CallRecord,
    ) -> TurnResult:
        """One turn under the engine's deadline (H6), which ends where the write begins.

        The store write itself is never cut short: a turn stopped at its deadline was not
        saved at all, and one that reached its write is saved whole.
        """
        deadline = asyncio.timeout(self._turn_timeout)
        try:
            async with deadline, self._leases.hold(session_id):  # O4: "queue" waits in it
                return await self._turn_within(
                    flow_class,
                    message,
                    session_id,
                    config,
                    emit,
                    owner=owner,
                    deadline=deadline,
                    record=record,
                )
        except TimeoutError as exc:
            if deadline.expired():
                raise _DeadlinePassed from exc
            raise

    async def _turn_within(
        self,
        flow_class: type[Flow],
        message: str,
        session_id: str | None,
        config: dict[str, Any] | None,
        emit: Callable[[str, dict[str, Any]], None] | None,
        *,
        owner: str | None,
        deadline: asyncio.Timeout,
        record: CallRecord,
    ) -> TurnResult:
        edit = _EDITING.get()
        doc, spaces = await self._load_usable(flow_class, session_id, owner, edit)
        if (replay := replay_if_recorded(doc)) is not None:
            return replay  # O4: a keyed retry that waited for its session's first request
        step_before = None if doc is None else doc.get("current_step")
        flow = flow_class()
        if doc is not None and _overrides(flow, "migrate_session"):  # V10: upgrade it first
            doc, spaces = await migrate(flow, doc, spaces)
        if doc is not None and not message.strip():
            return _empty_message(session_id)
        context = self._context_for(flow, owner if doc is None else doc.get("owner"))
        context.emit = emit
        context.ends = deadline.when()
        if self._budgets is not None:
            context.budget = await self._budget_for(doc, owner)
        fresh = doc is None
        for problem in await self._connect_tools(flow):
            flow.add_warning(problem)
        doc = await self._open(flow, doc, spaces, message, config, owner)
        self._fresh_scripts.check(flow, doc["id"], context.default_model)
        record.set("picoflow.step_before", flow._session.current)
        try:
            if is_batch_turn(flow):  # U8: config._concurrent runs spawn_steps instead
                reply = await run_batch(flow)
            else:  # K2, K6: a person may hold the turn
                reply = await run_or_hold(flow, message, context, doc)
            doc = keep_reply(doc, flow, reply)  # O4: the key's record goes in the turn's save
            note = turn_note(message, step_before, flow._session.current, reply, edit)
            saved = await self._save(flow, doc, context, fresh, deadline, note)
        finally:
            if context.budget is not None and context.budget.owner is not None:
                await self._count_owner(context.budget.owner, context.usage)
        record.set("picoflow.session_id", saved["id"])
        record.set("picoflow.revision", saved["revision"])
        return TurnResult(
            session_id=saved["id"],
            message=reply,
            success=True,
            completed=saved["run_status"] == "completed",
            step=saved["current_step"],
            content_type=flow._session.content_type,
            warnings=list(flow._session.warnings),
            usage=context.usage,
            pending_approvals=pending_approvals(flow),
        )

    async def _open(
        self,
        flow: Flow,
        doc: JSONDict | None,
        spaces: dict[str, Namespace] | None,
        message: str,
        config: dict[str, Any] | None,
        owner: str | None,
    ) -> JSONDict:
        """Load the session into the flow (or start a new one) and run the opening hooks."""
        if doc is None:
            doc = new_document(session_id_for_new(), flow.name, config)
            if owner is not None:
                doc["owner"] = owner  # H4: a top-level key, so no flow code can change it
            load_flow(flow, doc)
            if _overrides(flow, "init"):  # V10: after the session is loaded, before any hook
                await flow.init()
            await self._start(flow, message)
            return doc
        load_flow(flow, doc, spaces)
        warn_if_config_changed(flow, doc, config)
        if _overrides(flow, "init"):
            await flow.init()
        await flow._call_hook(flow.current_step.on_restore)
        return doc

    def _context_for(self, flow: Flow, owner: str | None) -> TurnContext:
        default = flow.config_model()
        context = TurnContext(
            registry=self._registry,
            default_model=parse_model(default, flow.name) if default is not None else None,
            usage=empty_usage(),
            extra_tools=self._extra_tools,
            store=self._store,
            sleep=self._sleep,
            telemetry=self._telemetry,
        )
        flow._services = TurnServices(
            owner=owner,  # L1: whose memory bank
            store=self._store,  # L5: flow.memory_bank()
            embeddings=self._embeddings,
            nested=NestedRuns(context),  # steps may run other steps in this turn (V2, V3)
            batch=BatchRuns(self, TurnResult),  # and start sessions of the same flow (U8)
        )
        return context

    async def _connect_tools(self, flow: Flow) -> list[str]:
        """Connect MCP servers not yet connected and check the names of their tools."""
        if not self._mcp:
            return []
        problems = await self._mcp.connect()
        for step in flow.steps.values():
            servers = [s for s in step._tool_sources if isinstance(s, MCPServer)]
            names = [t.name for s in servers for t in self._mcp.tools(s.name)]
            check_tool_names(step, names)
            if servers and all(self._mcp.tools(s.name) for s in servers):
                # V6: a group may take over MCP tools; their names are known now
                collect_groups(type(step), also=foreign_tool_names(step) + names)
        return problems

    async def _start(self, flow: Flow, message: str) -> None:
        """A new session: the cursor enters the initial step and `on_start` runs (T3).

        Without a first message, the step's `on_crossing` decides how the model is opened.
        """
        initial = flow.initial_step()
        step = flow.get_step(initial) if initial is not None else next(iter(flow.steps.values()))
        flow._session.current = step.name
        flow._session.sequence.append(step.name)
        await flow._call_hook(step.on_start)
        if not message:
            opener = await crossing_message(flow, step, None, None)
            if opener is not None:
                append_message(step, opener)

    async def _save(
        self,
        flow: Flow,
        doc: JSONDict,
        context: TurnContext,
        fresh: bool,
        deadline: asyncio.Timeout | None = None,
        note: JSONDict | None = None,
    ) -> JSONDict:
        """Write the turn once (P3).

        Reads top to bottom: the housekeeping due before the save, the commit, then the
        housekeeping that runs after it (background mode).
        """
        # M4: compaction is the first part of saving (unless it runs in the background).
        ends = deadline.when() if deadline is not None else None  # H6: compaction fits inside
        await self._housekeeping.before_save(flow, doc["memory"], context.usage, context.emit, ends)
        with self._telemetry.operation("store.save", session_id=doc["id"]):
            saved = await self._sessions.commit(
                flow, doc, context.usage, fresh=fresh, deadline=deadline, note=note
            )
        self._housekeeping.after_save(flow, saved)
        self._revisions.purge_soon()
        return saved


def _extra_tools(store: Store, mcp: MCPConnections) -> ExtraTools:
    """The tools every turn may add to a step: recall, the memory bank, LangChain and MCP."""
    return step_tools(bank_tools(store, recall_tools(store)), mcp)


def _overrides(flow: Flow, hook: str) -> bool:
    """Whether the flow defines its own `hook` (V10 hooks are skipped for the many that don't)."""
    return getattr(type(flow), hook) is not getattr(Flow, hook)


def _empty_message(session_id: str | None) -> TurnResult:
    return _failure(
        session_id,
        "The message is empty. Send the user's text; an empty message only starts a new "
        "session.",
        INVALID_REQUEST,
    )


def _failure(session_id: str | None, message: str, error: str) -> TurnResult:
    return TurnResult(
        session_id=session_id if is_session_id(session_id) else None,
        message=message,
        success=False,
        completed=False,
        step=None,
        error=error,
    )
