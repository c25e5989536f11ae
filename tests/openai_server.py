"""A loopback OpenAI-compatible server, so tests can drive the real `ChatOpenAI` offline.

It serves `POST /v1/chat/completions` as JSON or as server-sent events (`stream: true`,
honouring `stream_options.include_usage`). What the "LLM" says comes from a brain, a
`ScriptedChatModel`: each request's messages are converted to LangChain messages, the request's
tools are bound, and the brain's reply is rendered back in the OpenAI wire format. The brain
records what it saw, and the server keeps every raw JSON body in `server.requests`.

    brain = ScriptedChatModel(script=[tool_call("get_weather", city="Paris"), "Sunny."])
    with OpenAIServer(brain) as server:
        model = ChatOpenAI(model="fake", base_url=server.base_url, api_key="x", max_retries=0)

Use it from a fixture the same way (`with OpenAIServer() as server: yield server`); assign
`server.brain` to change the script of a long-lived server.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, convert_to_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_openai import ChatOpenAI

from picoflow.testing import ScriptedChatModel

CREATED = 1_700_000_000  # a fixed timestamp keeps responses deterministic


def echo(messages: list[BaseMessage], tool_names: list[str]) -> str:
    """The default brain's policy: repeat the last message."""
    return f"echo: {messages[-1].text}"


class OpenAIServer:
    """A chat.completions endpoint on 127.0.0.1 and a free port, run in a thread."""

    def __init__(self, brain: ScriptedChatModel | None = None) -> None:
        self.brain = brain or ScriptedChatModel(policy=echo)
        self.requests: list[dict[str, Any]] = []
        self._ids = itertools.count(1)
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.app = self  # type: ignore[attr-defined]
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="openai-server", daemon=True)

    @property
    def base_url(self) -> str:
        """The URL to pass as `ChatOpenAI(base_url=...)` or `OPENAI_BASE_URL`."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A real `ChatOpenAI` pointed at this server, with no retries."""
        options = {"model": "fake", "api_key": "x", "max_retries": 0, **kwargs}
        return ChatOpenAI(base_url=self.base_url, **options)

    def __enter__(self) -> OpenAIServer:
        self._thread.start()
        self._ready.wait()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _serve(self) -> None:
        # The socket already listens (bound in __init__); the event only orders start-up.
        self._ready.set()
        self._httpd.serve_forever()

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """Ask the brain; return a status and a completion, a list of stream chunks or an error."""
        self.requests.append(body)
        completion_id = f"chatcmpl-{next(self._ids)}"
        try:
            reply = asyncio.run(self._ask(body))
        except Exception as exc:  # the brain's failure becomes the provider's error response
            return 500, {"error": {"message": str(exc), "type": "server_error", "code": None}}
        head = {"id": completion_id, "created": CREATED, "model": body.get("model", "fake")}
        if isinstance(reply, list):
            include_usage = (body.get("stream_options") or {}).get("include_usage", False)
            return 200, list(_stream_chunks(head, reply, include_usage))
        return 200, _completion(head, reply)

    async def _ask(self, body: dict[str, Any]) -> AIMessage | list[AIMessageChunk]:
        messages = convert_to_messages([_from_openai(m) for m in body["messages"]])
        tools = body.get("tools")
        model = self.brain.bind_tools(tools) if tools else self.brain
        if body.get("stream"):
            return [chunk async for chunk in model.astream(messages)]
        return await model.ainvoke(messages)


class _Handler(BaseHTTPRequestHandler):
    """HTTP/1.0: one request per connection, so a stream ends when the connection closes."""

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "404"}})
            return
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, payload = self.server.app.answer(body)  # type: ignore[attr-defined]
        if isinstance(payload, list):
            self._send_events(payload)
        else:
            self._send_json(status, payload)

    def _send_json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_events(self, chunks: list[dict[str, Any]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.end_headers()
        for chunk in chunks:
            self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        self.wfile.write(b"data: [DONE]\n\n")

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""


def _from_openai(message: dict[str, Any]) -> dict[str, Any]:
    """Make an OpenAI wire message acceptable to `convert_to_messages` (null content)."""
    return {**message, "content": message.get("content") or ""}


def _usage(usage: UsageMetadata | None) -> dict[str, int]:
    usage = usage or UsageMetadata(input_tokens=0, output_tokens=0, total_tokens=0)
    return {
        "prompt_tokens": usage["input_tokens"],
        "completion_tokens": usage["output_tokens"],
        "total_tokens": usage["total_tokens"],
    }


def _completion(head: dict[str, Any], reply: AIMessage) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    # A brain's invalid calls go out with their raw arguments, as a model's malformed JSON would.
    calls = [(c["id"], c["name"], json.dumps(c["args"])) for c in reply.tool_calls]
    calls += [(c["id"], c["name"], c["args"] or "") for c in reply.invalid_tool_calls]
    if calls:
        message["tool_calls"] = [
            {"id": id_, "type": "function", "function": {"name": name, "arguments": arguments}}
            for id_, name, arguments in calls
        ]
    finish = "tool_calls" if calls else "stop"
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
    return {
        **head,
        "object": "chat.completion",
        "choices": [choice],
        "usage": _usage(reply.usage_metadata),
    }


def _stream_chunks(
    head: dict[str, Any], chunks: list[AIMessageChunk], include_usage: bool
) -> Iterator[dict[str, Any]]:
    """Render the brain's chunks as chat.completion.chunk events, piece for piece."""

    def event(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "object": "chat.completion.chunk", "choices": [choice]}

    yield event({"role": "assistant", "content": ""})
    calls = [piece for chunk in chunks for piece in chunk.tool_call_chunks]
    for chunk in chunks:
        if chunk.content:
            yield event({"content": chunk.content})
        for piece in chunk.tool_call_chunks:
            yield event({"tool_calls": [_tool_delta(piece)]})
    yield event({}, "tool_calls" if calls else "stop")
    usage = next((c.usage_metadata for c in reversed(chunks) if c.usage_metadata), None)
    if include_usage:
        yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": _usage(usage)}


def _tool_delta(piece: Any) -> dict[str, Any]:
    """A tool-call delta: the first piece names the call, later ones only add arguments."""
    function = {"arguments": piece["args"] or ""}
    if piece["name"]:
        function["name"] = piece["name"]
    delta: dict[str, Any] = {"index": piece["index"], "function": function}
    if piece["id"]:
        delta.update(id=piece["id"], type="function")
    return delta
