"""`POST /ai-sdk/{flowName}`: the AI SDK's UI message stream protocol, v1 (G2).

What `useChat` (`@ai-sdk/react`, `ai`'s `DefaultChatTransport`) sends: `{id, messages,
trigger, messageId?}`, each message a UIMessage with `parts`. What it reads: Server-Sent
Events whose data are `UIMessageChunk`s (the `ai` package's type), then `data: [DONE]`, with
the header `x-vercel-ai-ui-message-stream: v1`. The shapes follow `ai` 6's type definitions.

- `id` (the chat id the client made) names the conversation (`_ids`).
- The newest message is the turn when it is the user's; its id is the idempotency key, so a
  retried or regenerated message gets the first reply again instead of a second turn (H5).
- A pending approval is the SDK's own: `tool-input-available` then `tool-approval-request`
  (the part's state becomes `approval-requested`); `addToolApprovalResponse` puts
  `approval-responded` on that part, and the next request, whose newest message is then the
  assistant's, decides it (K3): approved or not, with `reason` as the note.
- Steps and state are data parts with fixed ids (`data-step`, `data-state`), so each update
  replaces the part in the message instead of piling up.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse

from picoflow.engine import StreamEvent, TurnResult
from picoflow.server._errors import ApiError
from picoflow.server._headers import REQUEST_ID_HEADER, request_id_for
from picoflow.server._stream import STREAM_HEADERS
from picoflow.server.protocols._common import (
    RESPONSES,
    Call,
    bound_call,
    check_message,
    decide,
    open_call,
    pumped,
    read_body,
    run_turn_frames,
    snapshot_of,
    tool_results,
)
from picoflow.server.protocols._ids import check_client_id

__all__ = ["ai_sdk_router", "UiMessageStream", "UI_STREAM_HEADER"]

ai_sdk_router = APIRouter()
UI_STREAM_HEADER = {"x-vercel-ai-ui-message-stream": "v1"}
_HINT = (
    'Send what useChat sends: {"id": "<chat id>", "trigger": "submit-message", "messages": '
    '[{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "Hi"}]}]}.'
)
_DONE = "data: [DONE]\n\n"


def _frame(chunk: dict[str, Any]) -> str:
    return f"data: {json.dumps(chunk, ensure_ascii=False, default=str)}\n\n"


class UiMessageStream:
    """One response's chunks: the open text part, the tool calls and the step shown."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self._count = 0
        self._text_id: str | None = None
        self._streamed = False
        self._step: str | None = None
        self._calls: list[tuple[str, Any]] = []
        self._call_ids: list[str] = []

    def _id(self, kind: str) -> str:
        self._count += 1
        return f"{self.message_id}-{kind}{self._count}"

    def started(self) -> list[str]:
        return [_frame({"type": "start", "messageId": self.message_id})]

    def event(self, event: StreamEvent) -> list[str]:
        """The chunks of one engine event (tokens, tools, steps; others have none)."""
        data, kind = event.data, event.kind
        if kind == "token":
            return self._step_part(data.get("step")) + self._text(str(data.get("text", "")))
        if kind == "retract":  # the SDK cannot take text back: say so, start a new part
            retracted = {"type": "data-retract", "data": data, "transient": True}
            return self._close_text() + [_frame(retracted)]
        if kind == "tool_call":
            tool, args = str(data.get("name")), data.get("args")
            return self._step_part(data.get("step")) + self._tool(tool, args, None)
        if kind == "approval_requested":
            tool, args, approval = str(data.get("tool")), data.get("args"), str(data.get("id"))
            return self._step_part(data.get("step")) + self._tool(tool, args, approval)
        if kind == "step_changed":
            return self._step_part(data.get("to"))
        if kind in ("logic_step", "nested_start"):
            return self._step_part(data.get("step"))
        return []

    def _step_part(self, step: Any) -> list[str]:
        if not isinstance(step, str) or step == self._step:
            return []
        before, self._step = self._step, step
        part = {"type": "data-step", "id": "step", "data": {"step": step, "from": before}}
        return [_frame(part)]

    def _text(self, text: str) -> list[str]:
        if not text:
            return []
        frames = []
        if self._text_id is None:
            self._text_id = self._id("text")
            frames.append(_frame({"type": "text-start", "id": self._text_id}))
        self._streamed = True
        return [*frames, _frame({"type": "text-delta", "id": self._text_id, "delta": text})]

    def _close_text(self) -> list[str]:
        if self._text_id is None:
            return []
        ended, self._text_id = self._text_id, None
        return [_frame({"type": "text-end", "id": ended})]

    def _tool(self, name: str, args: Any, approval: str | None) -> list[str]:
        """A tool call; one waiting for a person is also an approval request (its id both)."""
        call_id = approval or self._id("call")
        frames = self._close_text()
        asked = {"type": "tool-input-available", "toolCallId": call_id, "toolName": name}
        frames.append(_frame({**asked, "input": args}))
        if approval is not None:
            request = {"type": "tool-approval-request", "approvalId": approval}
            return [*frames, _frame({**request, "toolCallId": call_id})]
        self._calls.append((name, args))
        self._call_ids.append(call_id)
        return frames

    def resumed(self, approval: dict[str, Any], decision: str) -> list[str]:
        """A decided approval's call: denied now, or its output (if it ran) at the end."""
        if decision == "reject":
            return [_frame({"type": "tool-output-denied", "toolCallId": str(approval["id"])})]
        self._calls.append((str(approval.get("tool")), approval.get("args")))
        self._call_ids.append(str(approval["id"]))
        return []

    def finished(self, result: TurnResult, doc: dict[str, Any] | None) -> list[str]:
        """Outputs, the reply (if none streamed), the state, `finish`, `[DONE]`."""
        frames = self._close_text() + self._outputs(doc)
        if not self._streamed and result.message:
            frames += self._step_part(result.step) + self._text(result.message)
        frames += self._close_text()
        state = {"type": "data-state", "id": "state", "data": snapshot_of(result, doc)}
        frames.append(_frame(state))
        reason = "other" if result.pending_approvals else "stop"
        return [*frames, _frame({"type": "finish", "finishReason": reason}), _DONE]

    def _outputs(self, doc: dict[str, Any] | None) -> list[str]:
        frames = []
        for call_id, output in zip(self._call_ids, tool_results(doc, self._calls), strict=True):
            if output is not None:
                chunk = {"type": "tool-output-available", "toolCallId": call_id}
                frames.append(_frame({**chunk, "output": output}))
        return frames

    def failed(self, error: ApiError, request_id: str) -> list[str]:
        """A transient `data-error` with the code `/ai/run` uses, then the SDK's `error`."""
        detail = {"code": error.code, "status": error.status, "requestId": request_id}
        frames = self._close_text()
        frames.append(_frame({"type": "data-error", "data": detail, "transient": True}))
        return [*frames, _frame({"type": "error", "errorText": error.message}), _DONE]


