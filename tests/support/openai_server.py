"""A loopback OpenAI-compatible server, so tests can drive the real `ChatOpenAI` offline.

It serves `POST /v1/chat/completions` (and Azure OpenAI's
`/openai/deployments/<name>/chat/completions`) as JSON or as server-sent events (`stream: true`,
honouring `stream_options.include_usage`). What the "LLM" says comes from a brain, a
`ScriptedChatModel`: each request's messages are converted to LangChain messages, the request's
tools are bound, and the brain's reply is rendered back in the OpenAI wire format. The brain
records what it saw, and the server keeps every raw JSON body in `server.requests` (and the
headers of each request, names lower-cased, in `server.headers`).

    brain = ScriptedChatModel(script=[tool_call("get_weather", city="Paris"), "Sunny."])
    with OpenAIServer(brain) as server:
        model = ChatOpenAI(model="fake", base_url=server.base_url, api_key="x", max_retries=0)

Use it from a fixture the same way (`with OpenAIServer() as server: yield server`); assign
`server.brain` to change the script of a long-lived server.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk, convert_to_messages
from langchain_core.messages.ai import UsageMetadata
from langchain_openai import ChatOpenAI

from picoflow.testing import ScriptedChatModel
from support.loopback import LoopbackServer, Reply

CREATED = 1_700_000_000  # a fixed timestamp keeps responses deterministic
# OpenAI's path, and Azure OpenAI's (deployment in the path, api-version in the query).
_CHAT_PATH = re.compile(r"^(/v1|/openai/deployments/[^/?]+)/chat/completions/?(\?.*)?$")


class OpenAIServer(LoopbackServer):
    """A chat.completions endpoint on 127.0.0.1 and a free port, run in a thread."""

    thread_name = "openai-server"

    def __init__(self, brain: ScriptedChatModel | None = None) -> None:
        super().__init__(brain)
        self._ids = itertools.count(1)

    @property
    def base_url(self) -> str:
        """The URL to pass as `ChatOpenAI(base_url=...)` or `OPENAI_BASE_URL`."""
        return f"{self.url}/v1"

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A real `ChatOpenAI` pointed at this server, with no retries."""
        options = {"model": "fake", "api_key": "x", "max_retries": 0, **kwargs}
        return ChatOpenAI(base_url=self.base_url, **options)

    def route(self, path: str, body: dict[str, Any]) -> Reply:
        """Answer chat completions as JSON, or as server-sent events ending in `[DONE]`."""
        if not _CHAT_PATH.match(path):
            return Reply(404, {"error": {"message": f"no route {path}", "type": "404"}})
        status, payload = self.answer(body)
        if isinstance(payload, list):
            frames = [f"data: {json.dumps(chunk)}\n\n".encode() for chunk in payload]
            return Reply(frames=[*frames, b"data: [DONE]\n\n"], media_type="text/event-stream")
        return Reply(status, payload)

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, Any] | list[dict[str, Any]]]:
        """Ask the brain; return a status and a completion, a list of stream chunks or an error."""
        completion_id = f"chatcmpl-{next(self._ids)}"
        messages = convert_to_messages([_from_openai(m) for m in body["messages"]])
        try:
            reply = self.ask(messages, body.get("tools"), bool(body.get("stream")))
        except Exception as exc:  # the brain's failure becomes the provider's error response
            return 500, {"error": {"message": str(exc), "type": "server_error", "code": None}}
        head = {"id": completion_id, "created": CREATED, "model": body.get("model", "fake")}
        if isinstance(reply, list):
            include_usage = (body.get("stream_options") or {}).get("include_usage", False)
            return 200, list(_stream_chunks(head, reply, include_usage))
        return 200, _completion(head, reply)


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
