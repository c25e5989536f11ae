"""A loopback server speaking the Gemini API, so tests drive the real `ChatGoogleGenerativeAI`.

It serves `POST /<version>/models/<model>:generateContent` and `:streamGenerateContent?alt=sse`:
the request's `systemInstruction`, its `contents` (roles `user` and `model`; parts `text`,
`functionCall`, `functionResponse`) and its `tools[].functionDeclarations` go to the brain (a
`ScriptedChatModel`); the reply comes back as a candidate whose parts are text and
`functionCall`s, with `usageMetadata`, or streamed as server-sent events, one candidate chunk
per text piece, the calls whole (Gemini never splits a call's arguments), then a last chunk with
the finish reason and the usage.

    with GeminiServer(brain) as server:
        model = ChatGoogleGenerativeAI(model="gemini-x", base_url=server.url, api_key="k")
"""

from __future__ import annotations

import itertools
import json
import re
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

_ROUTE = re.compile(r"^/[^/]+/models/[^/:]+:(generateContent|streamGenerateContent)(\?.*)?$")


class GeminiServer(LoopbackServer):
    """The Gemini `models` endpoints on 127.0.0.1; pass `server.url` as `base_url`."""

    thread_name = "gemini-server"

    def route(self, path: str, body: dict[str, Any]) -> Reply:
        """Answer generateContent, or streamGenerateContent as server-sent events."""
        match = _ROUTE.match(path)
        if match is None:
            error = {"code": 404, "message": f"no route {path}", "status": "NOT_FOUND"}
            return Reply(404, {"error": error})
        stream = match.group(1) == "streamGenerateContent"
        tools = [
            {"type": "function", "function": declaration}
            for tool in body.get("tools", [])
            for declaration in tool.get("functionDeclarations", [])
        ]
        try:
            reply = self.ask(_messages(body), tools or None, stream)
        except Exception as exc:  # the brain's failure becomes the provider's error response
            return Reply(500, {"error": {"code": 500, "message": str(exc), "status": "INTERNAL"}})
        if isinstance(reply, list):
            frames = [f"data: {json.dumps(chunk)}\r\n\r\n".encode() for chunk in _stream(reply)]
            return Reply(frames=frames, media_type="text/event-stream")
        return Reply(body=_response(_parts(reply.text, reply.tool_calls), reply, "STOP"))


def _messages(body: dict[str, Any]) -> list[BaseMessage]:
    """The request as LangChain messages; a function response answers the oldest open call."""
    system = body.get("systemInstruction")
    messages: list[BaseMessage] = []
    if system:  # one system message per part, as the client sent them
        messages += [SystemMessage(part.get("text", "")) for part in system["parts"]]
    ids = (f"call_{n}" for n in itertools.count(1))
    waiting: list[tuple[str, str]] = []  # (id, name) of calls without a response yet
    for content in body["contents"]:
        parts = content.get("parts", [])
        text = "".join(part.get("text", "") for part in parts)
        calls = [
            {
                "name": p["functionCall"]["name"],
                "args": p["functionCall"].get("args", {}),
                "id": p["functionCall"].get("id") or next(ids),
            }
            for p in parts
            if "functionCall" in p
        ]
        responses = [part["functionResponse"] for part in parts if "functionResponse" in part]
        if content.get("role") == "model":
            waiting = [(call["id"], call["name"]) for call in calls]
            messages.append(AIMessage(text, tool_calls=calls))
        elif responses:
            messages += [_tool_message(response, waiting) for response in responses]
        else:
            messages.append(HumanMessage(text))
    return messages


def _tool_message(response: dict[str, Any], waiting: list[tuple[str, str]]) -> ToolMessage:
    call_id = response.get("id") or next(i for i, name in waiting if name == response["name"])
    waiting[:] = [(i, name) for i, name in waiting if i != call_id]
    result = response.get("response", {})
    content = result.get("output", result) if isinstance(result, dict) else result
    return ToolMessage(
        content if isinstance(content, str) else json.dumps(content), tool_call_id=call_id
    )


def _parts(text: str, calls: list[Any]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"text": text}] if text else []
    parts += [{"functionCall": {"name": c["name"], "args": c["args"]}} for c in calls]
    return parts


def _usage(reply: AIMessage | AIMessageChunk | None) -> dict[str, int]:
    usage = reply.usage_metadata if reply is not None else None
    prompt, output = (usage["input_tokens"], usage["output_tokens"]) if usage else (0, 0)
    return {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output,
        "totalTokenCount": prompt + output,
    }


def _response(
    parts: list[dict[str, Any]], usage_from: AIMessage | AIMessageChunk | None, finish: str | None
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    response: dict[str, Any] = {"candidates": [candidate], "modelVersion": "gemini-fake"}
    if usage_from is not None:
        response["usageMetadata"] = _usage(usage_from)
    return response


def _stream(chunks: list[AIMessageChunk]) -> list[dict[str, Any]]:
    merged: AIMessageChunk | None = None
    events: list[dict[str, Any]] = []
    for chunk in chunks:
        merged = chunk if merged is None else merged + chunk
        if chunk.content:
            events.append(_response([{"text": str(chunk.content)}], None, None))
    calls = merged.tool_calls if merged is not None else []
    last = next((c for c in reversed(chunks) if c.usage_metadata), None)
    events.append(_response(_parts("", calls), last, "STOP"))
    return events