@ai_sdk_router.post(
    "/ai-sdk/{flow_name}",
    response_class=StreamingResponse,
    summary="Run one turn for the AI SDK's useChat (UI message stream protocol v1)",
    responses={**RESPONSES, 200: {"content": {"text/event-stream": {}}}},
)
async def chat(flow_name: str, request: Request) -> StreamingResponse:
    """A chat request: the newest user message is the turn, or approval answers decide."""
    settings, principal = await open_call(request)
    body = await read_body(request, settings, _HINT)
    messages = body.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise ApiError(
            400, f"`messages` must be a list of UIMessages. {_HINT}", code="invalid_body"
        )
    call = await bound_call(request, settings, principal, flow_name, ("id", body.get("id")))
    newest = messages[-1] if messages else {"id": "opening", "role": "user", "parts": []}
    message_id = check_client_id(newest.get("id"), "messages[-1].id", "invalid_body")
    key = f"{call.client_id}/{message_id}"  # H5: the message's id, within its chat
    frames: AsyncGenerator[str, None]
    if newest.get("role") == "assistant":
        decisions = _approval_answers(newest, call)
        out = UiMessageStream(message_id)  # the answered message goes on
        frames = _resume_frames(call, decisions, out)
    elif newest.get("role") == "user":
        message = _text_of(newest)
        config = body.get("config") if isinstance(body.get("config"), dict) else None
        check_message(call, message, config)
        out = UiMessageStream(f"{message_id}-reply")
        frames = run_turn_frames(call, message, config, key, out)
    else:
        raise ApiError(400, f"The newest message must be the user's. {_HINT}", code="invalid_body")
    headers = {**STREAM_HEADERS, **UI_STREAM_HEADER, REQUEST_ID_HEADER: request_id_for(request)}

    async def keep_as(turn_id: str) -> None:  # O5: what `useChat({resume: true})` reads again
        await call.bindings.point_to_stream(principal, flow_name, call.client_id, turn_id)

    followed = pumped(frames, call, out, keep_as=keep_as)
    return StreamingResponse(followed, media_type="text/event-stream", headers=headers)


def _text_of(message: dict[str, Any]) -> str:
    """The text parts of a UIMessage, joined (files and other parts are not a flow's input)."""
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise ApiError(400, f"A UIMessage needs a list of `parts`. {_HINT}", code="invalid_body")
    texts = [p.get("text") for p in parts if isinstance(p, dict) and p.get("type") == "text"]
    return "".join(t for t in texts if isinstance(t, str))


Decision = tuple[str, str, str | None]  # approval id, decision, note


def _approval_answers(message: dict[str, Any], call: Call) -> list[Decision]:
    """The `approval-responded` tool parts of the assistant's message: the decisions to make."""
    decisions = []
    for part in message.get("parts") or []:
        approval = part.get("approval") if isinstance(part, dict) else None
        if part.get("state") != "approval-responded" or not isinstance(approval, dict):
            continue
        approval_id, reason = approval.get("id"), approval.get("reason")
        if not isinstance(approval_id, str) or not isinstance(reason, str | None):
            raise ApiError(
                400, "An approval needs an `id` and a text `reason`.", code="invalid_body"
            )
        check_message(call, reason or "", None)  # H11
        word = "approve" if approval.get("approved") is True else "reject"
        decisions.append((approval_id, word, reason))
    if not decisions:
        raise ApiError(
            400,
            "The newest message is the assistant's, with no approval answered in it; send "
            "the user's new message last, or answer an approval (addToolApprovalResponse).",
            code="invalid_body",
        )
    return decisions


async def _resume_frames(
    call: Call, decisions: list[Decision], out: UiMessageStream
) -> AsyncGenerator[str, None]:
    """Decide each answered approval (K3); the replies continue the assistant's message."""
    for frame in out.started():
        yield frame
    result: TurnResult | None = None
    try:
        for approval_id, decision, note in decisions:
            if result is not None:
                for frame in out._text(result.message) + out._close_text():
                    yield frame
            result, asked = await decide(call, approval_id, decision, None, note)
            for frame in out.resumed(asked, decision):
                yield frame
    except ApiError as error:
        for frame in out.failed(error, request_id_for(call.request)):
            yield frame
        return
    assert result is not None and result.session_id is not None
    doc = await call.settings.engine.get_session(result.session_id, owner=call.principal)
    for frame in out.finished(result, doc):
        yield frame
