"""The test kit: a chat model that plays the LLM in your tests.

`ScriptedChatModel` is a real LangChain `BaseChatModel`, so it enters a flow through the same
seam as a production model (pass the instance, or return it from a provider factory). Drive it
with a **script** (replies consumed in order, optionally one list per step or purpose) or with a
**policy** (a function of the messages and the bound tool names). It records every request, so
tests can assert prompts and tool exposure, and it reports deterministic tool-call ids and token
usage, so whole transcripts can be asserted exactly.

    model = ScriptedChatModel(script=[tool_call("search", city="Paris"), "Found 3 hotels."])
    reply = await model.bind_tools([search]).ainvoke("hotels in Paris?")
    assert reply.tool_calls[0]["id"] == "call_1"
    assert model.requests[0].tool_names == ["search"]
"""

from __future__ import annotations

import inspect
import json
import re
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterator,
    Sequence,
)
from contextlib import aclosing, closing, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    InvalidToolCall,
    ToolCall,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.messages.utils import count_tokens_approximately
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult, LLMResult
from langchain_core.runnables import Runnable, RunnableConfig, ensure_config
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from picoflow.testing._decisions import ScriptedDecisionProvider
from picoflow.testing._embeddings import KeywordEmbeddings
from picoflow.testing._replies import structured, text, tool_call, tool_calls, transient_error

__all__ = [
    "ScriptedChatModel",
    "ScriptedRequest",
    "text",
    "tool_call",
    "tool_calls",
    "structured",
    "transient_error",
    "run_scenario",
    "KeywordEmbeddings",
    "ScriptedDecisionProvider",
]

ScriptItem: TypeAlias = str | AIMessage | BaseException
Reply: TypeAlias = str | AIMessage
Policy: TypeAlias = Callable[[list[BaseMessage], list[str]], Reply | Awaitable[Reply]]

# Metadata and tags of the call in progress. langchain-core 1.8 does not pass the run manager
# to `_stream`/`_astream`, so the public entry points capture them here for the recorder.
_CALL_CONTEXT: ContextVar[tuple[dict[str, Any], list[str]] | None] = ContextVar(
    "picoflow_scripted_call", default=None
)
_WORD = re.compile(r"\S+\s*|\s+")


@dataclass(frozen=True)
class ScriptedRequest:
    """One call to the model, as the flow sent it.

    Attributes:
        messages: Copies of the messages sent, in order, as they were when sent. A message
            sent again unchanged in a later call shares its copy with the earlier request,
            so treat the copies as read-only.
        tool_names: Names of the bound tools, in binding order.
        tools: The bound tools as OpenAI tool schemas.
        metadata: The call's run metadata (`picoflow_step`, `picoflow_purpose`, ...), without
            the tracing keys langchain-core adds itself (`ls_*`, `lc_versions`).
        tags: The call's run tags.
    """

    messages: list[BaseMessage]
    tool_names: list[str]
    tools: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


class _Snapshots:
    """Copies of the messages sent, reused while the message they copy is unchanged.

    A flow sends its whole history on every call, so copying (and counting) every message on
    every call made each call cost more the longer the conversation. A message sent again
    unchanged (the same object, its fields still equal to the copy's) gets the copy and token
    count it got last time; one changed since, even in place, is copied afresh. Past `limit`
    messages, only those of the latest call are kept, so a long-lived model does not hold
    every message twice.
    """

    def __init__(self, limit: int = 10_000) -> None:
        # id(original) -> (original, copy, tokens); holding the original keeps its id unique.
        self._seen: dict[int, tuple[BaseMessage, BaseMessage, int]] = {}
        self._limit = limit

    def take(self, messages: list[BaseMessage]) -> tuple[list[BaseMessage], int]:
        """Copies of `messages`, and their total as `count_tokens_approximately` counts it."""
        seen = self._seen
        entries = []
        for message in messages:
            entry = seen.get(id(message))
            if (  # unchanged: pydantic's `==` without its generic overhead
                entry is None
                or entry[0] is not message
                or message.__dict__ != entry[1].__dict__
                or message.__pydantic_extra__ != entry[1].__pydantic_extra__
            ):
                copy = message.model_copy(deep=True)
                entry = seen[id(message)] = (message, copy, count_tokens_approximately([copy]))
            entries.append(entry)
        if len(seen) > self._limit:
            self._seen = {id(entry[0]): entry for entry in entries}
        # The sum is exact: the approximation adds up whole per-message counts.
        return [entry[1] for entry in entries], sum(entry[2] for entry in entries)


