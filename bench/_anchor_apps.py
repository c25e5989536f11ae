"""The apps `fair_anchors.py` compares: picoflow and what a user would write instead (issue 39).

Every app answers the same `POST /ai/run` (the body `{"flowName", "message"}`, the session in the
`CHAT_SESSION_ID` header) with the same envelope keys and headers, and every app sends its model
the same requests: the system prompt, the history so far, the user's message; in the tool
scenario, then the model's tool call and the tool's result. `fair_anchors.py` checks both
before it measures anything, so a cheaper anchor cannot be cheaper by doing less.

Targets:
    picoflow-sqlite, picoflow-memory   `create_app` over a one-step flow (SQLiteStore, MemoryStore)
    hand-sqlite, hand-dict             FastAPI + LangChain by hand: the history as one SQLite row
                                       (`messages_to_dict`, JSON, aiosqlite) or in a dict
    langgraph-sqlite, langgraph-memory LangGraph, the same model in one node (plus `ToolNode` in
                                       the tool scenario), `AsyncSqliteSaver` or `InMemorySaver`
    bare                               `_http_servers.bare_app`: no model, no store (information)

Run as a child of `fair_anchors.py` (it binds a free port, prints `PORT <n>`, serves until SIGINT):

    python bench/_anchor_apps.py TARGET --scenario chat|tool --model scripted|agenerate --db PATH

Models (the same class in every app): `scripted` is picoflow's `ScriptedChatModel` with a policy;
`agenerate` is a `BaseChatModel` that overrides only `_agenerate` (and the abstract `_generate`),
as a provider's model does, so each framework takes its production path through LangChain.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Annotated, Any, TypedDict

import uvicorn
from fastapi import FastAPI, Request, Response
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    messages_from_dict,
    messages_to_dict,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool

try:
    import aiosqlite
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    from langgraph.graph import START, StateGraph
    from langgraph.graph.message import add_messages
    from langgraph.prebuilt import ToolNode, tools_condition
except ImportError as missing:  # a clone without the dev extra
    raise SystemExit(
        f"bench/fair_anchors.py needs the dev extra ({missing.name} is missing): "
        ".venv/bin/pip install -e '.[dev]' (langgraph, langgraph-checkpoint-sqlite, aiosqlite)"
    ) from missing

from _http_servers import Body, add_gc_route, bare_app  # noqa: E402  (bench/ is on sys.path when run)

from picoflow import Flow, FlowEngine, Step, tool  # noqa: E402
from picoflow.server import _heap, create_app  # noqa: E402
from picoflow.stores import MemoryStore, SQLiteStore  # noqa: E402
from picoflow.testing import ScriptedChatModel  # noqa: E402

TARGETS = (
    "picoflow-sqlite",
    "picoflow-memory",
    "hand-sqlite",
    "hand-dict",
    "langgraph-sqlite",
    "langgraph-memory",
    "bare",
)
PROMPT = "You are a terse assistant. Acknowledge what the user says."
TOOL_DOC = "Look something up for the user."
STEP = "Chat"  # the envelope's `step`: picoflow's step name, which the anchors answer too


# -- the model: one policy, two classes ------------------------------------------------------


class Recorder:
    """The first `limit` requests a model received, as plain data, for the equivalence check.

    Only the first calls are kept (the check runs before the load), so recording costs one
    comparison per call afterwards and nothing grows.
    """

    def __init__(self, limit: int = 64) -> None:
        self.limit = limit
        self.requests: list[dict[str, Any]] = []

    def note(self, messages: Sequence[BaseMessage], tool_names: list[str]) -> None:
        if len(self.requests) >= self.limit:
            return
        self.requests.append(
            {"tools": tool_names, "messages": [_plain(message) for message in messages]}
        )


def _plain(message: BaseMessage) -> dict[str, Any]:
    """What a provider would be sent: the role, the text, the tool calls and the call answered."""
    plain: dict[str, Any] = {"type": message.type, "content": message.content}
    calls = getattr(message, "tool_calls", None)
    if calls:
        plain["tool_calls"] = [{"name": c["name"], "args": c["args"], "id": c["id"]} for c in calls]
    if message.type == "tool":
        plain["tool_call_id"] = getattr(message, "tool_call_id", None)
    return plain


def make_policy(scenario: str, recorder: Recorder) -> Callable[..., AIMessage]:
    """The answers: chat replies at once; tool asks `lookup` for a user message, then replies."""
    calls = [0]

    def policy(messages: Sequence[BaseMessage], tool_names: list[str]) -> AIMessage:
        recorder.note(messages, tool_names)
        last = messages[-1]
        if scenario == "tool" and last.type == "human" and "lookup" in tool_names:
            calls[0] += 1
            call = {"name": "lookup", "args": {"query": str(last.content)[:30]}}
            return AIMessage("", tool_calls=[{**call, "id": f"call_{calls[0]}"}])
        return AIMessage(f"Noted: {str(last.content)[:40]}")

    return policy


class AgenerateModel(BaseChatModel):
    """Overrides only `_agenerate` (and the abstract `_generate`), like a provider's model.

    Nothing above `_agenerate` is touched, so picoflow's unobserved-call path, `ainvoke` in the
    hand-written app and LangGraph's node all run LangChain's code as with `ChatOpenAI`.
    """

    policy: Any = None

    @property
    def _llm_type(self) -> str:
        return "agenerate-only"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, **kw: Any) -> ChatResult:
        names = [t["function"]["name"] for t in kw.get("tools") or []]
        return ChatResult(generations=[ChatGeneration(message=self.policy(messages, names))])

    async def _agenerate(
        self, messages: list[BaseMessage], stop: Any = None, **kw: Any
    ) -> ChatResult:
        return self._generate(messages, stop, **kw)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


def make_model(kind: str, scenario: str, recorder: Recorder) -> BaseChatModel:
    policy = make_policy(scenario, recorder)
    if kind == "scripted":
        return ScriptedChatModel(policy=policy)
    return AgenerateModel(policy=policy)


def lookup_tool() -> BaseTool:
    """The anchors' tool: the same name, description, argument and result as the flow's."""

    @lc_tool
    def lookup(query: str) -> str:
        """Look something up for the user."""
        return f"result for {query}"

    return lookup


# -- picoflow ------------------------------------------------------------------------------


def picoflow_app(store: str, db: str, model: BaseChatModel, scenario: str) -> FastAPI:
    """`create_app` over a one-step flow; in the tool scenario the step has `lookup`."""

    class Chat(Step):
        def get_prompt(self) -> str:
            return PROMPT

    class ToolChat(Chat):
        @tool
        def lookup(self, query: str) -> str:
            """Look something up for the user."""
            return f"result for {query}"

    ToolChat.__name__ = ToolChat.__qualname__ = STEP  # the same step name in both scenarios
    step = ToolChat if scenario == "tool" else Chat

    class BenchFlow(Flow):
        def config_model(self) -> Any:
            return model

        def define_steps(self) -> list[Step]:
            return [step(self)]

    sessions = MemoryStore() if store == "memory" else SQLiteStore(db)
    return create_app(FlowEngine([BenchFlow], store=sessions), expose_docs=False)


# -- by hand: FastAPI + LangChain ------------------------------------------------------------


def _reply(message: str, session_id: str) -> Response:
    """picoflow's envelope and headers, encoded once."""
    envelope = {
        "success": True,
        "completed": False,
        "message": message,
        "session": session_id,
        "contentType": "text/plain",
        "step": STEP,
    }
    headers = {"CHAT_SESSION_ID": session_id, "chat-session-id": session_id}
    headers["X-Request-ID"] = uuid.uuid4().hex
    return Response(json.dumps(envelope), media_type="application/json", headers=headers)


