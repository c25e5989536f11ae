"""Replies to put in a script: text, tool calls, structured replies and passing errors.

They build the `AIMessage`s (and the exceptions) a real provider would send, so a script reads
like the conversation it stands for; `ScriptedChatModel` assigns the ids when it sends them.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage, ToolCall
from pydantic import BaseModel

__all__ = ["structured", "text", "tool_call", "tool_calls", "transient_error"]


def text(content: str) -> AIMessage:
    """Build a plain text reply."""
    return AIMessage(content=content)


def tool_call(name: str, args: dict[str, Any] | None = None, /, **kwargs: Any) -> AIMessage:
    """Build a reply that calls one tool: `tool_call("search", city="Paris")`.

    Arguments may be given as a dict, as keywords, or both (keywords win). The id is left
    empty; the model assigns `call_<n>` when it sends the reply.
    """
    return tool_calls((name, {**(args or {}), **kwargs}))


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str = "") -> AIMessage:
    """Build a reply with parallel tool calls: `tool_calls(("a", {}), ("b", {"x": 1}))`."""
    if not calls:
        raise ValueError(
            "tool_calls() needs at least one (name, args) pair; use text() for a reply "
            "without tool calls."
        )
    built: list[ToolCall] = []
    for call in calls:
        if not (isinstance(call, tuple) and len(call) == 2 and isinstance(call[1], dict)):
            raise TypeError(
                f"tool_calls() takes (name, args) pairs with args a dict, got {call!r}; "
                'write tool_calls(("search", {"city": "Paris"})).'
            )
        built.append(ToolCall(name=call[0], args=dict(call[1]), id=None, type="tool_call"))
    return AIMessage(content=content, tool_calls=built)


def structured(value: BaseModel | dict[str, Any]) -> AIMessage:
    """Build a structured reply for a step with `output_schema` (V4).

    It is what a provider sends: a call of the `final_result` tool with the object as its
    arguments. Pass the pydantic object, or a dict (also an invalid one, to script a reply
    that fails validation).
    """
    if isinstance(value, BaseModel):
        args = value.model_dump(mode="json")
    elif isinstance(value, dict):
        args = dict(value)
    else:
        raise TypeError(
            f"structured() takes a pydantic object or a dict, got {type(value).__name__}."
        )
    return tool_call("final_result", args)


_TRANSIENT_KINDS = ("rate_limit", "server_error", "timeout", "connection")


def transient_error(kind: str = "rate_limit", *, retry_after: float | None = None) -> Exception:
    """An exception as langchain-openai raises it for a passing failure, to put in a script.

    `kind` is "rate_limit" (HTTP 429), "server_error" (HTTP 500), "timeout" or "connection";
    `retry_after` sets the response's `Retry-After` header (seconds). Give the engine a `sleep`
    that records delays (`FlowEngine(..., sleep=...)`) so the retries wait for nothing.
    """
    import openai

    http = _openai_http()
    request = http.Request("POST", "https://api.openai.com/v1/chat/completions")
    if kind == "timeout":
        return openai.APITimeoutError(request=request)
    if kind == "connection":
        return openai.APIConnectionError(request=request)
    if kind not in _TRANSIENT_KINDS:
        raise ValueError(
            f"transient_error() kind must be one of {', '.join(_TRANSIENT_KINDS)}, got {kind!r}."
        )
    headers = {} if retry_after is None else {"retry-after": f"{retry_after:g}"}
    status, error = (
        (429, openai.RateLimitError)
        if kind == "rate_limit"
        else (
            500,
            openai.InternalServerError,
        )
    )
    response = http.Response(status, headers=headers, request=request)
    text = "Rate limit reached" if status == 429 else "The server had an error"
    return error(text, response=response, body=None)


def _openai_http() -> Any:
    """The HTTP library the installed openai builds its errors from (httpx, or its fork)."""
    import importlib

    import openai

    module = importlib.import_module(openai.APIStatusError.__module__)
    return getattr(module, "httpx2", None) or importlib.import_module("httpx")
