"""The engine's part for people in the loop (K3, K4, K6, K7): the `People` part.

Each method works on the stored session under the session's lock (P4) and saves with the
revision check, so it behaves the same from any engine or process on the same store. Failures
come back as `TurnResult(success=False, error=...)`, as turns do: "InvalidRequest",
"SessionNotFound", "ApprovalNotFound", "ApprovalInProgress", "ApprovalAlreadyResolved",
"NotInHandoff", or the name of the error class.

A resolve is budgeted like a turn (K10, O3): it is refused before the approved tool runs when
the session or its owner is already at a limit, its model calls are checked as a turn's are, and
its tokens count in the owner's day. Every save names its cause in the history (`action`:
"approval", "operator", "return").
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from picoflow._internal.call_keys import TURN
from picoflow._internal.people_records import find_approval, operator_of, pending_of
from picoflow._internal.results import TurnResult
from picoflow._runner.people.handoff import add_operator_reply, give_back
from picoflow._runner.people.hold import turn_label
from picoflow._runner.people.resume import (
    DECISIONS,
    ResolveProblem,
    claim,
    continue_step,
    decline_outcome,
    interrupted_outcome,
    lease_over,
    record_result,
    run_approved,
)
from picoflow._runner.turn import TurnContext
from picoflow.engine._budgets import Spending
from picoflow.engine._turns import failure
from picoflow.errors import BudgetExceeded, PicoflowError, StoreError
from picoflow.flow import Flow
from picoflow.session import empty_usage, is_session_id, load_flow
from picoflow.session._keeper import SessionKeeper
from picoflow.session._migration import migrate
from picoflow.step import Step
from picoflow.stores.base import JSONDict

if TYPE_CHECKING:
    from picoflow.stores.base import ListsWaiting

__all__ = ["People", "SavesTurns"]

logger = logging.getLogger(__name__)

_INVALID = "InvalidRequest"


class SavesTurns(Protocol):
    """What a resolve needs of the engine's turn machinery: a turn's context and its save."""

    def context_for(self, flow: Flow, owner: str | None) -> TurnContext: ...

    async def save(
        self,
        flow: Flow,
        doc: JSONDict,
        context: TurnContext,
        fresh: bool,
        deadline: Any = None,
        note: JSONDict | None = None,
    ) -> JSONDict: ...


class People:
    """Approvals and handoff of an engine (docs/people-in-the-loop.md).

    Given the `SessionKeeper`, the registered flows, the store's `waiting` ability (or None) and
    the turn machinery (`SavesTurns`): an approved call continues the step exactly as a
    turn would, with the turn's context, budget (`spending`, None without budgets) and save.

    `approval_lease()` reads the engine's `approval_lease` at each resolve, so setting it on
    the engine (or on a subclass) takes effect at once.
    """

    def __init__(
        self,
        sessions: SessionKeeper,
        flows: dict[str, type[Flow]],
        waiting: ListsWaiting | None,
        turns: SavesTurns,
        approval_lease: Callable[[], float],
        spending: Spending | None = None,
    ) -> None:
        self._sessions = sessions
        self._flows = flows
        self._waiting = waiting
        self._turns = turns
        self._approval_lease = approval_lease
        self._spending = spending

    async def pending_approvals(self, session_id: str) -> list[dict[str, Any]]:
        """The approvals that wait in this session, oldest first (K4); [] for an unknown id."""
        if not is_session_id(session_id):
            return []
        doc, _ = await self._sessions.load(session_id)
        if doc is None:
            return []
        return [
            {k: v for k, v in a.items() if k != "held"}
            for a in doc.get("approvals") or []
            if a["status"] == "pending"
        ]

    async def waiting(self, limit: int = 100) -> list[dict[str, Any]]:
        """Sessions where a person is expected, newest first (K7): for an operator's queue."""
        if self._waiting is None:  # a TypeError, as K7's tests have always read it
            raise TypeError(
                f"{type(self._sessions.store).__name__} cannot list the sessions that wait for "
                "a person; give it a waiting(limit) method (MemoryStore, SQLiteStore and "
                "MongoStore have one)."
            )
        found: list[dict[str, Any]] = await self._waiting.waiting(limit)
        return found

    async def resolve_approval(
        self,
        session_id: str,
        approval_id: str,
        decision: str,
        args: dict[str, Any] | None = None,
        by: str | None = None,
        note: str | None = None,
    ) -> TurnResult:
        """Decide a pending approval; the step continues from that tool call (K3)."""
        problem = _decision_problem(decision, args)
        if problem is not None:
            return failure(session_id, problem, "InvalidRequest")
        async with self._sessions.lock(session_id):
            return await self._guarded(
                session_id, self._resolve(session_id, approval_id, decision, args, by, note)
            )

    async def operator_reply(self, session_id: str, text: str, by: str | None = None) -> TurnResult:
        """Answer the user as the operator of a session that was handed off (K6)."""
        if not isinstance(text, str) or not text.strip():
            return failure(session_id, "The operator's reply is empty; send the text.", _INVALID)
        async with self._sessions.lock(session_id):
            return await self._guarded(session_id, self._operator_reply(session_id, text, by))

    async def return_to_flow(
        self,
        session_id: str,
        step: type[Step] | str | None = None,
        note: str | None = None,
        by: str | None = None,
    ) -> TurnResult:
        """Give a handed-off conversation back to the flow, at `step` or where it was (K6)."""
        async with self._sessions.lock(session_id):
            return await self._guarded(session_id, self._return(session_id, step, note, by))

    # -- the work ----------------------------------------------------------------------------

    async def _resolve(
        self,
        session_id: str,
        approval_id: str,
        decision: str,
        args: dict[str, Any] | None,
        by: str | None,
        note: str | None,
    ) -> TurnResult:
        flow, doc = await self._load_running(session_id)
        approval = find_approval(flow._session, approval_id)
        if approval is None:
            raise ResolveProblem(
                f"Session '{session_id}' has no approval '{approval_id}'. List what waits with "
                "pending_approvals(session_id) (GET /ai/approvals).",
                "ApprovalNotFound",
            )
        ctx = self._turns.context_for(flow, doc.get("owner"))  # L1: the owner's bank, as in a turn
        if approval["status"] not in ("pending", "running"):
            if approval.get("decision") != decision:
                raise ResolveProblem(_already(approval, decision), "ApprovalAlreadyResolved")
            if approval.get("reply") is not None:
                return _result(flow, doc, approval["reply"], ctx)  # K3: the recorded outcome
        if self._spending is not None:  # K10: budgeted like a turn, refused before the tool
            ctx.budget = await self._spending.budget_for(doc, doc.get("owner"))
            ctx.budget.at_start()
        try:
            return await self._carry_out(flow, doc, ctx, approval, (decision, args, by, note))
        finally:
            if ctx.budget is not None and ctx.budget.owner is not None and self._spending:
                await self._spending.count_owner(ctx.budget.owner, ctx.usage)  # O3: spent

    async def _carry_out(
        self,
        flow: Flow,
        doc: JSONDict,
        ctx: TurnContext,
        approval: dict[str, Any],
        asked: tuple[str, dict[str, Any] | None, str | None, str | None],
    ) -> TurnResult:
        """Claim, run and record the call (K3), as far as its status says is left to do."""
        decision, args, by, note = asked
        step = flow.get_step(approval["step"])
        status = approval["status"]
        if status == "pending":
            claim(approval, step, ctx, decision, args, by, note)
            if decision == "reject":
                outcome = decline_outcome(approval, by, note)
            else:
                doc = await self._commit_part(flow, doc)  # 1: claimed, before the tool runs
                outcome = await run_approved(step, ctx, approval)
            destination, text = await record_result(flow, step, approval, outcome)
            if decision != "reject":
                doc = await self._commit_part(flow, doc)  # 2: the result, recorded once
        elif status == "running":
            if not lease_over(approval, self._approval_lease()):
                raise ResolveProblem(_in_progress(approval), "ApprovalInProgress")
            destination, text = await record_result(
                flow, step, approval, interrupted_outcome(approval)
            )
            approval["status"] = "interrupted"
            doc = await self._commit_part(flow, doc)
        else:
            destination, text = flow.current_step, None  # the model failed last time: ask again
        recorded = status != "pending" or decision != "reject"  # the call's result is saved
        return await self._finish(flow, doc, ctx, approval, (destination, text, recorded))

    async def _finish(
        self,
        flow: Flow,
        doc: JSONDict,
        ctx: TurnContext,
        approval: dict[str, Any],
        answer: tuple[Step, str | None, bool],
    ) -> TurnResult:
        """The model answers the recorded result (3); its reply is saved on the record.

        `answer` is the step that answers, the reply if a transition already made one, and
        whether the call's result is already saved (then a budget refusal says so).
        """
        destination, text, recorded = answer
        if text is None:
            token = TURN.set(turn_label(doc))
            try:
                text = await continue_step(flow, destination, ctx)
            except BudgetExceeded as exc:
                if recorded:  # K8: the effect happened and is on record; say so
                    raise ResolveProblem(_refused_after(approval, exc), "BudgetExceeded") from exc
                raise
            finally:
                TURN.reset(token)
        approval["reply"] = text
        note = _note("approval", doc, flow, text)
        saved = await self._turns.save(flow, doc, ctx, False, note=note)
        logger.info(
            "approval %s resolved: %s",
            approval["id"],
            approval.get("decision"),
            extra={"session_id": saved["id"], "step": approval["step"]},
        )
        return _result(flow, saved, text, ctx)

    async def _operator_reply(self, session_id: str, text: str, by: str | None) -> TurnResult:
        flow, doc = await self._load_running(session_id)
        _require_handoff(flow, session_id)
        add_operator_reply(flow, text, by)
        note = _note("operator", doc, flow, text)
        saved = await self._sessions.commit(flow, doc, empty_usage(), note=note)
        return _result(flow, saved, text, None)

    async def _return(
        self, session_id: str, step: type[Step] | str | None, note: str | None, by: str | None
    ) -> TurnResult:
        flow, doc = await self._load_running(session_id)
        _require_handoff(flow, session_id)
        name = await give_back(flow, step, note, by)
        text = f"The conversation is back with the flow, at {name}."
        saved = await self._sessions.commit(
            flow, doc, empty_usage(), note=_note("return", doc, flow, text)
        )
        return _result(flow, saved, text, None)

    async def _commit_part(self, flow: Flow, doc: JSONDict) -> JSONDict:
        """Save a part of a resolve; the flow object goes on, so the cache must not share it."""
        note = _note("approval", doc, flow, None)
        saved = await self._sessions.commit(flow, doc, empty_usage(), note=note)
        self._sessions.forget(saved["id"])
        people = flow._session.people
        people.setdefault("turn_warnings", []).extend(flow._session.warnings)
        flow._session.warnings.clear()  # saved now; the next save must not add them again
        return saved

    async def _load_running(self, session_id: str) -> tuple[Flow, JSONDict]:
        """The running session as a turn would load it (V10 migration, init, on_restore)."""
        if not is_session_id(session_id):
            raise ResolveProblem(f"{session_id!r} is not a session id.", "InvalidRequest")
        doc, spaces = await self._sessions.load(session_id)
        flow_class = self._flows.get(doc["flow"]) if doc is not None else None
        if doc is None or flow_class is None or doc.get("run_status") != "running":
            raise ResolveProblem(
                f"There is no running session '{session_id}' on this engine.", "SessionNotFound"
            )
        flow = flow_class()
        if type(flow).migrate_session is not Flow.migrate_session:
            migrated, spaces = await migrate(flow, doc, spaces)
            if migrated is None:
                raise ResolveProblem(f"Session '{session_id}' was retired.", "SessionNotFound")
            doc = migrated
        load_flow(flow, doc, spaces)
        if type(flow).init is not Flow.init:
            await flow.init()
        await flow._call_hook(flow.current_step.on_restore)
        return flow, doc

    async def _guarded(self, session_id: str, work: Awaitable[TurnResult]) -> TurnResult:
        """The P3 boundary of these methods: a failure leaves the session as it was saved."""
        try:
            return await work
        except ResolveProblem as problem:
            return failure(session_id, str(problem), problem.error)
        except PicoflowError as exc:
            logger.warning("resolve failed: %s", exc, extra={"session_id": session_id})
            refused = isinstance(exc, StoreError) and not exc.retryable
            return failure(session_id, str(exc), "StoreRefused" if refused else type(exc).__name__)
        except Exception as exc:  # P3: the turn boundary of a resolve or operator action
            logger.exception("people-in-the-loop action failed", extra={"session_id": session_id})
            return failure(
                session_id,
                f"The action failed and the session was left as last saved: "
                f"{type(exc).__name__}: {exc}",
                type(exc).__name__,
            )