class SqliteHistory:
    """One row per session: the whole history as JSON (`messages_to_dict`), via aiosqlite."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.db: aiosqlite.Connection | None = None

    async def open(self) -> None:
        self.db = await aiosqlite.connect(self.path)
        await self.db.execute("PRAGMA journal_mode=WAL")
        await self.db.execute("PRAGMA synchronous=NORMAL")  # SQLiteStore's default
        await self.db.execute("CREATE TABLE IF NOT EXISTS chats (id TEXT PRIMARY KEY, body TEXT)")
        await self.db.commit()

    async def close(self) -> None:
        if self.db is not None:
            await self.db.close()

    async def load(self, session_id: str) -> list[BaseMessage]:
        assert self.db is not None
        async with self.db.execute("SELECT body FROM chats WHERE id = ?", (session_id,)) as rows:
            row = await rows.fetchone()
        return messages_from_dict(json.loads(row[0])) if row else []

    async def save(self, session_id: str, messages: list[BaseMessage]) -> None:
        assert self.db is not None
        body = json.dumps(messages_to_dict(messages))
        await self.db.execute(
            "INSERT INTO chats (id, body) VALUES (?, ?) "
            "ON CONFLICT(id) DO UPDATE SET body = excluded.body",
            (session_id, body),
        )
        await self.db.commit()


class DictHistory:
    """The history as live message lists in a dict: nothing stored, nothing encoded."""

    def __init__(self) -> None:
        self.chats: dict[str, list[BaseMessage]] = {}

    async def open(self) -> None:
        pass

    async def close(self) -> None:
        pass

    async def load(self, session_id: str) -> list[BaseMessage]:
        return self.chats.get(session_id, [])

    async def save(self, session_id: str, messages: list[BaseMessage]) -> None:
        self.chats[session_id] = messages


def hand_app(store: str, db: str, model: BaseChatModel, scenario: str) -> FastAPI:
    """What a user writes without a framework: load, one or two `ainvoke`s, save, answer."""
    history = SqliteHistory(db) if store == "sqlite" else DictHistory()
    lookup = lookup_tool()
    bound = model.bind_tools([lookup]) if scenario == "tool" else model

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await history.open()
        yield
        await history.close()

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.post("/ai/run")
    async def run(request: Request) -> Response:
        body = Body.model_validate_json(await request.body())
        session_id = request.headers.get("chat_session_id") or uuid.uuid4().hex
        past = await history.load(session_id)
        system = SystemMessage(PROMPT)
        new: list[BaseMessage] = [HumanMessage(body.message)]
        reply = await bound.ainvoke([system, *past, *new])
        while reply.tool_calls:
            new.append(reply)
            for call in reply.tool_calls:
                new.append(await lookup.ainvoke(call))
            reply = await bound.ainvoke([system, *past, *new])
        new.append(reply)
        await history.save(session_id, [*past, *new])
        return _reply(str(reply.content), session_id)

    return app


# -- LangGraph ---------------------------------------------------------------------------------


class ChatState(TypedDict):
    messages: Annotated[list[BaseMessage], add_messages]


def langgraph_app(store: str, db: str, model: BaseChatModel, scenario: str) -> FastAPI:
    """The same model in one LangGraph node; a `ToolNode` loops back to it in the tool scenario."""
    lookup = lookup_tool()
    bound = model.bind_tools([lookup]) if scenario == "tool" else model

    async def agent(state: ChatState) -> dict[str, Any]:
        return {"messages": [await bound.ainvoke([SystemMessage(PROMPT), *state["messages"]])]}

    builder = StateGraph(ChatState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    if scenario == "tool":
        builder.add_node("tools", ToolNode([lookup]))
        builder.add_conditional_edges("agent", tools_condition)
        builder.add_edge("tools", "agent")
    graphs: dict[str, Any] = {}

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if store == "memory":
            graphs["graph"] = builder.compile(checkpointer=InMemorySaver())
            yield
            return
        async with AsyncSqliteSaver.from_conn_string(db) as saver:
            await saver.setup()
            graphs["graph"] = builder.compile(checkpointer=saver)
            yield

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.post("/ai/run")
    async def run(request: Request) -> Response:
        body = Body.model_validate_json(await request.body())
        session_id = request.headers.get("chat_session_id") or uuid.uuid4().hex
        state = await graphs["graph"].ainvoke(
            {"messages": [HumanMessage(body.message)]},
            {"configurable": {"thread_id": session_id}},
        )
        return _reply(str(state["messages"][-1].content), session_id)

    return app


def build(target: str, db: str, model: BaseChatModel, scenario: str) -> FastAPI:
    """The app for one target (see the module docstring)."""
    if target == "bare":
        return bare_app()
    kind, store = target.split("-")
    makers = {"picoflow": picoflow_app, "hand": hand_app, "langgraph": langgraph_app}
    return makers[kind](store, db, model, scenario)


# -- serving -----------------------------------------------------------------------------------


def serve(args: argparse.Namespace) -> None:
    """Build the app, give it picoflow's GC settings and the bench routes, serve until SIGINT.

    Every target gets `_heap.settle_heap()` before uvicorn starts (picoflow's own lifespan then
    finds it done), `GET /_bench/gc` and `GET /_bench/requests` (what the model was sent first).
    """
    recorder = Recorder()
    model = make_model(args.model, args.scenario, recorder)
    app = build(args.target, args.db, model, args.scenario)

    async def requests() -> list[dict[str, Any]]:
        return recorder.requests

    app.add_api_route("/_bench/requests", requests, methods=["GET"])
    add_gc_route(app)
    _heap.settle_heap()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1024)
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target", choices=TARGETS)
    parser.add_argument("--scenario", choices=("chat", "tool"), default="chat")
    parser.add_argument("--model", choices=("scripted", "agenerate"), default="agenerate")
    parser.add_argument("--db", required=True)
    try:
        serve(parser.parse_args())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
