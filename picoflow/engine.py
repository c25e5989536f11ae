"""FlowEngine: runs turns of registered flows against a session store (E1-E4, P3-P5).

A turn is atomic: the engine loads the session, runs the turn on a fresh flow object, and writes
the document once at the end with a revision check. Anything that goes wrong before that write
leaves the stored session exactly as it was, and the `TurnResult` says why.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage

from ._engine_checks import check_flow, turn_input_problem
from ._engine_history import HistoryMethods
from ._housekeeping.scheduler import Housekeeping
from ._loop import run_turn
from ._mcp import MCPConnections
from ._migration import migrate
from ._nested import NestedRuns
from ._recall import recall_tools
from ._revisions import Revisions, limit_archive, retention, turn_note
from ._sessions import Sessions
from ._state import now_iso
from ._tool_sources import check_tool_names, foreign_tool_names, mcp_servers_of, step_tools
from ._turn import TurnContext, append_message
from .errors import PicoflowError, SessionConflictError, SessionNotFoundError, StoreError
from .flow import Flow
from .mcp import MCPServer
from .memory import Namespace
from .models import ProviderFactory, ProviderRegistry, parse_model
from .session import (
    continuation,
    empty_usage,
    is_session_id,
    load_flow,
    new_document,
    new_session_id,
)
from .stores import Store
from .stores.base import JSONDict
from .tools import collect_groups

__all__ = ["FlowEngine", "TurnResult", "StreamEvent"]

logger = logging.getLogger(__name__)


# TurnResult.error of a request refused before it ran (E2): the caller must change it.
INVALID_REQUEST = "InvalidRequest"
# TurnResult.error of a StoreError that retrying can never fix (retryable=False; H3).
STORE_REFUSED = "StoreRefused"
# TurnResult.error of a turn stopped at its deadline (H6): nothing was saved; send it again.
TURN_TIMEOUT = "TurnTimeout"


class _InvalidRequest(Exception):
    """Raised inside a turn for a request that cannot run as sent; never escapes `run`."""


class _DeadlinePassed(Exception):
    """Raised when a turn's deadline stopped it before its save; never escapes `run`."""


@dataclass(frozen=True)
class TurnResult:
    """What one turn produced (E4). Branch on `success`, then read `completed`.

    `error` says why a turn failed, so a server can map it to a status code without parsing the
    message: "InvalidRequest" for a request that cannot run as sent (E2: unknown flow, invalid
    session id, empty message on a running session, a session of another flow), "StoreRefused"
    for a `StoreError` that retrying can never fix (`retryable=False`), otherwise the
    name of the error class (e.g. "SessionConflictError", "ToolLoopError", or "KeyError" for an
    exception that escaped flow code), or "TurnTimeout" for a turn stopped at the engine's
    `turn_timeout` (nothing was saved; the same message may be sent again).
    """

    session_id: str | None
    message: str
    success: bool
    completed: bool
    step: str | None
    content_type: str = "text/plain"
    warnings: list[str] = field(default_factory=list)
    usage: dict[str, dict[str, int]] = field(default_factory=empty_usage)
    error: str | None = None


@dataclass(frozen=True)
class StreamEvent:
    """One event of `FlowEngine.stream`.

    `kind` is "token" (`data["text"]`, reply text as it arrives), "retract" (`step`, `text`: a
    model call failed, or came back empty, after streaming `text`; take it back from the end
    of the token text), "tool_call" (`name`, `args`, `step`), "step_changed"
    (`from`, `to`), "logic_step" (`step`, `parent`: a logic step ran), "nested_start" /
    "nested_end" (`step`, `parent`, `depth`: a nested run began or returned), "compaction"
    (`namespace`, `outcome`) or "done" (`result` holds the TurnResult; always the last event).
    """

    kind: str
    data: dict[str, Any] = field(default_factory=dict)
    result: TurnResult | None = None


