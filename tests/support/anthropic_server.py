"""A loopback server speaking Anthropic's Messages API, so tests drive the real `ChatAnthropic`.

It serves `POST /v1/messages`: the request's `system`, its `messages` (text, `tool_use` and
`tool_result` blocks) and its `tools` become LangChain messages and bound tools for the brain (a
`ScriptedChatModel`); the reply comes back as a message with `text` and `tool_use` blocks, or,
with `stream: true`, as the server-sent events Anthropic sends (`message_start`,
`content_block_start`/`_delta`/`_stop` with `text_delta` and `input_json_delta`,
`message_delta` carrying the stop reason and usage, `message_stop`).

    with AnthropicServer(brain) as server:
        model = ChatAnthropic(model="claude-x", base_url=server.url, api_key="k", max_retries=0)
"""

from __future__ import annotations

import itertools
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


class AnthropicServer(LoopbackServer):
    """`/v1/messages` on 127.0.0.1; pass `server.url` as ChatAnthropic's `base_url`."""

    thread_name = "anthropic-server"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._ids = itertools.count(1)

    def route(self, path: str, body: dict[str, Any]) -> Reply:
        """Answer a Messages API request."""
        if path.rstrip("/") != "/v1/messages":
            error = {"type": "not_found_error", "message": f"no route {path}"}
            return Reply(404, {"type": "error", "error": error})
        tools = [_openai_tool(tool) for tool in body.get("tools", [])]
        try:
            reply = self.ask(_messages(body), tools or None, bool(body.get("stream")))
        except Exception as exc:  # the brain's failure becomes the provider's error response
            error = {"type": "api_error", "message": str(exc)}
            return Reply(500, {"type": "error", "error": error})
        head = {"id": f"msg_{next(self._ids):04d}", "type": "message", "role": "assistant"}
        head["model"] = body.get("model", "claude-fake")
        if isinstance(reply, list):
            events = _events(head, reply)
            frames = [f"event: {e['type']}\ndata: {json.dumps(e)}\n\n".encode() for e in events]
            return Reply(frames=frames, media_type="text/event-stream")
        return Reply(body=_message(head, reply))


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(block.get("text", "") for block in content)


def _messages(body: dict[str, Any]) -> list[BaseMessage]:
    """The request as LangChain messages: system first, then user and assistant turns."""
    system = body.get("system") or []
    # One system message per block: ChatAnthropic sends consecutive system messages as blocks.
    blocks = [system] if isinstance(system, str) else [block.get("text", "") for block in system]
    messages: list[BaseMessage] = [SystemMessage(text) for text in blocks]
    for message in body["messages"]:
        content = message["content"]
        if message["role"] == "assistant":
            messages.append(_assistant(content))
        elif isinstance(content, str):
            messages.append(HumanMessage(content))
        else:
            messages += [_user_block(block) for block in content]
    return messages


def _assistant(content: Any) -> AIMessage:
    if isinstance(content, str):
        return AIMessage(content)
    calls = [
        {"name": block["name"], "args": block["input"], "id": block["id"]}
        for block in content
        if block["type"] == "tool_use"
    ]
    text = "".join(block["text"] for block in content if block["type"] == "text")
    return AIMessage(text, tool_calls=calls)


def _user_block(block: dict[str, Any]) -> BaseMessage:
    if block["type"] == "tool_result":
        status = "error" if block.get("is_error") else "success"
        content = _text(block.get("content", ""))
        return ToolMessage(content, tool_call_id=block["tool_use_id"], status=status)
    return HumanMessage(block["text"])


def _openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic tool definition in the OpenAI form the brain's `bind_tools` takes."""
    function = {"name": tool["name"], "description": tool.get("description", "")}
    function["parameters"] = tool["input_schema"]
    return {"type": "function", "function": function}


def _usage(reply: AIMessage | AIMessageChunk | None) -> dict[str, int]:
    usage = reply.usage_metadata if reply is not None else None
    if not usage:
        return {"input_tokens": 0, "output_tokens": 0}
    return {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}


def _message(head: dict[str, Any], reply: AIMessage) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
    content += [
        {"type": "tool_use", "id": call["id"], "name": call["name"], "input": call["args"]}
        for call in reply.tool_calls
    ]
    stop = "tool_use" if reply.tool_calls else "end_turn"
    tail = {"stop_reason": stop, "stop_sequence": None, "usage": _usage(reply)}
    return {**head, "content": content, **tail}


def _events(head: dict[str, Any], chunks: list[AIMessageChunk]) -> list[dict[str, Any]]:
    """The reply as Anthropic's stream: one content block for the text, one per tool call."""
    last = next((c for c in reversed(chunks) if c.usage_metadata), None)
    usage = _usage(last)
    start = {**head, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {"input_tokens": usage["input_tokens"], "output_tokens": 0}
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
    texts = [str(chunk.content) for chunk in chunks if chunk.content]
    blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    if texts:
        deltas = [{"type": "text_delta", "text": piece} for piece in texts]
        blocks.append(({"type": "text", "text": ""}, deltas))
    for _, pieces in itertools.groupby(_tool_pieces(chunks), key=lambda p: p["index"]):
        pieces_list = list(pieces)
        first = pieces_list[0]
        block = {"type": "tool_use", "id": first["id"], "name": first["name"], "input": {}}
        deltas = [{"type": "input_json_delta", "partial_json": p["args"]} for p in pieces_list]
        blocks.append((block, deltas))
    for index, (block, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    stop = "tool_use" if any(b["type"] == "tool_use" for b, _ in blocks) else "end_turn"
    delta = {"stop_reason": stop, "stop_sequence": None}
    # As Anthropic does today, message_delta carries the cumulative usage, input included.
    events.append({"type": "message_delta", "delta": delta, "usage": usage})
    events.append({"type": "message_stop"})
    return events


def _tool_pieces(chunks: list[AIMessageChunk]) -> list[dict[str, Any]]:
    return [dict(piece) for chunk in chunks for piece in chunk.tool_call_chunks]
