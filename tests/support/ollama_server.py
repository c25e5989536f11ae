"""A loopback server speaking Ollama's chat API, so tests drive the real `ChatOllama`.

It serves `POST /api/chat`: the request's messages (roles system, user, assistant with
`tool_calls`, tool) and its OpenAI-style `tools` go to the brain (a `ScriptedChatModel`); the
reply comes back as one JSON object, or, as Ollama streams by default, as newline-delimited JSON
objects: text pieces, then a message carrying the whole tool calls (Ollama never splits a call's
arguments), then a final `done: true` object with the token counts
(`prompt_eval_count`, `eval_count`).

    with OllamaServer(brain) as server:
        model = ChatOllama(model="llama3.1", base_url=server.url)
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from support.loopback import LoopbackServer, Reply

CREATED_AT = "2026-01-01T00:00:00.000000Z"  # fixed, so responses are deterministic


class OllamaServer(LoopbackServer):
    """`/api/chat` on 127.0.0.1; pass `server.url` as ChatOllama's `base_url` or OLLAMA_HOST."""

    thread_name = "ollama-server"

    def route(self, path: str, body: dict[str, Any]) -> Reply:
        """Answer a chat request, streamed unless the body says `stream: false`."""
        if path.rstrip("/") != "/api/chat":
            return Reply(404, {"error": f"no route {path}"})
        stream = body.get("stream", True)
        try:
            reply = self.ask(_messages(body["messages"]), body.get("tools") or None, stream)
        except Exception as exc:  # the brain's failure becomes the provider's error response
            return Reply(500, {"error": str(exc)})
        head = {"model": body.get("model", "fake"), "created_at": CREATED_AT}
        if isinstance(reply, list):
            lines = [json.dumps(obj).encode() + b"\n" for obj in _stream(head, reply)]
            return Reply(frames=lines, media_type="application/x-ndjson")
        message = _wire_message(reply.text, reply.tool_calls)
        return Reply(body={**head, "message": message, **_done(reply, reply.tool_calls)})


def _messages(wire: list[dict[str, Any]]) -> list[BaseMessage]:
    """Ollama messages as LangChain ones; a tool result answers the oldest unanswered call."""
    messages: list[BaseMessage] = []
    pending: list[str] = []
    for number, message in enumerate(wire):
        role, content = message["role"], message.get("content") or ""
        if role == "system":
            messages.append(SystemMessage(content))
        elif role == "user":
            messages.append(HumanMessage(content))
        elif role == "assistant":
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": call["function"]["arguments"],
                    "id": call.get("id") or f"call_{number}_{index}",
                }
                for index, call in enumerate(message.get("tool_calls") or [])
            ]
            pending = [call["id"] for call in calls]
            messages.append(AIMessage(content, tool_calls=calls))
        else:
            call_id = message.get("tool_call_id") or pending[0]
            pending = [p for p in pending if p != call_id]
            messages.append(ToolMessage(content, tool_call_id=call_id))
    return messages


def _wire_message(text: str, calls: list[Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"function": {"name": call["name"], "arguments": call["args"]}} for call in calls
        ]
    return message


def _done(reply: AIMessage | AIMessageChunk | None, calls: list[Any]) -> dict[str, Any]:
    usage = reply.usage_metadata if reply is not None else None
    prompt, output = (usage["input_tokens"], usage["output_tokens"]) if usage else (0, 0)
    return {
        "done": True,
        "done_reason": "stop",
        "total_duration": 1000,
        "load_duration": 10,
        "prompt_eval_count": prompt,
        "prompt_eval_duration": 100,
        "eval_count": output,
        "eval_duration": 100,
    }


def _stream(head: dict[str, Any], chunks: list[AIMessageChunk]) -> list[dict[str, Any]]:
    merged: AIMessageChunk | None = None
    objects: list[dict[str, Any]] = []
    for chunk in chunks:
        merged = chunk if merged is None else merged + chunk
        if chunk.content:
            message = _wire_message(str(chunk.content), [])
            objects.append({**head, "message": message, "done": False})
    calls = merged.tool_calls if merged is not None else []
    if calls:
        objects.append({**head, "message": _wire_message("", calls), "done": False})
    last = next((c for c in reversed(chunks) if c.usage_metadata), None)
    objects.append({**head, "message": _wire_message("", []), **_done(last, calls)})
    return objects
