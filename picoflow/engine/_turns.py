"""One turn of the engine, from its request to its save (E1-E4, P3-P5, H6): the `Turns` part.

A turn is atomic: it loads the session, runs on a fresh flow object, and writes the document
once at the end with a revision check. Anything that goes wrong before that write leaves the
stored session exactly as it was, and the `TurnResult` says why. `run` reads as the sequence
it is: check the request, take the session's lock, hold the deadline and the lease, load,
open, answer, save.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from picoflow._housekeeping.scheduler import Housekeeping
from picoflow._internal.effects import turn_effects
from picoflow._internal.results import TurnResult
from picoflow._internal.services import TurnServices
from picoflow._internal.session_log import log_entry
from picoflow._internal.usage import add_counters
from picoflow._ops import CallRecord, Telemetry
from picoflow._runner.effect_claims import release_claims
from picoflow._runner.nested import NestedRuns
from picoflow._runner.people.hold import pending_approvals, run_or_hold
from picoflow._runner.turn import TurnContext
from picoflow.engine._batch import BatchRuns, is_batch_turn, run_batch
from picoflow.engine._budgets import Spending
from picoflow.engine._checks import turn_input_problem
from picoflow.engine._effects import Stopped, reply_keeping_effects
from picoflow.engine._fresh_scripts import FreshScripts
from picoflow.engine._idempotent import keep_reply, replay_if_recorded
from picoflow.engine._leases import TurnLeases
from picoflow.engine._loading import InvalidRequestError, SessionLoader
from picoflow.engine._mcp import MCPConnections
from picoflow.engine._opening import connect_tools, extra_tools, open_flow, upgraded
from picoflow.engine._request import TurnRequest
from picoflow.engine._revisions import Revisions, turn_note
from picoflow.errors import PicoflowError, StoreError
from picoflow.flow import Flow
from picoflow.models import ProviderRegistry, parse_model
from picoflow.session import empty_usage, is_session_id
from picoflow.session._keeper import SessionKeeper
from picoflow.stores.base import JSONDict

__all__ = ["INVALID_REQUEST", "STORE_REFUSED", "TURN_TIMEOUT", "EngineServices", "Turns"]

logger = logging.getLogger("picoflow.engine")

# TurnResult.error of a request refused before it ran (E2): the caller must change it.
INVALID_REQUEST = "InvalidRequest"
# TurnResult.error of a StoreError that retrying can never fix (retryable=False; H3).
STORE_REFUSED = "StoreRefused"
# TurnResult.error of a turn stopped at its deadline (H6): nothing was saved; send it again.
TURN_TIMEOUT = "TurnTimeout"


class _DeadlinePassed(Exception):
    """Raised when a turn's deadline stopped it before its save; never escapes `run`."""


@dataclass(frozen=True, slots=True)
class EngineServices:
    """What the engine lends every turn, built once with the engine (its dependencies).

    Attributes:
        registry: the model providers (V9).
        sessions: loads, locks and commits the documents (P3, P4).
        telemetry: where turns report (O1, O2).
        housekeeping: the work a save does (M4) and its background tasks.
        revisions: the history side, for a turn's note and the background purge (W1, W5).
        leases: the O4 session leases ("queue"), or nothing to hold ("reject").
        mcp: the MCP connections (V6).
        batch: what `Flow.concurrent_steps` runs sessions through (U8).
        spending: the O3 budgets, or None without any.
        embeddings: the LangChain `Embeddings` of long-term memory (L4), or None.
        sleep: how model-call retries wait (V9).
        turn_timeout: seconds a turn may take before its save (H6), or None.
        decisions: the decision providers by id (D2).
    """

    registry: ProviderRegistry
    sessions: SessionKeeper
    telemetry: Telemetry
    housekeeping: Housekeeping
    revisions: Revisions
    leases: TurnLeases
    mcp: MCPConnections
    batch: BatchRuns
    spending: Spending | None
    embeddings: Any
    sleep: Callable[[float], Awaitable[Any]]
    turn_timeout: float | None
    decisions: Mapping[str, Any] = field(default_factory=dict)