def _decision_problem(decision: Any, args: Any) -> str | None:
    if decision not in DECISIONS:
        return f"decision must be one of {', '.join(DECISIONS)}; got {decision!r}."
    if decision == "edit" and not isinstance(args, dict):
        return "An 'edit' decision needs the new arguments as a dict (args={...})."
    if decision != "edit" and args is not None:
        return "Only an 'edit' decision takes args; send decision='edit' to change them."
    return None


def _require_handoff(flow: Flow, session_id: str) -> None:
    if operator_of(flow._session) is None:
        raise ResolveProblem(
            f"Session '{session_id}' is not handed off to an operator; a step hands it over "
            "by returning handoff(note).",
            "NotInHandoff",
        )


def _note(action: str, doc: JSONDict, flow: Flow, reply: str | None) -> JSONDict:
    """What a revision of a person's action records (W1): its cause (K10) and the steps."""
    return {
        "action": action,
        "step_before": doc.get("current_step"),
        "step_after": flow._session.current,
        "reply": reply,
    }


def _refused_after(approval: dict[str, Any], exc: BudgetExceeded) -> str:
    """A budget refusal of the model's answer to a call that already ran (K8, K10)."""
    return (
        f"Budget {exc.budget!r} exceeded: the model's answer would reach {exc.used}, over the "
        f"limit of {exc.limit}. The approved call of {approval['tool']} ran before that and "
        f"its result is saved in the session (approval '{approval['id']}'); resolving it again "
        "asks the model again and never runs the tool again. Raise the limit, or wait for the "
        "limit's period to pass."
    )


def _in_progress(approval: dict[str, Any]) -> str:
    return (
        f"Approval '{approval['id']}' is being carried out (claimed at "
        f"{approval.get('resolved_at')}); ask again once it is done."
    )


def _already(approval: dict[str, Any], decision: str) -> str:
    return (
        f"Approval '{approval['id']}' was already decided: {approval.get('decision')} by "
        f"{approval.get('resolved_by')}; it cannot be changed to {decision!r}."
    )


def _result(flow: Flow, saved: JSONDict, text: str, ctx: TurnContext | None) -> TurnResult:
    session = flow._session
    warnings = list(session.people.get("turn_warnings") or []) + list(session.warnings)
    return TurnResult(
        session_id=saved["id"],
        message=text,
        success=True,
        completed=saved["run_status"] == "completed",
        step=saved["current_step"],
        content_type=session.content_type,
        warnings=warnings,
        usage=ctx.usage if ctx is not None else empty_usage(),
        pending_approvals=pending_of(session),
    )