class FlowEngine(HistoryMethods):
    """Runs flows; holds the store, the model providers and the per-session locks."""

    def __init__(
        self,
        flows: Iterable[type[Flow]],
        store: Store | None = None,
        providers: Mapping[str, ProviderFactory] | None = None,
        session_ttl: timedelta | float | None = None,
        *,
        turn_timeout: float | None = None,
        sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
        history_limit: int = 50,
        history_max_age: timedelta | float | None = None,
        archive_limit: int | None = 1000,
    ) -> None:
        """Check every flow now, so a mistake fails here rather than at a live turn (F5).

        `turn_timeout` (seconds) bounds a whole turn before its save: a model or tool that
        hangs fails the turn instead of holding the session's lock forever (H6). `sleep` is
        how model-call retries wait (V9); tests pass one that records the delays and returns
        at once, so backoff is tested without waiting. `history_limit` revisions are kept per
        session, none older than `history_max_age` (seconds or a timedelta) but the current
        one; `archive_limit` evicted messages are kept per namespace, the newest (W5).
        """
        self._sleep = sleep
        self._registry = ProviderRegistry(providers)
        self._turn_timeout = _as_turn_timeout(turn_timeout)
        self._flows: dict[str, type[Flow]] = {}
        for flow_class in flows:
            check_flow(flow_class, self._registry, self._flows)
            self._flows[flow_class.name] = flow_class
        built = [flow_class() for flow_class in self._flows.values()]
        for flow in built:
            for step in flow.steps.values():
                check_tool_names(step)
        self._mcp = MCPConnections(mcp_servers_of(built))
        self._store: Store = store if store is not None else _store_from_environment()
        kept = retention(history_limit, history_max_age)
        limit_archive(self._store, archive_limit)
        self._sessions = Sessions(self._store, _as_ttl(session_ttl), kept)
        self._housekeeping = Housekeeping(self._sessions, self._registry, sleep)
        self._revisions = Revisions(self._sessions, _as_ttl(session_ttl), self._housekeeping.cancel)

    def flow_names(self) -> list[str]:
        """The registered flow names."""
        return list(self._flows)

    @property
    def store(self) -> Store:
        """The session store this engine writes to."""
        return self._store

    async def run(
        self,
        flow_name: str,
        message: str,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
    ) -> TurnResult:
        """Run one turn; never raises for run failures (they come back as success=False).

        `owner` (H4) names who runs the turn: a new session records it, and a session recorded
        with another owner (or none) is treated as unknown, so a new session starts (P5).
        Without `owner` the caller is trusted with any session id.
        """
        return await self._run(flow_name, message, session_id, config, None, owner=owner)

    async def stream(
        self,
        flow_name: str,
        message: str,
        session_id: str | None = None,
        config: dict[str, Any] | None = None,
        *,
        owner: str | None = None,
    ) -> AsyncIterator[StreamEvent]:
        """Run one turn, yielding its events as they happen; the last one is "done".

        The turn stays atomic: it is saved once at its end. If the consumer stops listening
        early, the turn still runs to completion (and is saved) rather than being cut in half.
        """
        queue: asyncio.Queue[StreamEvent] = asyncio.Queue()

        def emit(kind: str, data: dict[str, Any]) -> None:
            queue.put_nowait(StreamEvent(kind, data))

        task = asyncio.ensure_future(
            self._run(flow_name, message, session_id, config, emit, owner=owner)
        )
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
        problem = turn_input_problem(self._flows, flow_name, message, session_id, config)
        if problem is not None:
            return _failure(session_id, problem, INVALID_REQUEST)
        async with self._sessions.lock(session_id):
            try:
                flow_class = self._flows[flow_name]
                return await self._turn(
                    flow_class, message, session_id, config, emit, owner=owner, edit=edit
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
            except _InvalidRequest as exc:
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
        return doc if doc is not None and _is_owner(doc, owner) else None

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

    async def preview(
        self, session_id: str, *, message: str | None = None
    ) -> list[BaseMessage] | None:
        """Exactly the messages the session's next model call would receive, or None.

        Nothing is written. The current step's `on_restore` and `get_prompt()` run as in a
        turn; the namespace's summary is the memory block (M7); `message`, if given, is the
        user message of that next turn. None if a turn would not continue this id (P5).
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
        return messages + [HumanMessage(message)] if message else messages

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
        edit: int | None = None,
    ) -> TurnResult:
        """One turn under the engine's deadline (H6), which ends where the write begins.

        The store write itself is never cut short: a turn stopped at its deadline was not
        saved at all, and one that reached its write is saved whole.
        """
        deadline = asyncio.timeout(self._turn_timeout)
        try:
            async with deadline:
                return await self._turn_within(
                    flow_class,
                    message,
                    session_id,
                    config,
                    emit,
                    owner=owner,
                    deadline=deadline,
                    edit=edit,
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
        edit: int | None = None,
    ) -> TurnResult:
        doc, spaces = await self._load_usable(flow_class, session_id, owner, edit)
        step_before = None if doc is None else doc.get("current_step")
        flow = flow_class()
        if doc is not None and _overrides(flow, "migrate_session"):  # V10: upgrade it first
            doc, spaces = await migrate(flow, doc, spaces)
        if doc is not None and not message.strip():
            return _failure(
                session_id,
                "The message is empty. Send the user's text; an empty message only starts a "
                "new session.",
                INVALID_REQUEST,
            )
        context = self._context_for(flow)
        context.emit = emit
        context.ends = deadline.when()
        fresh = doc is None
        for problem in await self._connect_tools(flow):
            flow.add_warning(problem)
        if doc is None:
            doc = new_document(new_session_id(), flow_class.name, config)
            if owner is not None:
                doc["owner"] = owner  # H4: a top-level key, so no flow code can change it
            load_flow(flow, doc)
            if _overrides(flow, "init"):  # V10: after the session is loaded, before any hook
                await flow.init()
            await self._start(flow, message)
        else:
            load_flow(flow, doc, spaces)
            _warn_if_config_changed(flow, doc, config)
            if _overrides(flow, "init"):
                await flow.init()
            await flow._call_hook(flow.current_step.on_restore)
        reply = await run_turn(flow, message, context)
        note = turn_note(message, step_before, flow._session.current, reply, edit)
        saved = await self._save(flow, doc, context, fresh, deadline, note)
        return TurnResult(
            session_id=saved["id"],
            message=reply,
            success=True,
            completed=saved["run_status"] == "completed",
            step=saved["current_step"],
            content_type=flow._session.content_type,
            warnings=list(flow._session.warnings),
            usage=context.usage,
        )

    def _context_for(self, flow: Flow) -> TurnContext:
        default = flow.config_model()
        context = TurnContext(
            registry=self._registry,
            default_model=parse_model(default, flow.name) if default is not None else None,
            usage=empty_usage(),
            extra_tools=step_tools(recall_tools(self._store), self._mcp),
            sleep=self._sleep,
        )
        flow._nested = NestedRuns(context)  # steps may run other steps in this turn (V2, V3)
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
            opener = await flow._call_hook(step.on_crossing, None, None)
            if opener is not None:
                append_message(step, opener)

    async def _load_usable(
        self,
        flow_class: type[Flow],
        session_id: str | None,
        owner: str | None,
        edit: int | None = None,
    ) -> tuple[JSONDict | None, dict[str, Namespace] | None]:
        """The stored session to continue (and its cached namespaces), or None (P5, H4)."""
        if session_id is None:
            return None, None
        if edit is not None:  # W4: the session as it was before that turn
            return await self._revisions.edit_base(session_id, edit, owner), None
        doc, spaces = await self._sessions.load(session_id)
        if doc is not None and not _is_owner(doc, owner):
            return None, None  # H4: another principal's session behaves as an unknown id
        status = continuation(doc, datetime.now(UTC))
        if doc is None or status != "continue":
            if doc is not None and status == "expired":
                await self._forget_expired(doc)
            return None, None
        if doc["flow"] != flow_class.name:
            raise _InvalidRequest(
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
        self._housekeeping.cancel(session_id)
        closed = {**doc, "run_status": "aborted", "updated_at": now_iso()}
        try:
            await self._store.save(closed, doc["revision"])
        except (SessionConflictError, SessionNotFoundError):
            return  # saved or deleted elsewhere meanwhile: not this turn's to delete
        await self._store.delete(session_id)
        logger.info("expired session deleted", extra={"session_id": session_id})

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
        saved = await self._sessions.commit(
            flow, doc, context.usage, fresh=fresh, deadline=deadline, note=note
        )
        self._housekeeping.after_save(flow, saved)
        self._revisions.purge_soon()
        return saved


def _overrides(flow: Flow, hook: str) -> bool:
    """Whether the flow defines its own `hook` (V10 hooks are skipped for the many that don't)."""
    return getattr(type(flow), hook) is not getattr(Flow, hook)


def _is_owner(doc: JSONDict, owner: str | None) -> bool:
    """H4: an owner sees only the sessions it created; no owner means a trusted caller."""
    return owner is None or doc.get("owner") == owner


def _failure(session_id: str | None, message: str, error: str) -> TurnResult:
    return TurnResult(
        session_id=session_id if is_session_id(session_id) else None,
        message=message,
        success=False,
        completed=False,
        step=None,
        error=error,
    )


def _warn_if_config_changed(flow: Flow, doc: JSONDict, config: dict[str, Any] | None) -> None:
    stored = doc["context"].get("config")
    if config is not None and config != stored:
        flow.add_warning(
            "The config sent with this turn was ignored: a session's context is fixed when it "
            "is created. Start a new session to use a different config."
        )


def _as_ttl(ttl: timedelta | float | None) -> timedelta | None:
    if ttl is None or isinstance(ttl, timedelta):
        return ttl
    if isinstance(ttl, (int, float)) and not isinstance(ttl, bool) and ttl > 0:
        return timedelta(seconds=ttl)
    raise ValueError(f"session_ttl must be a timedelta or a number of seconds > 0, got {ttl!r}.")


def _as_turn_timeout(seconds: float | None) -> float | None:
    if seconds is None:
        return None
    if isinstance(seconds, (int, float)) and not isinstance(seconds, bool) and seconds > 0:
        return float(seconds)
    raise ValueError(
        f"turn_timeout must be a number of seconds > 0 or None (no deadline), got {seconds!r}."
    )


def _store_from_environment() -> Store:
    from .stores import MemoryStore, from_url

    url = os.environ.get("PICOFLOW_STORE")
    if url:
        return from_url(url)
    logger.warning(
        "No store given and PICOFLOW_STORE is not set: using an in-process MemoryStore, so "
        "sessions will not survive a restart."
    )
    return MemoryStore()
