"""Flows and helpers the server tests share: a chat flow with a markdown table, a live server."""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

import httpx
import uvicorn
from langchain_core.messages import BaseMessage, HumanMessage

from picoflow import EndStep, Flow, FlowEngine, Step, direct, go, tool
from picoflow.server import create_app
from picoflow.stores import MemoryStore
from picoflow.testing import ScriptedChatModel, tool_call

TABLE = "| a | b |\n|---|---|\n| 1 | 2 |"
GREETING = "Hello there <b>friend</b>, ask me for a **table**."
NUMBERED = "Options, numbered as shown:\n2. second\n3. `third`"


class GreetStep(Step):
    @tool
    def open_tables(self) -> Any:
        """Show the user a table when they ask for one."""
        return go(TableStep)

    @tool
    def end_chat(self) -> Any:
        """End the conversation when the user says goodbye."""
        return go(EndStep)


class TableStep(Step):
    @tool
    def show_table(self) -> Any:
        """Show the table."""
        return direct(TABLE).with_content_type("text/markdown")

    @tool
    def end_chat(self) -> Any:
        """End the conversation when the user says goodbye."""
        return go(EndStep)


def last_human(messages: list[BaseMessage]) -> str:
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    return humans[-1].text if humans else ""


def chat_policy(messages: list[BaseMessage], tool_names: list[str]) -> Any:
    """The LLM of ChatFlow: greets, shows a table when asked, ends on "bye"."""
    said = last_human(messages).lower()
    if not tool_names:
        return "Goodbye!"
    if "bye" in said:
        return tool_call("end_chat")
    if "show_table" in tool_names:
        return tool_call("show_table")
    if "table" in said:
        return tool_call("open_tables")
    if "list" in said:
        return NUMBERED
    return GREETING


def chat_flow(model: ScriptedChatModel | None = None, name: str = "ChatFlow") -> type[Flow]:
    """A flow class with its own model (the policy above unless one is given)."""
    bound = model or ScriptedChatModel(policy=chat_policy)

    class ChatFlow(Flow):
        def config_model(self) -> Any:
            return bound

        def define_steps(self) -> list[Step]:
            return [GreetStep(self), TableStep(self), EndStep(self).use_memory("end")]

    ChatFlow.name = name
    return ChatFlow


def hotel_model(today: date) -> ScriptedChatModel:
    """The LLM's part of a HotelFlow booking (demo/hotel), from the step's tools and the words.

    Explore: two nights from `today` + 2 days. Present: compare 1 and 2, or book number 1.
    Compare: a price table of 1 and 2, or back to the list to book. End: a closing line.
    """
    stay = [{"start": str(today + timedelta(days=2)), "end": str(today + timedelta(days=4))}]

    def policy(messages: list[BaseMessage], tool_names: list[str]) -> Any:
        if model.requests[-1].metadata.get("picoflow_purpose") == "summary":
            return "The guest wants two nights in Portland."
        said = last_human(messages).lower()
        came_back = messages[-1].type == "tool"
        if "capture_choices" in tool_names:
            if "nights" in said and not came_back:
                return tool_call("capture_choices", dates=stay)
            return "When would you like to stay, and for how many nights?"
        if "generate_comparison" in tool_names:
            if "book" in said:
                return tool_call("resume_booking")
            return tool_call("generate_comparison", hotels=["1", "2"], feature="price")
        if "chosen_hotel" in tool_names:
            if "book" in said and not came_back:
                return tool_call("chosen_hotel", hotel="1")
            if "compare" in said and not came_back:
                return tool_call("go_compare", hotels=["1", "2"])
            return "Here are the hotels that match; compare them or pick one."
        return "Your stay is booked. Thank you, goodbye!"

    model = ScriptedChatModel(policy=policy)
    return model


def client_for(app: Any, **kwargs: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, **kwargs), base_url="http://test"
    )


def api(*flows: type[Flow], store: Any = None, **options: Any) -> tuple[FlowEngine, Any]:
    engine = FlowEngine(flows=list(flows), store=store or MemoryStore())
    return engine, create_app(engine, **options)


def sse(text: str) -> list[tuple[str, Any]]:
    """Parse a Server-Sent Events body into (event, data) pairs, data decoded from JSON."""
    import json

    events = []
    for frame in text.split("\n\n"):
        if not frame.strip() or frame.startswith(":"):  # a comment (keep-alive): no event
            continue
        fields = dict(line.split(": ", 1) for line in frame.split("\n"))
        events.append((fields["event"], json.loads(fields["data"])))
    return events


@dataclass
class LiveServer:
    """A uvicorn server running `app` in its own thread and event loop."""

    url: str
    loop: asyncio.AbstractEventLoop

    def call(self, coroutine: Coroutine[Any, Any, Any], timeout: float = 10) -> Any:
        """Run a coroutine on the server's loop (where the engine and its store live)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)


@contextmanager
def live_server(app: Any) -> Iterator[LiveServer]:
    """Serve `app` on a free loopback port.

    The socket is bound and listening before uvicorn starts, so a client may connect at once:
    the kernel queues the connection until the server accepts it (no polling for readiness).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", ws="none", http="h11")
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    thread = threading.Thread(
        target=loop.run_until_complete, args=(server.serve(sockets=[sock]),), daemon=True
    )
    thread.start()
    try:
        yield LiveServer(url=f"http://127.0.0.1:{port}", loop=loop)
    finally:
        server.should_exit = True
        thread.join(timeout=15)
        loop.close()
        sock.close()
