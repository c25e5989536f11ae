"""Flow: the registry of a conversation's steps, its context, its memory and its cursor.

A `Flow` subclass is built once per turn (F1): the engine constructs it, loads the session into
it, runs the turn and saves it. Its constructor is therefore the place for per-flow setup that
must hold on every turn, such as the compaction policy, and nothing slow.
"""

from __future__ import annotations

import copy
import inspect
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import pydash
from langchain_core.messages import BaseMessage, SystemMessage

from picoflow._internal.conversation import Conversation, conversation_in
from picoflow._internal.live_session import LiveSession
from picoflow._internal.services import TurnServices
from picoflow._internal.state import get_path, to_json
from picoflow.decisions._provider import DecisionErrorContext, DecisionOptions
from picoflow.errors import FlowDefinitionError
from picoflow.memory import Memory, Namespace, request_messages
from picoflow.models import ModelLike, ProviderFactory
from picoflow.step import Step
from picoflow.step._frame import FRAME
from picoflow.tools import ToolSpec, collect_tools

if TYPE_CHECKING:
    from picoflow._bank import MemoryBank
    from picoflow._internal.results import TurnResult

__all__ = ["Flow"]

logger = logging.getLogger(__name__)

StepRef = type[Step] | str


class Flow:
    """A conversation: subclass it, list its steps in `define_steps()`, give it a model.

    Class attributes:
        name: the persisted flow name (default: the class name).
        max_tool_rounds: the most model calls (and logic steps) one run of steps may make (R7).
        max_step_depth: how deep `run_step` may nest (V2).
        providers: model providers the flow brings, `{"offline": factory}`, so an engine
            resolves its models without being told (`FlowEngine(providers=...)` wins).
    """

    name: ClassVar[str] = "Flow"
    max_tool_rounds: ClassVar[int] = 8
    max_step_depth: ClassVar[int] = 3
    providers: ClassVar[Mapping[str, ProviderFactory]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in cls.__dict__:
            cls.name = cls.__name__

    def __init__(self) -> None:
        self._memory = Memory()
        self._steps: dict[str, Step] | None = None
        self._session = LiveSession()  # what a turn changes, loaded and dumped by picoflow.session
        self._services = TurnServices()  # the engine lends its own for a turn

    # -- what subclasses define ---------------------------------------------------------------

    def define_steps(self) -> list[Step]:
        """The step registry (not a sequence): one instance per Step class (F2)."""
        raise FlowDefinitionError(
            f"{type(self).__name__} defines no steps. Override define_steps() to return the "
            "step instances, e.g. [ExploreStep(self), EndStep(self)]."
        )

    def initial_step(self) -> type[Step] | None:
        """Where a new session starts; None means the first registered step (F3)."""
        return None

    def config_model(self) -> ModelLike | None:
        """The default model of every step that does not `use_model` (F4)."""
        return None

    async def init(self) -> None:
        """Per-turn setup that needs the session: runs after it is loaded, before any hook (V10).

        The context is readable here (`get_context`); open clients or caches the steps share.
        """

    def migrate_session(self, doc: dict[str, Any]) -> dict[str, Any] | None:
        """Upgrade a stored session document before it is loaded (V10).

        Called with a copy of every stored document of this flow; return it (changed or not),
        or None to start a new session instead. Rename steps (`current_step`, `sequence`, the
        keys of `steps`), move state, drop a namespace. The session id and revision are kept.
        """
        return doc

    def on_llm_error(self, step: Step, error: Exception) -> Any:
        """A step's model call failed for good and the step's own hook returned None (U4).

        Same answers as `Step.on_llm_error`; None (the default) fails the turn.
        """
        return None

    def should_retry_llm_error(self, step: Step, error: BaseException) -> bool | None:
        """Asked when the step's `should_retry_llm_error` returned None (U4); sync.

        None (the default) retries transient errors (V9).
        """
        return None

    def on_llm_blocked(self, step: Step, reason: str) -> Any:
        """Asked when the step's `on_llm_blocked` returned None (U4); same answers.

        None (the default) lets the refused reply stand, with a warning.
        """
        return None

    def config_decision(self) -> DecisionOptions | Mapping[str, Any] | None:
        """The decision options of every `DecisionStep` that does not override them (D2).

        Return `DecisionOptions(provider=, model=, timeout=, max_retries=)` (or a dict of
        those fields); a step's `use_decision(...)` wins field by field.
        """
        return None

    def on_decision_error(self, step: Step, context: DecisionErrorContext) -> Any:
        """A decision of `step` failed and the step's own hook returned None (D2).

        Same answers as `DecisionStep.on_decision`; None (the default) fails the turn.
        """
        return None

    async def spawn_steps(self) -> str:
        """A batch turn (`config._concurrent` truthy) runs this instead of the step loop (U8).

        Override it to fan out with `concurrent_steps`; the text it returns is the turn's
        reply. The session stays where it is unless it moves (`await self.goto(Step)`) or
        ends (`self.complete()`). See docs/batch.md.
        """
        raise FlowDefinitionError(
            f"The run's config has _concurrent set, so this turn is a batch turn, but "
            f"{type(self).__name__} does not override spawn_steps(). Define "
            "`async def spawn_steps(self) -> str` (it may call concurrent_steps), or leave "
            "_concurrent out of the config."
        )

    async def concurrent_steps(
        self,
        items: Iterable[Any],
        batch_size: int,
        on_config: Callable[[Any], Any],
        on_bot_response: Callable[[Any, TurnResult], Any] | None = None,
        *,
        url: str | None = None,
        transport: Any = None,
    ) -> list[TurnResult]:
        """Run one new session of this flow per item, `batch_size` at a time (U8).

        Batches run in order, the items of a batch concurrently; each item is a full turn of
        a new session whose config is `on_config(item)` (without `_concurrent`). They run in
        this process, or are POSTed to `url` (default: the `SELF_URL` environment variable, the
        full run endpoint of a picoflow server) through httpx, with `transport` if given.
        `on_bot_response(item, result)` (sync or async) gets each item's `TurnResult`, a
        failed one included: one item's failure does not stop the others. Returns every
        result in item order.

        Raises:
            TypeError, ValueError: bad arguments (checked before any item runs).
        """
        batch = self._services.batch
        if batch is None:
            raise RuntimeError(
                f"{self.name}.concurrent_steps() was called outside a turn. Call it from "
                "spawn_steps(), a tool or a hook while the engine runs the flow."
            )
        return await batch.run(self, items, batch_size, on_config, on_bot_response, url, transport)

    def complete(self) -> None:
        """End the session when this turn is saved, as `finish()` does from a step (V7)."""
        self._session.completed = True

    # -- registry -----------------------------------------------------------------------------

    @property
    def steps(self) -> dict[str, Step]:
        """The registered steps by name, collected from `define_steps()` once per flow object."""
        if self._steps is None:
            self._steps = _collect(self)
        return self._steps

    def get_step(self, ref: StepRef) -> Step:
        """The registered instance of a Step class (or name); FlowDefinitionError if absent."""
        key = ref if isinstance(ref, str) else getattr(ref, "__name__", repr(ref))
        step = self.steps.get(key)
        if step is None or (not isinstance(ref, str) and type(step) is not ref):
            raise FlowDefinitionError(
                f"Step '{key}' is not registered in flow '{self.name}'. Add it to "
                f"define_steps() (registered: {', '.join(self.steps)})."
            )
        return step

    @property
    def current_step(self) -> Step:
        """The step the cursor is on."""
        current = self._session.current
        if current is None:
            raise FlowDefinitionError(f"Flow '{self.name}' has no current step yet.")
        return self.get_step(current)

    def get_session_id(self) -> str | None:
        """The id of the session this flow object is running."""
        return self._session.session_id

    def memory_bank(self) -> MemoryBank | None:
        """The long-term memory of this session's owner (L5), or None if it has no owner.

        Flow code uses it to remember without the model: a booking records the guest's room
        type, a new session reads it back (see docs/long-term-memory.md).
        """
        from picoflow._bank import MemoryBank, owner_of
        from picoflow.stores.base import abilities_of

        owner = owner_of(self)
        store = self._services.store
        if owner is None or store is None or abilities_of(store).memory_bank is None:
            return None
        return MemoryBank(store, owner, self._services.embeddings)

    def get_memory(self) -> Memory:
        """The flow's memory: namespaces and compaction policy (M3)."""
        return self._memory

    def get_conversation(self, namespace: str, max_prior_requests: int = 4) -> Conversation:
        """What the user asked in `namespace`: the newest request and up to N before it (D4).

        The view a `DecisionStep`'s provider gets as `request` and `prior_requests`: human
        messages only, oldest first, without the openers the framework adds to move along
        (marked `additional_kwargs={"origin": "navigation"}`); a message forwarded with
        `.with_message(...)` counts. A namespace not used yet has no requests.

        Raises:
            TypeError: `namespace` is not a str.
            ValueError: `max_prior_requests` is not a whole number of 0 or more.
        """
        if not isinstance(namespace, str):
            raise TypeError(f"get_conversation() needs a namespace name, got {namespace!r}.")
        record = self._memory.namespaces().get(namespace)  # a step's class name is one too
        return conversation_in(record.messages if record else [], max_prior_requests)

    def get_flow_engine(self) -> Any:
        """The `FlowEngine` running this flow's turn (D4); from `init()`, hooks and tools.

        Raises:
            FlowDefinitionError: called outside a turn (a flow built by hand, or before the
                engine has lent it its services).
        """
        engine = self._services.engine
        if engine is None:
            raise FlowDefinitionError(
                f"{self.name}.get_flow_engine() was called outside a turn. Call it from init(), "
                "a hook or a tool while the engine runs the flow."
            )
        return engine

    def get_session_doc(self) -> dict[str, Any]:
        """A copy of the session document as this turn loaded it (PicoFlow's `getSessionDoc`).

        It is the last saved state (a new session: the document being created); this turn's
        changes are in the flow's own accessors until the save. Editing the copy changes
        nothing: migrate a document in `migrate_session`.

        Raises:
            FlowDefinitionError: called outside a turn (no session is loaded).
        """
        doc = self._session.doc
        if doc is None:
            raise FlowDefinitionError(
                f"{self.name}.get_session_doc() was called outside a turn. Call it from a "
                "tool, a hook or init() while the engine runs the flow."
            )
        return copy.deepcopy(doc)

    def get_executing_step(self) -> Step:
        """The step running now: a nested child inside `run_step`, else the cursor's step.

        PicoFlow's `getExecutingStep`; in the turn's own steps, the same as `current_step`.
        """
        frame = FRAME.get()
        if frame is not None and frame.step.flow is self:
            return frame.step
        return self.current_step

    def get_tool(self, name: str, step: StepRef | None = None) -> ToolSpec | None:
        """The `@tool` named `name` of `step` (default: of the first registered step having it).

        PicoFlow's `getTool`: the declaration (`name`, `description`, the `schema` the model
        sees), not a callable; call a step's tool method directly to run it. None if absent.
        """
        steps = [self.get_step(step)] if step is not None else list(self.steps.values())
        for candidate in steps:
            for spec in collect_tools(type(candidate)):
                if spec.name == name:
                    return spec
        return None

    def require_tool(self, name: str, step: StepRef | None = None) -> ToolSpec:
        """`get_tool`, failing with the names there are instead of returning None.

        Raises:
            FlowDefinitionError: no such tool (the message lists the tools of the flow or step).
        """
        found = self.get_tool(name, step)
        if found is not None:
            return found
        steps = [self.get_step(step)] if step is not None else list(self.steps.values())
        known = sorted({spec.name for s in steps for spec in collect_tools(type(s))})
        where = f"step '{self.get_step(step).name}'" if step is not None else f"flow '{self.name}'"
        raise FlowDefinitionError(
            f"Tool '{name}' is not defined in {where} (its tools: {', '.join(known) or 'none'}). "
            "Declare it with @tool on a step method, or check the spelling."
        )

    def graph(
        self, *, session: Mapping[str, Any] | None = None, history: Sequence[Any] | None = None
    ) -> str:
        """This flow as Mermaid flowchart text: where a conversation can go (see picoflow.graph).

        Args:
            session: A stored session document; the path it took is drawn over the flow.
            history: The session's kept revisions, oldest first, as
                `picoflow.graph.load_history` returns them: the path is drawn from them,
                rewinds and edits included (W1).
        """
        from picoflow.graph import draw  # the graph reads flows, so it is imported when drawn

        return draw(self, session=session, history=history)

    def preview(self, step: StepRef | None = None) -> list[BaseMessage]:
        """Exactly the messages the next model call of `step` (default: the current one) gets.

        The step's `get_prompt()` runs and the namespace's summary becomes the memory block
        (M7), as in a real call; nothing is changed, not even the stored system slot.
        """
        target = self.current_step if step is None else self.get_step(step)
        record = self._memory.namespaces().get(target.namespace) or Namespace()
        return request_messages(record, SystemMessage(target.get_prompt()))

    # -- context (F7) -------------------------------------------------------------------------

    def get_context(self, path: str | None = None) -> Any:
        """The session context, or a dotted path in it (`"config.tenant.region"`)."""
        context = self._session.context
        return context if path is None else get_path(context, path)

    def add_context(self, update: dict[str, Any]) -> None:
        """Deep-merge into the context; persisted with the turn."""
        pydash.merge(self._session.context, to_json(update, "context"))

    def set_context(self, context: dict[str, Any]) -> None:
        """Replace the context; persisted with the turn."""
        self._session.context = to_json(dict(context), "context")

    # -- cross-step state (F6) ----------------------------------------------------------------

    def get_step_state(self, step: StepRef, path: str | None = None) -> Any:
        """Another step's state (by class or name), or a dotted path in it."""
        return self.get_step(step).get_state(path)

    def save_step_state(self, step: StepRef, update: dict[str, Any]) -> None:
        """Save state on another step with the S2 rules."""
        self.get_step(step).save_state(update)

    def save_transient_step_state(self, step: StepRef, update: dict[str, Any]) -> None:
        """Save transient state on another step (S4)."""
        self.get_step(step).save_transient_state(update)

    # -- cursor (F8) --------------------------------------------------------------------------

    async def goto(self, step: StepRef) -> bool:
        """Move the cursor; a move to the current step does nothing. True if it moved."""
        target = self.get_step(step)
        session = self._session
        if target.name == session.current:
            return False
        if session.current is not None:
            leaving = self.current_step
            await self._call_hook(leaving.on_exit)
            spec = leaving._long_term  # L3: a step that extracts when left is noted too
            if leaving._distil is not None or (spec is not None and spec.extract == "step"):
                session.exits.append((leaving.name, list(leaving.get_messages())))
        session.sequence.append(target.name)
        session.current = target.name
        await self._call_hook(target.on_enter)
        return True

    def log(self, message: str, *, level: str = "info") -> None:
        """Write to the session's `log` ("info", "warning"), `debug` or `error` array (U5).

        PicoFlow's `SessionLogger`. The entry is saved with the turn (a failed turn saves
        nothing); each array keeps its newest 100 entries. It is also logged through `logging`.
        """
        from picoflow._internal.session_log import (  # one concept per module; a leaf import
            array_of,
            log_entry,
        )

        array = array_of(level)
        self._session.logs.setdefault(array, []).append(log_entry(level, message))
        logger.log(
            logging.getLevelName(level.upper()),
            "%s",
            message,
            extra={"session_id": self._session.session_id, "flow": self.name},
        )

    def add_warning(self, message: str) -> None:
        """Record a warning on the session and in this turn's result."""
        session = self._session
        logger.warning("%s", message, extra={"session_id": session.session_id, "flow": self.name})
        session.warnings.append(message)

    # -- internals used by the engine and the turn loop ---------------------------------------

    async def _call_hook(self, hook: Callable[..., Any], *args: Any) -> Any:
        """Hooks may be sync or async; this is the one place that tells them apart."""
        result = hook(*args)
        if inspect.isawaitable(result):
            result = await result
        return result


def _collect(flow: Flow) -> dict[str, Step]:
    steps = flow.define_steps()
    if not isinstance(steps, (list, tuple)):
        raise FlowDefinitionError(
            f"{flow.name}.define_steps() must return a list of step instances, "
            f"got {type(steps).__name__}."
        )
    registry: dict[str, Step] = {}
    for step in steps:
        if not isinstance(step, Step):
            raise FlowDefinitionError(
                f"{flow.name}.define_steps() returned {step!r}, which is not a Step instance. "
                "Register instances, e.g. ExploreStep(self), not classes."
            )
        if step.name in registry:
            raise FlowDefinitionError(
                f"{flow.name} registers two steps named '{step.name}'; step names are stored "
                "in sessions and must be unique. Rename one class or remove the duplicate "
                "from define_steps()."
            )
        registry[step.name] = step
    if not registry:
        raise FlowDefinitionError(f"{flow.name}.define_steps() returned no steps.")
    return registry