@dataclass(slots=True)
class _Record:
    """State shared by a model and every copy `bind_tools` makes of it."""

    scripts: dict[str | None, list[ScriptItem]] | None  # None key: a plain list script
    used: dict[str | None, int]
    requests: list[ScriptedRequest] = field(default_factory=list)
    snapshots: _Snapshots = field(default_factory=_Snapshots)
    tool_calls_sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


class ScriptedChatModel(BaseChatModel):
    """A chat model whose replies you decide, for testing flows without a provider.

    Args:
        script: Replies in call order, each a `str`, an `AIMessage` (see `text`, `tool_call`,
            `tool_calls`) or an exception instance to raise at that call. A dict maps a key
            to its own list; a call takes from the list under its `picoflow_purpose`
            metadata (e.g. `"summary"`), else its `picoflow_step`, else `"*"`.
        policy: `policy(messages, tool_names) -> str | AIMessage`, sync or async, for replies
            that depend on what the flow sent. Inside it, `model.requests[-1]` is the current
            request, with its metadata.

    Raises:
        ValueError: Neither or both of `script` and `policy` were given.
        TypeError: A script item or the policy has the wrong type.
    """

    __test__ = False  # never collected by pytest, whatever name a test module imports it as

    def __init__(
        self,
        *,
        script: Sequence[ScriptItem] | dict[str, Sequence[ScriptItem]] | None = None,
        policy: Policy | None = None,
        **kwargs: Any,
    ) -> None:
        """Check the script or policy now, so that a mistake fails where the test builds it."""
        super().__init__(**kwargs)
        self._policy = _check_policy(script, policy)
        self._record = _Record(scripts=_check_script(script), used={})

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def requests(self) -> list[ScriptedRequest]:
        """Every request this model and its `bind_tools` copies received, in order."""
        return self._record.requests

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Bind tools as a provider model does; the copy shares script position and record."""
        schemas = [convert_to_openai_tool(tool) for tool in tools]
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=schemas, **kwargs)

    def __repr__(self) -> str:
        """Show how far the script has got, which is what a failing test needs to know."""
        if self._policy is not None:
            how = f"policy={getattr(self._policy, '__qualname__', self._policy)}"
        else:
            how = "script=" + ", ".join(
                f"{'' if key is None else f'{key!r}: '}"
                f"{min(self._record.used.get(key, 0), len(items))}/{len(items)} used"
                for key, items in (self._record.scripts or {}).items()
            )
        return f"ScriptedChatModel({how}, requests={len(self._record.requests)})"

    # langchain-core 1.8 calls _stream/_astream without the run manager, so the public entry
    # points put the call's metadata and tags where _build_request finds them.

    def generate(  # noqa: D102 - as BaseChatModel.generate
        self, messages: list[list[BaseMessage]], *args: Any, **kwargs: Any
    ) -> LLMResult:
        with _calling(kwargs.get("metadata"), kwargs.get("tags")):
            return super().generate(messages, *args, **kwargs)

    async def agenerate(  # noqa: D102 - as BaseChatModel.agenerate
        self, messages: list[list[BaseMessage]], *args: Any, **kwargs: Any
    ) -> LLMResult:
        with _calling(kwargs.get("metadata"), kwargs.get("tags")):
            return await super().agenerate(messages, *args, **kwargs)

    def stream(  # noqa: D102 - as BaseChatModel.stream
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> Iterator[AIMessageChunk]:
        config = ensure_config(config)
        chunks = cast(Generator[AIMessageChunk], super().stream(input, config, **kwargs))
        with closing(chunks):
            with _calling(config["metadata"], config["tags"]):  # recorded before chunk one
                first = next(chunks)
            yield first
            yield from chunks

    async def astream(  # noqa: D102 - as BaseChatModel.astream
        self, input: LanguageModelInput, config: RunnableConfig | None = None, **kwargs: Any
    ) -> AsyncIterator[AIMessageChunk]:
        config = ensure_config(config)
        achunks = cast(AsyncGenerator[AIMessageChunk], super().astream(input, config, **kwargs))
        async with aclosing(achunks):
            with _calling(config["metadata"], config["tags"]):  # recorded before chunk one
                first = await anext(achunks)
            yield first
            async for chunk in achunks:
                yield chunk

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        reply = self._reply_sync(messages, run_manager, kwargs)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        reply = await self._reply_async(messages, run_manager, kwargs)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply_sync(messages, run_manager, kwargs)
        for chunk in _split_reply(reply):
            yield ChatGenerationChunk(message=chunk)

    async def _astream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> AsyncIterator[ChatGenerationChunk]:
        reply = await self._reply_async(messages, run_manager, kwargs)
        for chunk in _split_reply(reply):
            yield ChatGenerationChunk(message=chunk)

    def _reply_sync(self, messages: list[BaseMessage], run_manager: Any, kwargs: Any) -> AIMessage:
        sent, raw = self._begin(messages, run_manager, kwargs)
        if inspect.isawaitable(raw):
            if inspect.iscoroutine(raw):
                raw.close()
            raise TypeError(
                "ScriptedChatModel has an async policy but was called synchronously; call "
                "it with ainvoke()/astream(), or pass a sync function as policy."
            )
        return self._finish(sent, raw)

    async def _reply_async(
        self, messages: list[BaseMessage], run_manager: Any, kwargs: Any
    ) -> AIMessage:
        sent, raw = self._begin(messages, run_manager, kwargs)
        if inspect.isawaitable(raw):
            raw = await raw
        return self._finish(sent, raw)

    def _begin(
        self, messages: list[BaseMessage], run_manager: Any, kwargs: dict[str, Any]
    ) -> tuple[int, object]:
        """Record the request, then take the next script item or start the policy.

        Returns the tokens sent, and the script item or what the policy returned.
        """
        with self._record.lock:
            copies, sent = self._record.snapshots.take(messages)
            request = _build_request(copies, run_manager, kwargs.get("tools") or [])
            self._record.requests.append(request)
            if self._policy is None:
                return sent, self._take(request)
        return sent, self._policy(list(request.messages), list(request.tool_names))

    def _take(self, request: ScriptedRequest) -> ScriptItem:
        scripts = self._record.scripts or {}
        key = _script_key(scripts, request.metadata)
        position = self._record.used.get(key, 0)
        self._record.used[key] = position + 1
        if position >= len(scripts[key]):
            raise RuntimeError(_exhausted_message(key, position + 1, request, len(scripts[key])))
        return scripts[key][position]

    def _finish(self, sent: int, raw: object) -> AIMessage:
        if isinstance(raw, BaseException):
            raise raw
        if not isinstance(raw, str | AIMessage):
            raise TypeError(
                f"ScriptedChatModel policy returned {type(raw).__name__}; return a str or an "
                "AIMessage (see text(), tool_call() and tool_calls())."
            )
        reply = AIMessage(content=raw) if isinstance(raw, str) else raw
        reply = self._with_ids(reply)
        said = count_tokens_approximately([reply])
        usage = UsageMetadata(input_tokens=sent, output_tokens=said, total_tokens=sent + said)
        return reply.model_copy(update={"usage_metadata": usage})

    def _with_ids(self, reply: AIMessage) -> AIMessage:
        """Give each tool call without an id the next `call_<n>` of the shared record.

        Invalid calls (arguments that are not JSON) are numbered after the valid ones, as a
        provider numbers every call it sends.
        """
        if not reply.tool_calls and not reply.invalid_tool_calls:
            return reply
        calls: list[ToolCall] = []
        invalid: list[InvalidToolCall] = []
        with self._record.lock:
            for call in reply.tool_calls:
                self._record.tool_calls_sent += 1
                calls.append({**call, "id": call["id"] or f"call_{self._record.tool_calls_sent}"})
            for bad in reply.invalid_tool_calls:
                self._record.tool_calls_sent += 1
                invalid.append({**bad, "id": bad["id"] or f"call_{self._record.tool_calls_sent}"})
        return reply.model_copy(update={"tool_calls": calls, "invalid_tool_calls": invalid})


@contextmanager
def _calling(metadata: dict[str, Any] | None, tags: list[str] | None) -> Iterator[None]:
    token = _CALL_CONTEXT.set((dict(metadata or {}), list(tags or [])))
    try:
        yield
    finally:
        _CALL_CONTEXT.reset(token)


def _check_policy(script: object, policy: Policy | None) -> Policy | None:
    if (script is None) == (policy is None):
        which = "both" if policy is not None else "neither"
        raise ValueError(
            f"ScriptedChatModel takes exactly one of script= and policy=, got {which}. Pass "
            "script=[...] with the replies in call order, or policy=fn to compute each reply."
        )
    if policy is not None and not callable(policy):
        raise TypeError(
            f"ScriptedChatModel policy must be a function (messages, tool_names) -> reply, "
            f"got {type(policy).__name__}."
        )
    return policy


def _check_script(script: object) -> dict[str | None, list[ScriptItem]] | None:
    if script is None:
        return None
    pairs = script.items() if isinstance(script, dict) else [(None, script)]
    return {key if key is None else str(key): _check_items(items, key) for key, items in pairs}


def _check_items(items: object, key: str | None) -> list[ScriptItem]:
    where = "script" if key is None else f"script[{key!r}]"
    if isinstance(items, str | AIMessage | BaseException) or not isinstance(items, Sequence):
        raise TypeError(
            f"ScriptedChatModel {where} must be a list of replies, got {type(items).__name__}; "
            "wrap a single reply in a list."
        )
    for index, item in enumerate(items):
        if not isinstance(item, str | AIMessage | BaseException):
            raise TypeError(
                f"ScriptedChatModel {where}[{index}] is {item!r}; use a str, an AIMessage "
                "(text(), tool_call(), tool_calls()) or an exception instance to raise."
            )
    return list(items)


def _build_request(
    copies: list[BaseMessage], run_manager: Any, tools: list[dict[str, Any]]
) -> ScriptedRequest:
    context = _CALL_CONTEXT.get()
    if context is None and run_manager is not None:  # a direct _agenerate(run_manager=...) call
        context = (run_manager.metadata, run_manager.tags)
    metadata, tags = context or ({}, [])
    return ScriptedRequest(
        messages=copies,
        tool_names=[tool.get("function", tool).get("name", "") for tool in tools],
        tools=[dict(tool) for tool in tools],
        metadata={k: v for k, v in metadata.items() if not k.startswith(("ls_", "lc_"))},
        tags=list(tags),
    )


def _script_key(
    scripts: dict[str | None, list[ScriptItem]], metadata: dict[str, Any]
) -> str | None:
    """Pick the list for a call: purpose first, then step, then the "*" fallback."""
    if None in scripts:
        return None
    purpose, step = metadata.get("picoflow_purpose"), metadata.get("picoflow_step")
    for candidate in (purpose, step, "*"):
        if candidate in scripts:
            return str(candidate)
    keys = ", ".join(repr(key) for key in scripts) or "none"
    raise RuntimeError(
        f"ScriptedChatModel has no replies for step {step!r} (purpose {purpose!r}); the "
        f"script's keys are {keys}. Add a list under {step or purpose or '*'!r} or a '*' "
        "fallback."
    )


def _exhausted_message(key: str | None, call: int, request: ScriptedRequest, scripted: int) -> str:
    step = request.metadata.get("picoflow_step")
    if key is None:
        where = f" in step {step!r}" if step else ""
    else:
        where = f" for {key!r}" + (f" (step {step!r})" if step and step != key else "")
    humans = [m for m in request.messages if isinstance(m, HumanMessage)]
    last = f"Last human message: {humans[-1].text!r}." if humans else "No human message was sent."
    return (
        f"ScriptedChatModel ran out of replies{where}: {scripted} "
        f"{'was' if scripted == 1 else 'were'} scripted and call {call} has none left. "
        f"{last} Add a reply to the script."
    )


def _split_reply(reply: AIMessage) -> list[AIMessageChunk]:
    """Cut a reply into the chunks a provider would stream.

    Text goes out in word-sized pieces, then each tool call as a chunk with its name and id
    and the first half of its JSON arguments, then a chunk with the rest; usage rides on the
    last chunk. Aggregating the chunks gives back `reply`'s content and tool calls. Invalid
    tool calls stream their raw argument text, so they arrive invalid again, as a provider's
    malformed JSON would.
    """
    chunks: list[AIMessageChunk] = []
    if isinstance(reply.content, str):
        chunks += [AIMessageChunk(content=p, id=reply.id) for p in _WORD.findall(reply.content)]
    else:
        chunks.append(AIMessageChunk(content=reply.content, id=reply.id))
    raw: list[tuple[str | None, str, str | None]]
    raw = [(c["name"], json.dumps(c["args"]), c["id"]) for c in reply.tool_calls]
    raw += [(c["name"], c["args"] or "", c["id"]) for c in reply.invalid_tool_calls]
    for index, (name, args, call_id) in enumerate(raw):
        half = len(args) // 2
        head = tool_call_chunk(name=name, args=args[:half], id=call_id, index=index)
        tail = tool_call_chunk(name=None, args=args[half:], id=None, index=index)
        chunks += [
            AIMessageChunk(content="", id=reply.id, tool_call_chunks=[c]) for c in (head, tail)
        ]
    last = AIMessageChunk(
        content="" if isinstance(reply.content, str) else [],
        id=reply.id,
        usage_metadata=reply.usage_metadata,
        response_metadata=dict(reply.response_metadata),
        additional_kwargs=dict(reply.additional_kwargs),
        chunk_position="last",
    )
    return [*chunks, last]


async def run_scenario(engine: Any, scenario: Any, **options: Any) -> Any:
    """Run a scenario file or dict on `engine`; the report's `.passed` says if it held (X4).

    See `picoflow.scenarios.run_scenario`, which this forwards to (`judge=`, `user=`).
    """
    from picoflow.scenarios import (
        run_scenario as run,  # scenarios import the engine; testing does not
    )

    return await run(engine, scenario, **options)
