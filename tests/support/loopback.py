"""The shared part of the loopback provider servers: an HTTP thread on 127.0.0.1 and a brain.

Each wire protocol (`openai_server.py`, `anthropic_server.py`, `ollama_server.py`,
`gemini_server.py`) subclasses `LoopbackServer` and
implements `route(path, body)`: it turns the request into LangChain messages, asks the brain (a
`ScriptedChatModel`) and renders the reply in its own format, as one JSON body or as a list of
stream frames. The server keeps every raw JSON body in `server.requests` and every request's
headers in `server.headers`, so tests can check what the real client sent.
"""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage

from picoflow.testing import ScriptedChatModel


def echo(messages: list[BaseMessage], tool_names: list[str]) -> str:
    """The default brain's policy: repeat the last message."""
    return f"echo: {messages[-1].text}"


@dataclass
class Reply:
    """What a route answers: a JSON body, or stream frames (already encoded) of a media type."""

    status: int = 200
    body: Any = None
    frames: list[bytes] = field(default_factory=list)
    media_type: str = "application/json"


class LoopbackServer:
    """A provider endpoint on 127.0.0.1 and a free port, run in a thread."""

    thread_name = "loopback-server"

    def __init__(self, brain: ScriptedChatModel | None = None) -> None:
        self.brain = brain or ScriptedChatModel(policy=echo)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=self.thread_name)
        self._thread.daemon = True

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>`, the server's root."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> LoopbackServer:
        self._thread.start()  # the socket already listens (bound in __init__)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def route(self, path: str, body: dict[str, Any]) -> Reply:
        """Answer one POST; subclasses speak their provider's protocol here."""
        raise NotImplementedError

    def ask(
        self, messages: list[BaseMessage], tools: list[dict[str, Any]] | None, stream: bool
    ) -> AIMessage | list[AIMessageChunk]:
        """The brain's reply: one message, or its chunks when the client asked for a stream."""
        model = self.brain.bind_tools(tools) if tools else self.brain

        async def reply() -> AIMessage | list[AIMessageChunk]:
            if stream:
                return [chunk async for chunk in model.astream(messages)]
            return await model.ainvoke(messages)

        return asyncio.run(reply())


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.0: one request per connection, so a stream ends when the connection closes."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        app: LoopbackServer = self.server.app  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"{}")
        app.requests.append(body)
        app.headers.append({key.lower(): value for key, value in self.headers.items()})
        reply = app.route(self.path, body)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.media_type)
        if reply.frames:
            self.send_header("Cache-Control", "no-cache")
            self.end_headers()
            for frame in reply.frames:
                self.wfile.write(frame)
            return
        data = json.dumps(reply.body).encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""
