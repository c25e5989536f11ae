"""Step: one conversational stage — a prompt, tools, hooks, durable state and a memory namespace.

Users subclass `Step` once per stage and register instances in `Flow.define_steps()`. A step's
name is its class name; it is persisted (state key, cursor, sequence, default namespace, message
ids), so renaming a step class is a schema change.

State (S1-S5) lives on the flow so that it can be saved atomically with the rest of the session;
the step methods here are the API to it.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Self, TypeVar, overload

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from pydantic import BaseModel

from picoflow._internal.abort import fail_turn
from picoflow._internal.state import get_path, merge_state, new_message_id, now_iso
from picoflow.errors import FlowDefinitionError
from picoflow.memory import validate_namespace
from picoflow.models import ModelLike, ModelSpec, parse_model
from picoflow.step._distil import DistilSpec, distil_spec
from picoflow.step._model import ModelHelpers
from picoflow.step._run import default_run, marks_default_run

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from picoflow._internal.services import NestedRunner
    from picoflow.flow import Flow
    from picoflow.step._end_tool import EndTool
    from picoflow.step._long_term import LongTermSpec

__all__ = ["Step", "EndStep", "DistilSpec", "NAVIGATION"]

DEFAULT_OPENER = "Continue."
NAVIGATION = {"origin": "navigation"}  # D4: a framework opener, not a request of the user

ModelT = TypeVar("ModelT", bound=BaseModel)
_warned_get_memory = False  # deprecations warn once per process (STYLE section 14)


class Step(ModelHelpers):
    """A conversational stage; subclass it, give it a prompt and `@tool` methods.

    Attributes:
        output_schema: a pydantic model class (class attribute or property) for a structured
            reply: the step's answer is validated against it and `on_response` and
            `run_step` receive the object (V4). None (the default) means free text.
    """

    output_schema: type[BaseModel] | None = None

    def __init__(self, flow: Flow) -> None:
        self._flow: Flow = flow
        self._namespace = self.name
        self._model: ModelSpec | BaseChatModel | None = None
        self._recall = False
        self._long_term: LongTermSpec | None = None  # use_long_term_memory (L2)
        self._tool_sources: list[Any] = []  # LangChain BaseTools and MCP servers (use_tools)
        self._distil: DistilSpec | None = None
        self._end_tool: EndTool | None = None  # use_end_tool (U2)

    # -- identity and registration ------------------------------------------------------------

    @property
    def name(self) -> str:
        """The step's persisted name: its class name."""
        return type(self).__name__

    @property
    def flow(self) -> Flow:
        """The flow this step belongs to."""
        return self._flow

    @property
    def namespace(self) -> str:
        """The memory namespace this step reads and writes."""
        return self._namespace

    def use_memory(self, namespace: str) -> Self:
        """Share a history with other steps using the same namespace (M1)."""
        self._namespace = validate_namespace(namespace)
        return self

    def use_model(self, model: ModelLike) -> Self:
        """Override the flow's model for this step (F4)."""
        self._model = parse_model(model, f"{self.name}.use_model")
        return self

    def use_recall(self) -> Self:
        """Expose `conversation_search` over this namespace's archive (M9)."""
        self._recall = True
        return self

    def use_long_term_memory(
        self,
        tools: bool = True,
        inject: bool = False,
        budget_tokens: int = 300,
        *,
        extract: str | None = None,
        extract_model: ModelLike | None = None,
        kinds: Iterable[str] = ("fact", "preference", "episode"),
    ) -> Self:
        """Remember the user across sessions (L2, L3): the owner's memory bank.

        `tools` offers `remember(text, kind)` and `recall(query)`; `inject` puts the owner's
        most relevant entries in every request of this step, as a system message after the
        summary, within `budget_tokens`. `extract="step"` has a model read the namespace's raw
        messages when the step is left, `"session"` when the session ends, and write entries
        of the given `kinds`, each citing the messages it came from; `extract_model` (default:
        the flow's summary model) is that model. The owner is the session's principal (H4),
        else the session's `config.user_id`; a session with neither remembers nothing. See
        docs/long-term-memory.md.

        Raises:
            ValueError: nothing to do, a budget below 20 tokens, an unknown `extract`, or
                `kinds` that are not distinct short lowercase labels.
        """
        from picoflow.step._long_term import LongTermSpec

        where = f"{self.name}.use_long_term_memory"
        model = parse_model(extract_model, where) if extract_model is not None else None
        shown = kinds if isinstance(kinds, str) else tuple(kinds)
        self._long_term = LongTermSpec(tools, inject, budget_tokens, extract, model, shown)  # type: ignore[arg-type]
        return self

    def use_end_tool(self, name: str = "terminate_session", *, prompt: str | None = None) -> Self:
        """Offer the built-in end tool: calling it moves to the flow's `EndStep` (U2).

        `name` is "terminate_session" or, as G2 PicoFlow apps call it, "end_chat". The tool
        takes a `prompt` argument, which becomes EndStep's closing instruction
        (`go(EndStep).with_prompt(prompt)`); a fixed `prompt` given here is used instead of the
        model's. Mention it in the step's prompt (`FlowPrompt.END_CHAT`). See docs/transitions.md.

        Raises:
            ValueError: another name, or a blank fixed prompt.
        """
        from picoflow.step._end_tool import end_tool_of

        self._end_tool = end_tool_of(self, name, prompt)
        return self

    def use_tools(self, *tools: Any) -> Self:
        """Expose ready LangChain tools, or every tool of an MCP server, beside the `@tool`s.

        Pass `BaseTool` instances (`StructuredTool`, community tools) or `picoflow.mcp.MCPServer`
        objects. Their results are tool results (the step stays); their errors are error
        results the model reads (R6). Name clashes fail at engine start (MCP servers: when the
        engine connects). See docs/tools.md.

        Raises:
            TypeError: something that is neither a LangChain tool nor an MCP server.
        """
        from picoflow.step._sources import check_tool_source

        for source in tools:
            check_tool_source(source, self.name)
            self._tool_sources.append(source)
        return self

    def distil_on_exit(
        self,
        schema: type[BaseModel],
        *,
        key: str = "distilled",
        erase: bool = False,
        prompt: str | None = None,
    ) -> Self:
        """When the cursor leaves this step, distil its conversation into typed durable state.

        At the end of the turn in which the step was left (after the reply in background mode)
        the summary model reads the step's messages and returns a `schema` object; it is stored
        under `key` in this step's state with the ids of the messages it came from, and read
        back with `get_distilled()`. With `erase=True` those messages then move to the archive
        (searchable with `conversation_search`). A failure stores nothing, erases nothing and
        warns. The flow needs `get_memory().set_summary_model(...)`. See docs/distillation.md.

        Raises:
            TypeError: `schema` is not a pydantic model class, or an argument has the wrong type.
            FlowDefinitionError: `key` is not a plain state key, or `prompt` is blank.
        """
        self._distil = distil_spec(f"{self.name}.distil_on_exit", schema, key, erase, prompt)
        return self

    # -- prompt and hooks ---------------------------------------------------------------------

    def get_prompt(self) -> str:
        """The system prompt, read before every model call (T2); default: the `_prompt` state."""
        prompt = self.get_state("_prompt")
        return prompt if isinstance(prompt, str) else ""

    async def on_start(self) -> None:
        """A new session starts at this step; by default it is entered like any other (T3)."""
        await self._flow._call_hook(self.on_enter)

    def on_enter(self) -> Any:
        """The cursor moved here (sync or async)."""

    def on_exit(self) -> Any:
        """The cursor is leaving (sync or async)."""

    def on_restore(self) -> Any:
        """A stored session resumes at this step (rebuild runtime caches here)."""

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """Decide what this step hears when the cursor arrives from `prior_step` (T3).

        The forwarded message passes through. Without one, a short human opener is added when
        the history ends with nothing the model could answer, so the model always has a turn.
        An override returns a message, a str (heard as the user's message), or None to add
        nothing.
        """
        if message is not None:
            return message
        if isinstance(self.get_last_message(), (HumanMessage, ToolMessage)):
            return None
        return HumanMessage(DEFAULT_OPENER, additional_kwargs=dict(NAVIGATION))

    def on_response(self, reply: Any) -> Any:
        """The model answered without tool calls (V5); decide what becomes of the answer.

        `reply` is the text, or the validated object when the step has an `output_schema`.
        Return None to let it stand, a str to send instead, `go(Step)` to move on (the answer
        is not kept; the destination answers in the same turn), `stay(feedback)` to have the
        model answer again with the feedback, or `direct(text)`/`finish(...)`. Sync or async.
        """
        return None

    def on_llm_error(self, error: Exception) -> Any:
        """A model call of this step failed for good (V9); answer instead of failing the turn.

        `error` says which model failed and why (an override may take a second parameter,
        `context=None`: an `LlmErrorContext`, D4). Return a str, a transition, or
        `retry_with_model(model)`; None asks the flow's, then the turn fails (U4).
        """
        return None

    def should_retry_llm_error(self, error: BaseException) -> bool | None:
        """Whether a failed model call of this step is tried again (U4); sync.

        True retries it (within `retry_attempts`), False fails it at once; None asks the
        flow's, then the policy (V9). A second parameter gets an `LlmAttemptErrorContext` (D4).
        """
        return None

    def on_llm_blocked(self, reason: str) -> Any:
        """The provider refused to answer (a content filter, a refusal); `reason` says why (U4).

        Return a str to send instead, or `go(Step)`/`direct(text)`/`finish(text)`; None asks
        the flow's, then the refused reply stands with a warning. Sync or async. A second
        parameter gets an `LlmBlockedContext` (D4).
        """
        return None

    @marks_default_run
    async def run(self, message: str | None = None) -> Any:
        """This step's part of a turn; override it to do work before or after it (U3).

        The engine calls it for the step that takes the user's message and for each nested
        run of the step (`run_step`), with the message it hears (None: none). An override
        calls ``await super().run(message)`` (once; it may change the message) and returns
        what that returns: the reply text, or a nested child's result. A step entered by
        `go` within a turn carries on the turn's loop without a new `run()`.
        """
        return await default_run(self, message)

    # -- nested runs (V2, V3) -----------------------------------------------------------------

    async def run_step(self, step: type[Step], message: str | None = None) -> Any:
        """Run another step to its reply inside this turn, without moving the cursor (V2).

        The child enters (`on_enter`), runs its model loop in its own namespace with its own
        tools, and leaves (`on_exit`); its reply is returned: the text, the validated
        `output_schema` object, or the text of its `direct(...)`. `message` is what the child
        hears first. A child that tries `go`/`finish`, or fails, fails the whole turn.
        """
        return await self._nested_runs().run_step(self, step, message)

    async def run_steps(
        self,
        steps: Sequence[type[Step] | tuple[type[Step], str | None]],
        *,
        max_concurrency: int | None = None,
        failure_policy: str = "atomic",
    ) -> list[Any]:
        """Run several steps as `run_step` does, concurrently; their replies in order (V3).

        Give a class, or a `(StepClass, message)` pair. Steps that share a namespace with each
        other or with this step run one after another, in order, so their histories never
        interleave. `max_concurrency` caps how many run at once (e.g. a provider's rate
        limit). The same class twice is a ValueError. If a child fails, the turn fails
        (`failure_policy="atomic"`), or, with "retain-successes", the exception takes the
        child's place in the results and the others run on.
        """
        runs = self._nested_runs()
        return await runs.run_steps(self, steps, max_concurrency, failure_policy)

    async def call_tool(self, name: str, args: Mapping[str, Any] | None = None) -> str:
        """Run one of the tools `use_tools` gave this step and return its result text.

        For a `@tool_group` that sits on top of LangChain or MCP tools: the group gets the
        model's calls, and runs the tools it decides to run through here (the step's own
        `@tool` methods are called directly). A tool's failure raises, as in the tool itself.

        Raises:
            ValueError: the step has no such tool from `use_tools` (the message lists them).
        """
        runs = self._flow._services.nested
        if runs is None:
            raise RuntimeError(
                f"{self.name}.call_tool({name!r}) was called outside a turn. Call it from a "
                "tool, a @tool_group or a hook while the engine runs the flow."
            )
        return await runs.call_tool(self, name, dict(args or {}))

    def _nested_runs(self) -> NestedRunner:
        runs = self._flow._services.nested
        if runs is None:
            raise fail_turn(
                FlowDefinitionError(
                    f"{self.name}.run_step() was called outside a turn. Call it from a tool, a "
                    "hook or on_response while the engine runs the flow."
                )
            )
        return runs

    # -- durable and transient state (S1-S5) --------------------------------------------------

    def get_state(self, path: str | None = None) -> Any:
        """All state, or the value at a dotted path (missing: None)."""
        state = self._flow._session.state_of(self.name)
        return state if path is None else get_path(state, path)

    def save_state(self, update: dict[str, Any]) -> None:
        """First key replaces, other keys deep-merge; stamps `_saveOn` (S2, S5)."""
        if not update:
            return
        state = self._flow._session.state_of(self.name)
        merge_state(state, update, f"{self.name} state")
        state["_saveOn"] = now_iso()

    def remove_state(self, key: str) -> None:
        """Delete a top-level key (S3)."""
        self._flow._session.state_of(self.name).pop(key, None)

    def save_transient_state(self, update: dict[str, Any]) -> None:
        """Like save_state, under `_transient`, which is dropped when the turn ends (S4)."""
        if not update:
            return
        state = self._flow._session.state_of(self.name)
        transient = state.setdefault("_transient", {})
        merge_state(transient, update, f"{self.name} transient state")
        state["_saveOn"] = now_iso()

    def get_transient_state(self, path: str | None = None) -> Any:
        """The transient state, or a dotted path in it (S4)."""
        transient = self._flow._session.state_of(self.name).get("_transient")
        if transient is None:
            return None
        return transient if path is None else get_path(transient, path)

    # -- memory -------------------------------------------------------------------------------

    def get_messages(self) -> list[BaseMessage]:
        """The live history of this step's namespace (index 0 is the system slot).

        Edit it with the list's own methods (`append`, `del history[i]`, slice assignment, ...):
        the save notes what they changed instead of comparing the whole history. A change made
        around them (`list.__setitem__(history, i, m)`, `heapq`) is not seen.
        """
        return self._flow.get_memory().messages(self._namespace)

    def get_memory(self) -> list[BaseMessage]:
        """Deprecated alias of `get_messages()`, removed in picoflow 0.2.

        `Flow.get_memory()` returns the flow's `Memory`; the step's method of the same name
        returned a message list, so the step's one is renamed.
        """
        global _warned_get_memory
        if not _warned_get_memory:
            _warned_get_memory = True
            warnings.warn(
                "Step.get_memory() is deprecated and will be removed in picoflow 0.2: call "
                "Step.get_messages(), which returns the same message list. "
                "(Flow.get_memory() stays: it returns the flow's Memory.)",
                DeprecationWarning,
                stacklevel=2,
            )
        return self.get_messages()

    def get_last_message(self) -> BaseMessage | None:
        """The newest message of this step's namespace, or None (T5)."""
        messages = self.get_messages()
        return messages[-1] if len(messages) > 1 else None

    def erase_memory(self) -> None:
        """Empty this namespace (for every step sharing it) and its summary (T4)."""
        self._flow.get_memory().erase(self._namespace)

    @property
    def tool_call_key(self) -> str:
        """The stable key of the tool call being answered, the same across resumes (K5).

        Pass it to an external system as its idempotency key, so an effect happens once.
        """
        from picoflow._internal.call_keys import current_key

        return current_key(self.name)

    def on_approval_requested(self, approval: dict[str, Any]) -> Any:
        """A tool call of this step waits for a person's approval (K1); return the reply.

        `approval` is the record (`id`, `tool`, `args`, ...). Return None for the default
        reply naming what waits. Sync or async.
        """
        return None

    def on_message_while_pending(self, message: str, pending: list[dict[str, Any]]) -> Any:
        """The user wrote while an approval waits (K2); return the reply, None for the default.

        The tool is never called from here; the message is kept and shown to the model once
        the approval is resolved.
        """
        return None

    def gen_message_id(self) -> str:
        """`<StepName>|<UTC ISO time>|<random>`: the first segment attributes the message."""
        return new_message_id(self.name)

    def get_context(self, path: str | None = None) -> Any:
        """Shortcut for `self.flow.get_context(path)`."""
        return self._flow.get_context(path)

    @overload
    def get_distilled(self) -> BaseModel | None: ...

    @overload
    def get_distilled(self, schema: type[ModelT]) -> ModelT | None: ...

    def get_distilled(self, schema: type[BaseModel] | None = None) -> BaseModel | None:
        """The value `distil_on_exit` stored, as the pydantic object; None before the first one.

        Pass the schema class to get a precisely typed result (`get_distilled(Criteria)`). The
        stored JSON is validated again, so a schema that changed incompatibly since raises
        pydantic's `ValidationError` instead of handing back a half-right object.

        Raises:
            FlowDefinitionError: this step does not call `distil_on_exit`.
        """
        spec = self._distil
        if spec is None:
            raise FlowDefinitionError(
                f"{self.name}.get_distilled(): {self.name} does not distil its conversation. "
                "Call .distil_on_exit(Schema) on it (in its __init__ or in define_steps())."
            )
        entry = self._distilled_entry(spec.key)
        return None if entry is None else (schema or spec.schema).model_validate(entry["value"])

    def _distilled_entry(self, key: str) -> dict[str, Any] | None:
        """The distillation stored under `key`, if the state holds one of the expected shape."""
        entry = self.get_state(key)
        if isinstance(entry, dict) and isinstance(entry.get("value"), dict):
            return entry
        return None

    def __repr__(self) -> str:
        return f"<{self.name} namespace={self._namespace!r}>"


class EndStep(Step):
    """The terminal step: entering it completes the session; its model says goodbye (R8).

    Give it its own namespace (`EndStep(self).use_memory("end")`) so the closing call does not
    replay a whole stage transcript.
    """

    CLOSING_PROMPT = (
        "The conversation is over. Say one short, friendly closing line to the user and do "
        "not start any new topic."
    )

    def get_prompt(self) -> str:
        """The `with_prompt` text of the transition that got here, else a closing line."""
        return super().get_prompt() or self.CLOSING_PROMPT

    def on_enter(self) -> Any:
        """Mark the session completed: its id will start a new session next time (P5)."""
        self._flow._session.completed = True

    def on_crossing(self, message: BaseMessage | None, prior_step: str | None) -> Any:
        """Always give the closing model something to answer."""
        if isinstance(message, AIMessage) or message is None:
            return HumanMessage("I'm done with the chat.", additional_kwargs=dict(NAVIGATION))
        return message