class Turns:
    """The turn machinery of an engine: `run` one request; `context_for` and `save` for parts.

    The people part resolves an approval with this part's context and save, so a resumed
    step runs and saves exactly as a turn does.
    """

    def __init__(
        self, flows: dict[str, type[Flow]], services: EngineServices, loader: SessionLoader
    ) -> None:
        self._flows = flows
        self._services = services
        self._loader = loader
        self._store = services.sessions.store
        self._extra_tools = extra_tools(self._store, services.mcp)  # every turn's: built once
        self._fresh_scripts = FreshScripts()  # F4: a test model rebuilt every turn

    async def run(self, request: TurnRequest) -> TurnResult:
        """Run one turn; never raises for run failures (they come back as success=False)."""
        services = self._services
        with services.telemetry.turn(request.flow_name, request.session_id) as record:
            result = await self._run_locked(request, record)
            record.outcome = "ok" if result.success else (result.error or "error")
            record.set("picoflow.step_after", result.step)
            record.set("picoflow.completed", result.completed)
        # U5: a failed turn's error is written with the failure; a replay has nothing new to
        # write, and a turn stopped after an effect (K8) wrote it with its own save
        failed = not (result.success or result.replayed or result.effects)
        if failed and is_session_id(request.session_id):
            await services.sessions.note_failure(
                str(request.session_id),
                result.message,
                result.error,
                request.owner,
                services.leases.free,
            )
        return result

    async def _run_locked(self, request: TurnRequest, record: CallRecord) -> TurnResult:
        """Check the request (E2), then run it under the session's lock (P4) and P3 boundary."""
        session_id = request.session_id
        problem = turn_input_problem(
            self._flows, request.flow_name, request.message, session_id, request.config
        )
        if problem is not None:
            return failure(session_id, problem, INVALID_REQUEST)
        async with self._services.sessions.lock(session_id):
            try:
                return await self._turn(request, record)
            except _DeadlinePassed:
                return self._past_deadline(session_id)
            except InvalidRequestError as exc:
                return failure(session_id, str(exc), INVALID_REQUEST)
            except PicoflowError as exc:
                logger.warning("turn failed: %s", exc, extra={"session_id": session_id})
                refused = isinstance(exc, StoreError) and not exc.retryable
                error = STORE_REFUSED if refused else type(exc).__name__
                return failure(session_id, str(exc), error)
            except Exception as exc:  # P3: any failure leaves the stored session untouched
                logger.exception("turn failed", extra={"session_id": session_id})
                return failure(
                    session_id,
                    f"The turn failed and the session was not changed: {type(exc).__name__}: {exc}",
                    type(exc).__name__,
                )

    def _past_deadline(self, session_id: str | None) -> TurnResult:
        """H6: the turn was stopped at its deadline, before its save."""
        timeout = self._services.turn_timeout
        logger.warning(
            "turn stopped at its deadline of %ss", timeout, extra={"session_id": session_id}
        )
        return failure(
            session_id,
            f"The turn took longer than its deadline of {timeout:g} s and was "
            "stopped; the session was not changed. Send the message again.",
            TURN_TIMEOUT,
        )

    async def _turn(self, request: TurnRequest, record: CallRecord) -> TurnResult:
        """One turn under the engine's deadline (H6), which ends where the write begins.

        The store write itself is never cut short: a turn stopped at its deadline was not
        saved at all, and one that reached its write is saved whole.
        """
        deadline = asyncio.timeout(self._services.turn_timeout)
        try:
            async with deadline, self._services.leases.hold(request.session_id):  # O4: "queue"
                return await self._turn_within(request, deadline, record)
        except TimeoutError as exc:
            if deadline.expired():
                raise _DeadlinePassed from exc
            raise

    async def _turn_within(
        self, request: TurnRequest, deadline: asyncio.Timeout, record: CallRecord
    ) -> TurnResult:
        """Load, open, answer and save: the turn's steps, each a function of its own."""
        flow_class = self._flows[request.flow_name]
        loader = self._loader
        doc, spaces = await loader.load_usable(
            flow_class, request.session_id, request.owner, request.edit
        )
        if (replay := replay_if_recorded(doc)) is not None:
            return replay  # O4: a keyed retry that waited for its session's first request
        step_before = None if doc is None else doc.get("current_step")
        flow = flow_class()
        doc, spaces = await upgraded(flow, doc, spaces)  # V10: upgrade it first
        if doc is not None and not request.message.strip():
            return _empty_message(request.session_id)
        context = await self._turn_context(flow, doc, request, deadline)
        fresh = doc is None
        doc = await self._opened(flow, doc, spaces, request, context)
        record.set("picoflow.step_before", flow._session.current)
        asked = (request, step_before, fresh)
        reply, saved, stopped = await self._answer(flow, doc, context, asked, deadline)
        record.set("picoflow.session_id", saved["id"])
        record.set("picoflow.revision", saved["revision"])
        return _turn_result(flow, saved, reply, context, stopped)

    async def _turn_context(
        self, flow: Flow, doc: JSONDict | None, request: TurnRequest, deadline: asyncio.Timeout
    ) -> TurnContext:
        """The turn's context: its owner (the session's, once it has one), stream and budget."""
        context = self.context_for(flow, request.owner if doc is None else doc.get("owner"))
        context.emit = request.emit
        context.ends = deadline.when()
        spending = self._services.spending
        if spending is not None:
            context.budget = await spending.budget_for(doc, request.owner)
        return context

    async def _opened(
        self,
        flow: Flow,
        doc: JSONDict | None,
        spaces: dict[str, Any] | None,
        request: TurnRequest,
        context: TurnContext,
    ) -> JSONDict:
        """Connect the tools, load or start the session, and check the test scripts (F4)."""
        for problem in await connect_tools(self._services.mcp, flow):
            flow.add_warning(problem)
        opened = await open_flow(flow, doc, spaces, request)
        self._fresh_scripts.check(flow, opened["id"], context.default_model)
        return opened

    async def _answer(
        self,
        flow: Flow,
        doc: JSONDict,
        context: TurnContext,
        asked: tuple[TurnRequest, str | None, bool],
        deadline: asyncio.Timeout,
    ) -> tuple[str, JSONDict, Stopped | None]:
        """The reply, the saved document and, for a turn stopped after an effect, why (K8).

        `asked` is the request, the step the session was at before it, and whether it is new.
        The owner's tokens count, saved or not (O3).
        """
        request, step_before, fresh = asked

        async def reply_of() -> str:
            if is_batch_turn(flow):  # U8: config._concurrent runs spawn_steps instead
                return await run_batch(flow)
            return await run_or_hold(flow, request.message, context, doc)  # K2, K6

        try:
            reply, stopped = await reply_keeping_effects(flow, reply_of, deadline, TURN_TIMEOUT)
            if stopped is not None:  # U5: its error goes with the save that keeps the effect
                error = {**log_entry("error", reply), "error": stopped.error}
                flow._session.logs.setdefault("error", []).append(error)
            # O4: the key's record goes in the turn's save
            doc = keep_reply(doc, flow, reply, stopped.error if stopped else None)
            note = turn_note(
                request.message, step_before, flow._session.current, reply, request.edit
            )
            ends = None if stopped else deadline  # K8: a stopped turn's save is not cut short
            saved = await self.save(flow, doc, context, fresh, ends, note)
        finally:
            spending = self._services.spending
            budget = context.budget
            if spending is not None and budget is not None and budget.owner is not None:
                await spending.count_owner(budget.owner, context.usage)
        return reply, saved, stopped

    def context_for(self, flow: Flow, owner: str | None) -> TurnContext:
        """A turn's context, and the services its flow borrows (`TurnServices`)."""
        services = self._services
        default = flow.config_model()
        context = TurnContext(
            registry=services.registry,
            default_model=parse_model(default, flow.name) if default is not None else None,
            usage=empty_usage(),
            extra_tools=self._extra_tools,
            store=self._store,
            sleep=services.sleep,
            telemetry=services.telemetry,
            decisions=services.decisions,  # D2
        )
        flow._services = TurnServices(
            owner=owner,  # L1: whose memory bank
            store=self._store,  # L5: flow.memory_bank()
            embeddings=services.embeddings,
            nested=NestedRuns(context),  # steps may run other steps in this turn (V2, V3)
            batch=services.batch,  # and start sessions of the same flow (U8)
            engine=services.batch.engine,  # D4: Flow.get_flow_engine()
        )
        return context

    async def save(
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
        services = self._services
        # M4: compaction is the first part of saving (unless it runs in the background).
        ends = deadline.when() if deadline is not None else None  # H6: compaction fits inside
        await services.housekeeping.before_save(
            flow, doc["memory"], context.usage, context.emit, ends
        )
        with services.telemetry.operation("store.save", session_id=doc["id"]):
            saved = await services.sessions.commit(
                flow, doc, context.usage, fresh=fresh, deadline=deadline, note=note
            )
        services.housekeeping.after_save(flow, saved)
        services.revisions.purge_soon()
        if done := [e["key"] for e in turn_effects(flow._session)]:  # K8: on record now
            await release_claims(self._store, context.attempt, done)
        return saved


def _turn_result(
    flow: Flow, saved: JSONDict, reply: str, context: TurnContext, stopped: Stopped | None
) -> TurnResult:
    """A turn's result, from what it saved: successful, or stopped after an effect (K8)."""
    return TurnResult(
        session_id=saved["id"],
        message=reply,
        success=stopped is None,
        error=None if stopped is None else stopped.error,
        effects=turn_effects(flow._session),
        completed=saved["run_status"] == "completed",
        step=saved["current_step"],
        content_type=flow._session.content_type,
        warnings=list(flow._session.warnings),
        usage=context.usage,
        pending_approvals=pending_approvals(flow),
        decision_usage=add_counters(None, flow._session.decision_usage),  # D3
    )


def _empty_message(session_id: str | None) -> TurnResult:
    return failure(
        session_id,
        "The message is empty. Send the user's text; an empty message only starts a new session.",
        INVALID_REQUEST,
    )


def failure(session_id: str | None, message: str, error: str) -> TurnResult:
    """A turn's failed result (P3): nothing was saved; `error` names why."""
    return TurnResult(
        session_id=session_id if is_session_id(session_id) else None,
        message=message,
        success=False,
        completed=False,
        step=None,
        error=error,
    )
